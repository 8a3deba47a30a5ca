/*===- attnrt.h - the Attn runtime C API ------------------------*- C -*-===*
 *
 * Loads a model compiled by attn-compile (libmodel.so, see model_abi.h) with
 * its safetensors weights, or a Hugging Face model folder compiled on first
 * use, and runs generation: sessions own a KV cache, prefill/decode produce
 * logits, samplers pick tokens.
 *
 * Conventions:
 *  - Functions that can fail take `char *error, size_t error_size`; on
 *    failure they write a one-line, NUL-terminated message there (truncated
 *    to fit; error may be NULL). Nothing is ever written to a global.
 *  - A model is immutable after load and may be shared by any number of
 *    threads; each session and each sampler must be used by one thread at a
 *    time. Sessions of the same model may run concurrently.
 *  - Every buffer a session or sampler needs is allocated (and its pages
 *    touched) at creation; prefill, decode and sampling do not allocate.
 *
 * Minimal use (see docs/runtime.md for a complete example):
 *   attnrt_model *m = attnrt_model_load("libmodel.so", "model.safetensors",
 *                                       err, sizeof err);
 *   (or, compiling a model folder on first use and caching the library:
 *    attnrt_model_load_dir("path/to/model", NULL, err, sizeof err);)
 *   attnrt_session *s = attnrt_session_create(m, err, sizeof err);
 *   attnrt_prefill(s, prompt, n, logits, 0, err, sizeof err);
 *   int32_t next = attnrt_sample(sampler, logits, attnrt_model_vocab_size(m));
 *   attnrt_decode(s, next, logits, err, sizeof err);
 *===----------------------------------------------------------------------===*/

#ifndef ATTNRT_ATTNRT_H
#define ATTNRT_ATTNRT_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define ATTNRT_API __attribute__((visibility("default")))
#else
#define ATTNRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of the functions returning int. */
enum {
  ATTNRT_OK = 0,
  ATTNRT_ERROR_ARGUMENT = 1, /* a null pointer, n < 1, bad parameters */
  ATTNRT_ERROR_TOKEN = 2,    /* a token id outside [0, vocab_size) */
  ATTNRT_ERROR_POSITION = 3, /* the context (max_seq positions) is full */
  ATTNRT_ERROR_MODEL = 4,    /* the compiled code returned an error */
  ATTNRT_ERROR_IO = 5,       /* a file could not be read or written */
  ATTNRT_ERROR_MEMORY = 6,   /* an allocation failed */
};

/*===-------------------------------- Models ----------------------------===*/

typedef struct attnrt_model attnrt_model;

/* The version of the loaded libattnrt, e.g. "0.2.0" (<attnrt/version.h> has
 * the version of the headers as ATTNRT_VERSION and its parts). A library that
 * attn-compile made for another model ABI is refused at load with a message
 * naming the attn-compile version that made it and this one. */
ATTNRT_API const char *attnrt_version(void);

/* Loads a compiled model and its weights. dlopens library_path, reads and
 * checks its manifest (abi_version, fields), maps the weights read-only and
 * validates every manifest weight against them (presence, shape, dtype,
 * finite values) before anything runs. weights_path is a .safetensors file,
 * a shard index (model.safetensors.index.json: the shards it names, in its
 * folder), or a folder holding model.safetensors or
 * model.safetensors.index.json. F16/BF16 weights are widened to f32 once,
 * here. Returns NULL with a message naming the file, the tensor and what is
 * wrong on any failure. */
ATTNRT_API attnrt_model *attnrt_model_load(const char *library_path,
                                           const char *weights_path,
                                           char *error, size_t error_size);

/* A tensor-parallel group (docs/scale-out.md): the processes that each run
 * one slice of a model compiled with attn-compile --tensor-parallel N and
 * exchange partial results. attnrt_mpi_init (<attnrt/mpi.h>, library
 * attnrt-mpi) makes one over MPI; any other transport can fill it in. The
 * hooks are called with the same arguments in the same order on every rank
 * and do not return errors: a collective that cannot complete (a rank died
 * or stopped answering) must end the process with a message. */
typedef struct attnrt_communicator {
  int32_t rank; /* 0 .. size - 1 */
  int32_t size;
  void *context; /* passed back to the hooks */
  /* data[0, n) summed elementwise over the ranks, in place, on every rank. */
  void (*all_reduce_sum)(void *context, float *data, int64_t n);
  /* out[0, size * n): every rank's data[0, n), rank-major, on every rank. */
  void (*all_gather)(void *context, const float *data, int64_t n, float *out);
  /* bytes[0, n) of rank `root` copied to every rank. */
  void (*broadcast)(void *context, void *bytes, int64_t n, int32_t root);
} attnrt_communicator;

/* attnrt_model_load for a library compiled with --tensor-parallel N: this
 * process is rank comm->rank of comm->size == N ranks, and maps and packs
 * only its slice of each weight (the checkpoint is the whole model's). A
 * library of one rank with comm NULL is attnrt_model_load. Fails naming the
 * mismatch when the group's size is not the library's N. comm must outlive
 * the model. */
ATTNRT_API attnrt_model *attnrt_model_load_parallel(const char *library_path,
                                                    const char *weights_path,
                                                    const attnrt_communicator *comm,
                                                    char *error, size_t error_size);

/* Unloads the model (unmaps the weights, dlcloses the library). Every session
 * of the model must have been freed. NULL is allowed. */
ATTNRT_API void attnrt_model_free(attnrt_model *model);

/* Manifest values. */
typedef struct {
  const char *architecture; /* "gpt2", "llama", ... (owned by the model) */
  int64_t vocab_size;
  int64_t hidden_size; /* 0 when the manifest omits a dimension */
  int64_t num_layers;
  int64_t num_heads;
  int64_t num_kv_heads;
  int64_t head_dim;
  int64_t intermediate_size;
  int64_t max_seq;        /* positions 0 .. max_seq - 1 */
  int64_t kv_cache_bytes; /* per session */
  int64_t num_weights;
  const char *weight_format; /* how the packed weights are stored: "f32", "bf16",
                                "q8_0" or "q4_0" (attn-compile --weight-format) */
  const char *kv_format;     /* how the KV cache stores keys and values: "f32",
                                "bf16" or "f16" (attn-compile --kv-format) */
  const char *attn_version;  /* the attn-compile version that made the library,
                                e.g. "0.2.0"; "" when it predates the field */
  int32_t can_inspect;       /* 1 when attnrt_inspect and attnrt_unembed work
                                (attn-compile --inspect), else 0 */
  int32_t tensor_parallel;   /* ranks the model is split over (1: whole);
                                the dimensions above are the whole model's,
                                kv_cache_bytes this rank's */
  int32_t rank;              /* this process's rank, 0 .. tensor_parallel - 1 */
  int64_t num_experts;       /* a mixture of experts: the router chooses */
  int64_t experts_per_token; /* experts_per_token of num_experts for each
                                token; 0 and 0 for a dense model */
} attnrt_model_info;

ATTNRT_API const attnrt_model_info *
attnrt_model_get_info(const attnrt_model *model);
ATTNRT_API int64_t attnrt_model_vocab_size(const attnrt_model *model);
ATTNRT_API int64_t attnrt_model_max_seq(const attnrt_model *model);
ATTNRT_API const char *attnrt_model_architecture(const attnrt_model *model);
/* attnrt_model_get_info(model)->weight_format; "" for NULL. */
ATTNRT_API const char *attnrt_model_weight_format(const attnrt_model *model);
/* The library's manifest JSON, verbatim. */
ATTNRT_API const char *attnrt_model_manifest(const attnrt_model *model);

/* Warnings produced by the load (tensors in the file that no manifest weight
 * uses), one per line, each ending with '\n'; "" when there are none. */
ATTNRT_API const char *attnrt_model_warnings(const attnrt_model *model);

/* Calls the library's attn_model_set_num_threads(n) when it exports one and
 * returns 1; returns 0 (and does nothing) otherwise. The setting belongs to
 * the loaded library, so it affects every model loaded from the same file. */
ATTNRT_API int attnrt_model_set_num_threads(attnrt_model *model, int32_t n);

/*===----------------------------- Model folders ------------------------===*/

/* A Hugging Face model folder (config.json, model.safetensors or shards)
 * loaded in one call: the library is compiled by attn-compile on first use
 * and cached; later loads reuse it while nothing it depends on changed. */

/* Receives one progress line (no newline) at a time, e.g. "compiling ...". */
typedef void (*attnrt_log_fn)(void *user, const char *line);

typedef struct {
  int64_t context;       /* KV cache positions; 0 = min(the config's, 4096) */
  const char *compiler;  /* attn-compile to run; NULL: $ATTN_COMPILE, else attn-compile
                            next to the running executable, else ../bin/attn-compile
                            relative to libattnrt.so, else PATH */
  const char *cache_dir; /* NULL: MODEL_DIR/.attn when that folder is writable, else
                            $XDG_CACHE_HOME/attn (default ~/.cache/attn) */
  attnrt_log_fn log;     /* progress lines ("compiling ..."), may be NULL */
  void *log_user;
  const char *weight_format; /* how projections are stored: NULL or "f32", "bf16",
                                "q8_0" or "q4_0" (attn-compile --weight-format; part
                                of the cache key); NULL for a GGUF file: what its
                                tensor types call for (docs/gguf.md) */
  const char *kv_format;     /* how the KV cache stores keys and values: NULL or
                                "f32", "bf16" or "f16" (attn-compile --kv-format;
                                part of the cache key) */
  int inspect;               /* nonzero: a library with the inspection entry
                                points (attn-compile --inspect; part of the
                                cache key), for attnrt_inspect and
                                attnrt_unembed */
  const char *head_format;   /* the output projection's (and a tied token
                                embedding's) format when not weight_format's:
                                NULL, "f32", "bf16", "q8_0" or "q4_0"
                                (attn-compile --head-format); NULL for a GGUF
                                file: what its output tensor's type calls for */
} attnrt_load_options;

/* Every field 0 / NULL. */
ATTNRT_API attnrt_load_options attnrt_load_default_options(void);

/* Loads model_dir: finds its library in the cache, or compiles it there
 * (spawning `attn-compile MODEL_DIR -o TMP --quiet --max-seq N
 * [--weight-format F] [--head-format F] [--kv-format F] [--inspect]`, no
 * shell),
 * then loads it and the folder's weights as attnrt_model_load does
 * (model.safetensors, else model.safetensors.index.json and its shards).
 * model_dir may also be a GGUF file (a name ending in ".gguf"): its metadata
 * stands for config.json (architectures llama, qwen2, qwen3, qwen3moe, gpt2,
 * gemma, gemma2, gemma3, phi3), its tensors
 * are dequantized to f32 and renamed as Hugging Face names them, and the
 * cache folder's default is the file's folder (docs/gguf.md).
 * The cache key is the bytes of config.json, the context, the host CPU
 * (/proc/cpuinfo's model name and flags), a hash of the attn-compile
 * executable and the runtime's model ABI version; a library is used only
 * when its sidecar holds exactly this key, and rebuilt otherwise (and once
 * more when a cached library does not load). Folder permission bits are
 * honoured even for root: a read-only model folder is never written.
 * options may be NULL (the defaults). Fails with one line naming what
 * failed: no compiler, attn-compile's own error line, an unwritable cache,
 * the weights. */
ATTNRT_API attnrt_model *attnrt_model_load_dir(const char *model_dir,
    const attnrt_load_options *options, char *error, size_t error_size);

/* attnrt_model_load_dir for one rank of a tensor-parallel group: with comm
 * of size N > 1 the library is compiled with --tensor-parallel N (part of
 * the cache key) and loaded as attnrt_model_load_parallel does; comm NULL
 * or of size 1 is attnrt_model_load_dir. Every rank compiles (or finds) the
 * same library; concurrent first loads of one folder share one build. */
ATTNRT_API attnrt_model *attnrt_model_load_dir_parallel(const char *model_dir,
    const attnrt_load_options *options, const attnrt_communicator *comm,
    char *error, size_t error_size);

/* The library a model was loaded from, and whether this load compiled it
 * (ran attn-compile: 0 for attnrt_model_load and for a cache hit). */
ATTNRT_API const char *attnrt_model_library_path(const attnrt_model *model);
ATTNRT_API int attnrt_model_was_compiled(const attnrt_model *model);

/*===------------------------------- Sessions ---------------------------===*/

typedef struct attnrt_session attnrt_session;

/* A generation context: owns a KV cache of manifest.kv_cache.bytes, zeroed
 * and page-touched here. Starts at position 0. */
ATTNRT_API attnrt_session *attnrt_session_create(const attnrt_model *model,
                                                 char *error,
                                                 size_t error_size);
ATTNRT_API void attnrt_session_free(attnrt_session *session);
/* n sessions whose KV caches lie in one buffer, so that attnrt_decode_batch
 * runs them as one batch (a server's slots). Each is an ordinary session
 * otherwise, freed with attnrt_session_free (the buffer with the last).
 * Writes them to sessions[0, n). */
ATTNRT_API int attnrt_session_create_group(const attnrt_model *model, int64_t n,
                                           attnrt_session **sessions, char *error,
                                           size_t error_size);
/* Back to position 0 (the cache is logically emptied; nothing is freed). */
ATTNRT_API void attnrt_session_reset(attnrt_session *session);
/* The number of positions filled so far (the next token's position). */
ATTNRT_API int64_t attnrt_session_position(const attnrt_session *session);

/* Runs tokens[0, n) at positions [position, position + n) and advances the
 * position by n. logits receives n x vocab_size floats (one row per token)
 * when all_logits != 0, else vocab_size floats for the last token. Token ids
 * and the context limit are checked before the compiled code runs; on error
 * the session is unchanged. */
ATTNRT_API int attnrt_prefill(attnrt_session *session, const int32_t *tokens,
                              int64_t n, float *logits, int all_logits,
                              char *error, size_t error_size);

/* One token at the current position; logits receives vocab_size floats. */
ATTNRT_API int attnrt_decode(attnrt_session *session, int32_t token,
                             float *logits, char *error, size_t error_size);

/* One decode step of n distinct sessions of one model together (a server's
 * continuous batch): sessions[i] runs tokens[i] at its own position and
 * advances by one; logits receives n x vocab_size floats, row i for
 * sessions[i]. Every session, token and position is checked first (errors
 * name the index): on error no session changes. The sessions' positions
 * may differ. Sessions of one group (attnrt_session_create_group) run as
 * one batch: each projection is one matrix product over the n rows, which
 * reads the weights once for all of them; other sessions run one by one. */
ATTNRT_API int attnrt_decode_batch(attnrt_session *const *sessions,
                                   const int32_t *tokens, int64_t n,
                                   float *logits, char *error,
                                   size_t error_size);

/*===------------------------------ Inspection --------------------------===*/

/* With a library compiled for inspection (attnrt_load_options.inspect,
 * attn-compile --inspect; attnrt_model_info.can_inspect): runs tokens[0, n)
 * from position 0 (the session restarts there and ends at position n, ready
 * to decode on) and writes, for each pointer that is not NULL:
 *   attention  [num_layers, num_heads, n, n]: row i of a head is the softmax
 *              weights query i gave keys 0..n-1 (0 after i, and outside a
 *              sliding window), from the q and k the model attends with;
 *   residual   [num_layers + 1, n, hidden_size]: the input of the first layer
 *              (embeddings, positions, embedding norm), then each layer's
 *              output (before the final norm);
 *   final_norm [n, hidden_size]: the final norm of the last layer's output;
 *   logits     [n, vocab_size]: every position's, as attnrt_prefill writes.
 * The buffers it needs for NULL ones are allocated for the call. Errors as
 * attnrt_prefill's, and ATTNRT_ERROR_ARGUMENT naming the option when the
 * library cannot inspect. */
ATTNRT_API int attnrt_inspect(attnrt_session *session, const int32_t *tokens,
                              int64_t n, float *attention, float *residual,
                              float *final_norm, float *logits, char *error,
                              size_t error_size);

/* attnrt_inspect that also writes, for a mixture of experts
 * (attnrt_model_info.num_experts > 0), each layer's routing, where not NULL:
 *   experts        [num_layers, n, experts_per_token]: the experts the
 *                  router chose for each token, best first (-1 in a dense
 *                  layer, e.g. Qwen3-MoE's mlp_only_layers);
 *   expert_weights [num_layers, n, experts_per_token]: the weights their
 *                  outputs were summed with (0 in a dense layer).
 * A dense model has no routing: ATTNRT_ERROR_ARGUMENT if either is given. */
ATTNRT_API int attnrt_inspect_routing(attnrt_session *session, const int32_t *tokens,
                                      int64_t n, float *attention, float *residual,
                                      float *final_norm, float *logits, int32_t *experts,
                                      float *expert_weights, char *error,
                                      size_t error_size);

/* The logit lens: hidden [n, hidden_size] (e.g. a layer's residual stream
 * rows) through the final norm and the output head into logits
 * [n, vocab_size]. Needs an inspection library as attnrt_inspect; the
 * session's position does not change. */
ATTNRT_API int attnrt_unembed(attnrt_session *session, const float *hidden,
                              int64_t n, float *logits, char *error,
                              size_t error_size);

/*===------------------------------- Sampling ---------------------------===*/

typedef struct {
  float temperature; /* <= 0: greedy (argmax, lowest index on ties) */
  int32_t top_k;     /* keep the k most likely tokens; 0 = all */
  float top_p;       /* keep the smallest set with mass >= top_p; (0, 1] */
  uint64_t seed;
} attnrt_sampler_params;

/* Greedy, top_k 0, top_p 1, seed 0. */
ATTNRT_API attnrt_sampler_params attnrt_sampler_default_params(void);

typedef struct attnrt_sampler attnrt_sampler;

/* A sampler for logits rows of up to max_vocab entries: holds the random
 * state (xoshiro256** seeded through splitmix64, so a seed draws the same
 * tokens on every platform) and its scratch buffers. Fails on temperature
 * < 0 or NaN, top_k < 0, top_p outside (0, 1], max_vocab < 1. */
ATTNRT_API attnrt_sampler *
attnrt_sampler_create(const attnrt_sampler_params *params, int64_t max_vocab,
                      char *error, size_t error_size);
ATTNRT_API void attnrt_sampler_free(attnrt_sampler *sampler);

/* Picks a token from one row of logits: temperature, then top-k, then top-p,
 * then a draw. NaN logits count as -inf and are never picked. Returns -1 when
 * vocab is outside [1, max_vocab] or every logit is NaN. */
ATTNRT_API int32_t attnrt_sample(attnrt_sampler *sampler, const float *logits,
                                 int64_t vocab);

/* Convenience: prefills the prompt at the session's position, then samples
 * n_generate tokens into out, feeding each back with a decode (so the session
 * ends n_prompt + n_generate positions further). Checks the context up front.
 * Uses a logits row owned by the session. */
ATTNRT_API int attnrt_generate(attnrt_session *session, attnrt_sampler *sampler,
                               const int32_t *prompt, int64_t n_prompt,
                               int32_t *out, int64_t n_generate, char *error,
                               size_t error_size);

/*===------------------------------ Tokenizers --------------------------===*/

/* A Hugging Face tokenizer: tokenizer.json (the BPE model in its GPT-2
 * byte-level and SentencePiece forms, added tokens, normalizer,
 * pre-tokenizer, post-processor and decoder), with tokenizer_config.json
 * (bos_token, eos_token, add_bos_token, add_eos_token,
 * clean_up_tokenization_spaces) and generation_config.json (eos_token_id)
 * when present. Immutable after load: any number of threads may share it.
 * See docs/runtime.md for what is supported. */
typedef struct attnrt_tokenizer attnrt_tokenizer;

/* Loads the tokenizer files of a model folder. Any unsupported component
 * type, malformed file or inconsistent vocabulary is an error naming the
 * file and what is wrong. */
ATTNRT_API attnrt_tokenizer *attnrt_tokenizer_load(const char *model_dir,
                                                   char *error,
                                                   size_t error_size);
ATTNRT_API void attnrt_tokenizer_free(attnrt_tokenizer *tokenizer);

enum {
  /* Add the post-processor's tokens (BOS, EOS): add_special_tokens=True. */
  ATTNRT_TOKENIZE_ADD_SPECIAL = 1,
  /* Match special tokens written in the text ("<|endoftext|>" becomes its
   * id, as Hugging Face does); without it they are plain text. */
  ATTNRT_TOKENIZE_PARSE_SPECIAL = 2,
  /* What transformers' tokenizer(text) does. */
  ATTNRT_TOKENIZE_DEFAULT = 3,
};

/* Encodes text[0, length) (UTF-8; invalid bytes are an error naming their
 * offset). Sets *n_tokens to the number of ids and writes the first
 * min(*n_tokens, max_tokens) of them to tokens (which may be NULL when
 * max_tokens is 0): a call with too small a buffer tells the size. */
ATTNRT_API int attnrt_tokenize(const attnrt_tokenizer *tokenizer,
                               const char *text, size_t length, int flags,
                               int32_t *tokens, int64_t max_tokens,
                               int64_t *n_tokens, char *error,
                               size_t error_size);

/* Decodes tokens[0, n) to text, as Hugging Face's decode (skip_special
 * drops special added tokens). Sets *length to the text's length in bytes
 * and writes min(*length, text_size - 1) bytes and a NUL to text (which may
 * be NULL when text_size is 0). An id the tokenizer does not have is an
 * error. */
ATTNRT_API int attnrt_detokenize(const attnrt_tokenizer *tokenizer,
                                 const int32_t *tokens, int64_t n,
                                 int skip_special, char *text,
                                 size_t text_size, size_t *length,
                                 char *error, size_t error_size);

/* One past the largest token id (the model vocabulary and added tokens). */
ATTNRT_API int64_t attnrt_tokenizer_vocab_size(const attnrt_tokenizer *tokenizer);
/* The BOS token (tokenizer_config.json's bos_token), or -1. */
ATTNRT_API int32_t attnrt_tokenizer_bos(const attnrt_tokenizer *tokenizer);
/* The tokens that end generation: generation_config.json's eos_token_id (a
 * number or a list), else tokenizer_config.json's eos_token. Writes up to
 * max ids and returns how many there are. */
ATTNRT_API int64_t attnrt_tokenizer_eos(const attnrt_tokenizer *tokenizer,
                                        int32_t *ids, int64_t max);
ATTNRT_API int attnrt_tokenizer_is_eos(const attnrt_tokenizer *tokenizer,
                                       int32_t token);
/* The token string of an id (a vocabulary piece such as "\u0120the" or
 * "<0x0A>", or an added token's content), owned by the tokenizer; NULL for
 * an id it does not have. */
ATTNRT_API const char *attnrt_tokenizer_piece(const attnrt_tokenizer *tokenizer,
                                              int32_t token);

/* Streaming decoding: feed generated tokens one at a time and print what
 * each returns. Text is returned only once it is complete UTF-8 (a character
 * split across byte tokens appears whole with its last byte) and with the
 * spacing the whole sequence would decode to. One per generation stream;
 * not thread-safe. */
typedef struct attnrt_detokenizer attnrt_detokenizer;

ATTNRT_API attnrt_detokenizer *
attnrt_detokenizer_create(const attnrt_tokenizer *tokenizer, int skip_special,
                          char *error, size_t error_size);
ATTNRT_API void attnrt_detokenizer_free(attnrt_detokenizer *detokenizer);
/* Feeds one token. Returns the new text (NUL-terminated, *length bytes,
 * possibly empty; owned by the detokenizer and valid until its next call),
 * or NULL with an error for an id the tokenizer does not have. */
ATTNRT_API const char *attnrt_detokenizer_step(attnrt_detokenizer *detokenizer,
                                               int32_t token, size_t *length,
                                               char *error, size_t error_size);
/* Returns what is still held back at the end of the stream (an incomplete
 * UTF-8 sequence becomes U+FFFD, as Hugging Face decodes it) and starts a
 * new stream. */
ATTNRT_API const char *attnrt_detokenizer_flush(attnrt_detokenizer *detokenizer,
                                                size_t *length, char *error,
                                                size_t error_size);

/*===---------------------------- Chat templates ------------------------===*/

/* A model's chat template: the Jinja `chat_template` of tokenizer_config.json
 * (Hugging Face's apply_chat_template), interpreted by the runtime with
 * jinja2's semantics as transformers configures it (trim_blocks and
 * lstrip_blocks on). The supported subset is what real templates use
 * (docs/chat-templates.md lists it); anything else is an error at load time
 * naming the construct and its line ("chat template line 3: unsupported
 * filter 'wordwrap'"), even in a branch no conversation reaches.
 * Immutable after load: any number of threads may share it. */
typedef struct attnrt_chat_template attnrt_chat_template;

/* MODEL_DIR/chat_template.jinja when present (transformers prefers it), else
 * MODEL_DIR/tokenizer_config.json's chat_template (a string, or the
 * "default" entry of a list of {"name", "template"}); with tokenizer_config
 * .json's bos_token, eos_token, unk_token and pad_token (strings or
 * {"content": ...}). NULL with an error naming the file when there is no
 * template or it does not parse. */
ATTNRT_API attnrt_chat_template *
attnrt_chat_template_load(const char *model_dir, char *error, size_t error_size);
/* A template from source text; bos_token / eos_token may be NULL (""). */
ATTNRT_API attnrt_chat_template *
attnrt_chat_template_parse(const char *source, const char *bos_token,
                           const char *eos_token, char *error,
                           size_t error_size);
/* NULL is allowed. */
ATTNRT_API void attnrt_chat_template_free(attnrt_chat_template *chat_template);

typedef struct {
  const char *role;    /* "system", "user", "assistant", ... (UTF-8) */
  const char *content; /* UTF-8; NULL is Python's None (a tool-call turn) */
} attnrt_chat_message;

/* Renders messages[0, n) as apply_chat_template(messages, tokenize=False,
 * add_generation_prompt) does (each message a dict {"role", "content"};
 * `tools` and `documents` are None): sets *length to the text's length in
 * bytes and writes min(*length, text_size - 1) bytes and a NUL to text (which
 * may be NULL when text_size is 0), as attnrt_detokenize. Fails with
 * ATTNRT_ERROR_ARGUMENT and "chat template line N: raise_exception: MESSAGE"
 * when the template rejects the conversation, "chat template line N: ..."
 * for a type error or a render limit (output, steps, nesting: a template
 * never hangs), or naming a message that is not valid UTF-8. */
ATTNRT_API int attnrt_chat_template_apply(const attnrt_chat_template *chat_template,
                                          const attnrt_chat_message *messages,
                                          int64_t n, int add_generation_prompt,
                                          char *text, size_t text_size,
                                          size_t *length, char *error,
                                          size_t error_size);

/* The same with the conversation as JSON, as transformers'
 * apply_chat_template(messages, tools=, documents=, add_generation_prompt=,
 * **kwargs) takes it. messages_json: a list of message objects: "role" (a
 * string), "content" (a string, null, or a list of parts such as
 * {"type": "text", "text": ...}), "tool_calls" ([{"type": "function",
 * "function": {"name": ..., "arguments": an object or a JSON string}}]),
 * and any other key (reasoning_content, name, tool_call_id, ...), each
 * passed to the template as is, keys in the order written. options_json
 * (NULL or "" for {}): an object of "add_generation_prompt" (a boolean,
 * default false), "tools" and "documents" (lists of objects, or null: the
 * default), and any other key passed to the template as a variable (a kwarg
 * such as "enable_thinking": false). Bad JSON or a wrong type fails with
 * ATTNRT_ERROR_ARGUMENT naming the field ("messages[2].role: expected a
 * string, got a number"); template errors as attnrt_chat_template_apply. */
ATTNRT_API int attnrt_chat_template_apply_json(
    const attnrt_chat_template *chat_template, const char *messages_json,
    const char *options_json, char *text, size_t text_size, size_t *length,
    char *error, size_t error_size);

/*===------------------------------ .npy files --------------------------===*/

/* Writes a C-order float32 array as .npy (format 1.0, '<f4', header padded
 * to 64 bytes as numpy does). */
ATTNRT_API int attnrt_npy_write_f32(const char *path, const float *data,
                                    int32_t ndim, const int64_t *shape,
                                    char *error, size_t error_size);

/* The same for int32 ('<i4'), e.g. token or expert ids. */
ATTNRT_API int attnrt_npy_write_i32(const char *path, const int32_t *data,
                                    int32_t ndim, const int64_t *shape,
                                    char *error, size_t error_size);

/* Reads a '<f4' C-order .npy file (format 1.x to 3.x) of at most max_ndim
 * dimensions. On success *data is a malloc'ed array to free with
 * attnrt_free, and shape[0, *ndim) holds the dimensions. */
ATTNRT_API int attnrt_npy_read_f32(const char *path, float **data,
                                   int64_t *shape, int32_t max_ndim,
                                   int32_t *ndim, char *error,
                                   size_t error_size);

ATTNRT_API void attnrt_free(void *pointer);

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_ATTNRT_H */
