/* The C example of docs/runtime.md, built and run by the unit tests:
 * load a model, prefill a prompt, then sample and decode 16 tokens. */
#include <attnrt/attnrt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s libmodel.so model.safetensors\n", argv[0]);
    return 2;
  }
  char err[512];
  attnrt_model *model = attnrt_model_load(argv[1], argv[2], err, sizeof err);
  if (!model) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  fputs(attnrt_model_warnings(model), stderr);
  int64_t vocab = attnrt_model_vocab_size(model);
  /* Temperature, top-k, top-p, seed. */
  attnrt_sampler_params params = {0.8f, 40, 0.95f, 42};
  attnrt_sampler *sampler =
      attnrt_sampler_create(&params, vocab, err, sizeof err);
  attnrt_session *session = attnrt_session_create(model, err, sizeof err);
  float *logits = malloc(vocab * sizeof(float));
  int32_t prompt[] = {1, 2, 3};
  int rc = sampler && session && logits ? ATTNRT_OK : ATTNRT_ERROR_MEMORY;
  if (rc == ATTNRT_OK)
    rc = attnrt_prefill(session, prompt, 3, logits, 0, err, sizeof err);
  for (int i = 0; rc == ATTNRT_OK && i < 16; ++i) {
    int32_t token = attnrt_sample(sampler, logits, vocab);
    printf("%d%c", token, i == 15 ? '\n' : ' ');
    rc = attnrt_decode(session, token, logits, err, sizeof err);
  }
  if (rc != ATTNRT_OK)
    fprintf(stderr, "%s\n", err);
  free(logits);
  attnrt_session_free(session);
  attnrt_sampler_free(sampler);
  attnrt_model_free(model);
  return rc == ATTNRT_OK ? 0 : 1;
}
