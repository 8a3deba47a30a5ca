/* The C example of docs/runtime.md, built and run by the unit tests: text
 * in, text out. Loads a Hugging Face model folder (compiled on first use),
 * encodes the prompt with its tokenizer, and streams up to 48 sampled
 * tokens as text, stopping at the end-of-sequence token. */
#include <attnrt/attnrt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL_DIR PROMPT\n", argv[0]);
    return 2;
  }
  char err[512];
  attnrt_load_options options = attnrt_load_default_options();
  attnrt_model *model = attnrt_model_load_dir(argv[1], &options, err, sizeof err);
  attnrt_tokenizer *tok = model ? attnrt_tokenizer_load(argv[1], err, sizeof err) : NULL;
  if (!tok) {
    fprintf(stderr, "%s\n", err);
    attnrt_model_free(model);
    return 1;
  }
  int64_t vocab = attnrt_model_vocab_size(model);
  int32_t prompt[256];
  int64_t n = 0;
  int rc = attnrt_tokenize(tok, argv[2], strlen(argv[2]), ATTNRT_TOKENIZE_DEFAULT,
                           prompt, 256, &n, err, sizeof err);
  if (rc == ATTNRT_OK && (n < 1 || n > 256)) {
    snprintf(err, sizeof err, "the prompt is %lld tokens, not 1 to 256", (long long)n);
    rc = ATTNRT_ERROR_ARGUMENT;
  }

  attnrt_sampler_params params = {0.8f, 40, 0.95f, 42}; /* T, top-k, top-p, seed */
  attnrt_sampler *sampler = attnrt_sampler_create(&params, vocab, err, sizeof err);
  attnrt_session *session = attnrt_session_create(model, err, sizeof err);
  attnrt_detokenizer *stream = attnrt_detokenizer_create(tok, 1, err, sizeof err);
  float *logits = malloc(vocab * sizeof(float));
  if (rc == ATTNRT_OK && !(sampler && session && stream && logits))
    rc = ATTNRT_ERROR_MEMORY;
  /* The stream continues the prompt: feed it the prompt's tokens first. */
  for (int64_t i = 0; rc == ATTNRT_OK && i < n; ++i)
    attnrt_detokenizer_step(stream, prompt[i], NULL, err, sizeof err);
  if (rc == ATTNRT_OK) {
    fputs(argv[2], stdout);
    rc = attnrt_prefill(session, prompt, n, logits, 0, err, sizeof err);
  }
  for (int i = 0; rc == ATTNRT_OK && i < 48; ++i) {
    int32_t token = attnrt_sample(sampler, logits, vocab);
    if (attnrt_tokenizer_is_eos(tok, token))
      break;
    const char *piece = attnrt_detokenizer_step(stream, token, NULL, err, sizeof err);
    if (!piece) {
      rc = ATTNRT_ERROR_TOKEN;
      break;
    }
    fputs(piece, stdout); /* printed as it comes */
    fflush(stdout);
    rc = attnrt_decode(session, token, logits, err, sizeof err);
  }
  if (rc == ATTNRT_OK)
    printf("%s\n", attnrt_detokenizer_flush(stream, NULL, err, sizeof err));
  else
    fprintf(stderr, "%s\n", err);
  free(logits);
  attnrt_detokenizer_free(stream);
  attnrt_session_free(session);
  attnrt_sampler_free(sampler);
  attnrt_tokenizer_free(tok);
  attnrt_model_free(model);
  return rc == ATTNRT_OK ? 0 : 1;
}
