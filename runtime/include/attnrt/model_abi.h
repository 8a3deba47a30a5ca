/*===- model_abi.h - the C ABI of a library built by attn-compile -*- C -*-===*
 *
 * The contract between attn-compile (which emits these symbols) and the
 * runtime (which dlopens the library and calls them). Plain C, no MLIR.
 *
 * A compiled model exports:
 *
 *   const char *attn_model_manifest(void);
 *     A NUL-terminated JSON document describing the model (schema below).
 *
 *   int32_t attn_model_pack(float *const *table, int32_t j);
 *                                                   (when "packed" is set)
 *     Called at load time once per manifest packed buffer j. table[i] for
 *     i < #weights points at the f32 data of manifest weight i (row-major,
 *     the shape the manifest states); table[#weights + j] points at the
 *     buffer the caller allocated for packed buffer j ("bytes" long, 64-byte
 *     aligned), which this call fills from the weights its "sources" list
 *     (e.g. projections in the blocked layout the kernels stream). Once
 *     every buffer a weight is a source of is packed, the caller may
 *     release the weight if its "used_at_run_time" is false. Returns
 *     ATTN_MODEL_ERROR_ARGUMENT for j out of range.
 *
 *   int32_t attn_model_prefill(const int32_t *tokens, int64_t n, int64_t pos,
 *                              const float *const *table, float *kv_cache,
 *                              float *logits, int32_t all_logits);
 *     Runs tokens[0, n) at positions [pos, pos + n): appends their keys and
 *     values to kv_cache and writes logits. With all_logits != 0, logits is
 *     [n, vocab_size] (one row per token); otherwise [1, vocab_size] for the
 *     last token only. `table` is the table above after packing; only the
 *     weights used at run time and the packed buffers are read.
 *
 *   int32_t attn_model_decode(int32_t token, int64_t pos,
 *                             const float *const *table, float *kv_cache,
 *                             float *logits);
 *     One token at position pos; logits is [1, vocab_size].
 *
 *   void attn_model_set_num_threads(int32_t n);            (optional symbol)
 *     The number of threads compiled code may use (default: all cores).
 *
 *   void attn_model_set_allocator(void *(*alloc)(uint64_t bytes),
 *                                 void (*release)(void *));  (optional symbol)
 *     Where compiled code gets its temporary buffers (malloc semantics:
 *     16-byte aligned; release(NULL) is never called). Until set, malloc and
 *     free. The runtime installs a per-session cache, so that after the
 *     first call of a shape no page is freshly touched and nothing reaches
 *     malloc. Either hook may be called from the thread that called
 *     prefill/decode or from the library's worker threads.
 *
 *   void attn_model_set_collectives(const attn_model_collectives *c);
 *                                   (a library of attn-compile --tensor-parallel N)
 *     The tensor-parallel group this process is rank c->rank of (c->size
 *     must equal the manifest's "tensor_parallel"). Called once, before
 *     attn_model_pack: packing reads this rank's slice of each weight, and
 *     the entry points call c->all_reduce_sum after every projection whose
 *     input features are split and c->all_gather for the logits. The
 *     pointer must stay valid while the library is loaded. The hooks do not
 *     return errors: a collective that cannot complete ends the process
 *     (the runtime's communicator reports it and aborts the group).
 *
 *   int32_t attn_model_decode_batch(const int32_t *tokens,
 *                                   const int64_t *positions,
 *                                   const int64_t *slots, int64_t n,
 *                                   const float *const *table,
 *                                   float *kv_pool, int64_t pool_slots,
 *                                   float *logits);      (optional symbol)
 *     One decode step of n sequences at once: tokens[i] at positions[i] of
 *     the sequence whose KV cache is slot slots[i] of kv_pool, pool_slots
 *     caches of manifest.kv_cache.bytes laid out one after another (the
 *     slots distinct). The projections run over the n rows together (one
 *     matrix product reads the weights once for all), attention per row
 *     over its own cache; logits is [n, vocab_size]. Returns
 *     ATTN_MODEL_ERROR_POSITION for a position outside [0, max_seq) or a
 *     slot outside [0, pool_slots), ATTN_MODEL_ERROR_TOKEN for a bad token.
 *
 *   int32_t attn_model_inspect(const int32_t *tokens, int64_t n,
 *                              const float *const *table, float *kv_cache,
 *                              float *attention, float *residual,
 *                              float *final_norm, int32_t *experts,
 *                              float *expert_weights, float *logits);
 *                                   (optional: attn-compile --inspect)
 *     attn_model_prefill of tokens[0, n) at positions [0, n) with every
 *     row's logits, [n, vocab_size], that also writes what it computed on
 *     the way: attention [num_layers, num_heads, n, n], row i of head h
 *     being the softmax weights query i gave keys 0..n-1 (0 for the keys it
 *     does not see: after it, or outside a sliding window); residual
 *     [num_layers + 1, n, hidden_size], the input of the first layer (the
 *     embeddings, with positions and embedding norm where the model has
 *     them) and then each layer's output; final_norm [n, hidden_size], the
 *     final norm of the last (the output head's input). The attention
 *     weights come from the q and k the layers use, by the same scoring.
 *     A mixture of experts (manifest num_experts) also writes each layer's
 *     routing: experts [num_layers, n, experts_per_token], the experts the
 *     router chose for each token, best first, and expert_weights of the
 *     same shape, the weights it gave them (-1 and 0 in a dense layer);
 *     other models ignore both pointers.
 *
 *   int32_t attn_model_unembed(const float *hidden, int64_t n,
 *                              const float *const *table, float *logits);
 *                                   (optional: attn-compile --inspect)
 *     The final norm and output head of hidden[n, hidden_size] into
 *     logits[n, vocab_size] (the logit lens of a residual stream row).
 *
 * The entry points return ATTN_MODEL_OK, or an error code without touching
 * kv_cache or logits when the arguments are out of range (the runtime checks
 * them first and reports them by name; this is a second line of defence).
 *
 * The KV cache is one buffer of manifest.kv_cache.bytes bytes that the
 * caller allocates (float-aligned) and keeps between calls; its elements are
 * of manifest.kv_cache.format (f32, or 2-byte bf16 / f16 although the
 * parameter says float *) and its layout is private to the library. Rows at
 * positions >= pos + n are never read by a call.
 *
 * Compiled code is reentrant: calls on different KV caches may run
 * concurrently with the same weights.
 *
 * Manifest schema (abi_version 3):
 * {
 *   "abi_version": 3,
 *   "attn_version": "0.2.0",             // optional: the attn-compile that made it
 *   "attn_git_commit": "0b552c3abcd1",   // optional: its commit, from a checkout
 *   "architecture": "gpt2" | "llama",
 *   "vocab_size": V, "hidden_size": D, "num_layers": L, "num_heads": H,
 *   "num_kv_heads": G, "head_dim": HD, "intermediate_size": F,
 *   "max_seq": S,                        // positions 0 .. S-1
 *   "weight_format": "f32" | "bf16" | "q8_0" | "q4_0",  // optional, default f32:
 *                                        // how the packed buffers store weights
 *   "target": {"cpu": "znver5",          // optional: the CPU the code was
 *              "features": ["avx2", ...]}, // compiled for and the features of
 *                                        // ATTN_MODEL_CPU_FEATURES it may use
 *   "amx_tiles": true,                   // optional: the code uses AMX tiles
 *   "tensor_parallel": N,                // optional, default 1: a rank-local
 *                                        // library of an N-way split (heads,
 *                                        // KV heads, MLP columns, vocabulary);
 *                                        // the dimensions above are the whole
 *                                        // model's, kv_cache.bytes one rank's
 *   "inspect": true,                     // optional: attn_model_inspect and
 *                                        // attn_model_unembed are exported
 *   "num_experts": E,                    // optional: a mixture of experts, whose
 *   "experts_per_token": K,              // router chooses K of E per token
 *   "kv_cache": {"bytes": B,             // the buffer the runtime allocates
 *                "format": "f32" | "bf16" | "f16"},  // optional, default f32:
 *                                        // each cached element's type
 *   "weights": [                         // table[0 .. #weights)
 *     {"name": "h.0.ln_1.weight", "dtype": "F32", "shape": [768]},
 *     {"name": "h.0.attn.c_attn.weight", "dtype": "F32", "shape": [768, 2304],
 *      "used_at_run_time": false},       // optional, default true
 *     {"name": "l.0.mlp.experts.1.up_proj.weight", "dtype": "F32",
 *      "shape": [768, 2048], "or_slice_of": {  // optional: when no tensor has
 *        "name": "l.0.mlp.experts.gate_up_proj", // the name, `elements` of
 *        "shape": [128, 1536, 2048],             // this one from `offset`
 *        "offset": 4718592}},                    // (stacked experts)
 *     ...
 *   ],
 *   "packed": [                          // optional: table[#weights ..)
 *     {"name": "h.0.attn.c_attn", "bytes": 7077888, "sources": [3]}, ...
 *   ],                                   // sources: indices into weights
 *   "name_prefixes": ["transformer."],   // a weight may also be stored as
 *                                        // prefix + name (checkpoint variants)
 *   "ignored_suffixes": [".attn.bias", ".attn.masked_bias"],
 *                                        // non-weight buffers a checkpoint may
 *                                        // carry; silently skipped
 *   "ignored_names": ["lm_head.weight"]  // optional: tensors skipped by exact
 *                                        // name (with or without a prefix),
 *                                        // e.g. a tied output projection
 * }
 * The dimensions other than vocab_size and max_seq are informational and may
 * be omitted; name_prefixes, ignored_suffixes and ignored_names are optional.
 * Other tensors in the weights file that no weight uses are reported as
 * warnings by the runtime (see docs/runtime.md).
 *===----------------------------------------------------------------------===*/

#ifndef ATTNRT_MODEL_ABI_H
#define ATTNRT_MODEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 3: attn_model_inspect writes a mixture of experts' routing. */
#define ATTN_MODEL_ABI_VERSION 3

/* The instruction-set features a manifest's "target" may list: LLVM's name
 * (as attn-compile --target takes it) and where CPUID reports it (leaf,
 * subleaf, register, bit), with the register state the OS must enable
 * (XCR0: AVX, AVX512 or AMX; NONE). The runtime refuses a library listing a
 * feature the host lacks, or one this table does not know. */
#define ATTN_MODEL_CPU_FEATURES(X)                                             \
  X("sse3", 1, 0, ECX, 0, NONE) X("pclmul", 1, 0, ECX, 1, NONE)                 \
  X("ssse3", 1, 0, ECX, 9, NONE) X("fma", 1, 0, ECX, 12, AVX)                   \
  X("cx16", 1, 0, ECX, 13, NONE) X("sse4.1", 1, 0, ECX, 19, NONE)               \
  X("sse4.2", 1, 0, ECX, 20, NONE) X("movbe", 1, 0, ECX, 22, NONE)              \
  X("popcnt", 1, 0, ECX, 23, NONE) X("aes", 1, 0, ECX, 25, NONE)                \
  X("avx", 1, 0, ECX, 28, AVX) X("f16c", 1, 0, ECX, 29, AVX)                    \
  X("sahf", 0x80000001, 0, ECX, 0, NONE) X("lzcnt", 0x80000001, 0, ECX, 5, NONE) \
  X("prfchw", 0x80000001, 0, ECX, 8, NONE) X("bmi", 7, 0, EBX, 3, NONE)         \
  X("avx2", 7, 0, EBX, 5, AVX) X("bmi2", 7, 0, EBX, 8, NONE)                    \
  X("avx512f", 7, 0, EBX, 16, AVX512) X("avx512dq", 7, 0, EBX, 17, AVX512)      \
  X("avx512ifma", 7, 0, EBX, 21, AVX512) X("avx512cd", 7, 0, EBX, 28, AVX512)   \
  X("avx512bw", 7, 0, EBX, 30, AVX512) X("avx512vl", 7, 0, EBX, 31, AVX512)     \
  X("avx512vbmi", 7, 0, ECX, 1, AVX512) X("avx512vbmi2", 7, 0, ECX, 6, AVX512)  \
  X("gfni", 7, 0, ECX, 8, NONE) X("vaes", 7, 0, ECX, 9, AVX)                    \
  X("vpclmulqdq", 7, 0, ECX, 10, AVX) X("avx512vnni", 7, 0, ECX, 11, AVX512)    \
  X("avx512bitalg", 7, 0, ECX, 12, AVX512)                                      \
  X("avx512vpopcntdq", 7, 0, ECX, 14, AVX512)                                   \
  X("amx-bf16", 7, 0, EDX, 22, AMX) X("avx512fp16", 7, 0, EDX, 23, AVX512)      \
  X("amx-tile", 7, 0, EDX, 24, AMX) X("amx-int8", 7, 0, EDX, 25, AMX)           \
  X("avxvnni", 7, 1, EAX, 4, AVX) X("avx512bf16", 7, 1, EAX, 5, AVX512)

enum {
  ATTN_MODEL_OK = 0,
  /* n < 1, pos < 0 or pos + n > max_seq. */
  ATTN_MODEL_ERROR_POSITION = 1,
  /* A token id outside [0, vocab_size). */
  ATTN_MODEL_ERROR_TOKEN = 2,
  /* attn_model_pack: no packed buffer has that index. */
  ATTN_MODEL_ERROR_ARGUMENT = 3,
};

/* The collectives of a tensor-parallel group (attn_model_set_collectives). */
typedef struct attn_model_collectives {
  int32_t rank; /* 0 .. size - 1 */
  int32_t size;
  void *context; /* passed back to the hooks */
  /* data[0, n) summed elementwise over the ranks, in place, on every rank. */
  void (*all_reduce_sum)(void *context, float *data, int64_t n);
  /* out[0, size * n): every rank's data[0, n), rank-major, on every rank. */
  void (*all_gather)(void *context, const float *data, int64_t n, float *out);
} attn_model_collectives;

typedef const char *(*attn_model_manifest_fn)(void);
typedef void (*attn_model_set_collectives_fn)(const attn_model_collectives *c);
typedef int32_t (*attn_model_pack_fn)(float *const *table, int32_t index);
typedef void (*attn_model_set_num_threads_fn)(int32_t n);
typedef void *(*attn_model_alloc_fn)(uint64_t bytes);
typedef void (*attn_model_release_fn)(void *pointer);
typedef void (*attn_model_set_allocator_fn)(attn_model_alloc_fn alloc,
                                            attn_model_release_fn release);
typedef int32_t (*attn_model_prefill_fn)(const int32_t *tokens, int64_t n,
                                         int64_t pos,
                                         const float *const *table,
                                         float *kv_cache, float *logits,
                                         int32_t all_logits);
typedef int32_t (*attn_model_decode_fn)(int32_t token, int64_t pos,
                                        const float *const *table,
                                        float *kv_cache, float *logits);
typedef int32_t (*attn_model_decode_batch_fn)(const int32_t *tokens,
                                              const int64_t *positions,
                                              const int64_t *slots, int64_t n,
                                              const float *const *table,
                                              float *kv_pool, int64_t pool_slots,
                                              float *logits);
typedef int32_t (*attn_model_inspect_fn)(const int32_t *tokens, int64_t n,
                                         const float *const *table,
                                         float *kv_cache, float *attention,
                                         float *residual, float *final_norm,
                                         int32_t *experts, float *expert_weights,
                                         float *logits);
typedef int32_t (*attn_model_unembed_fn)(const float *hidden, int64_t n,
                                         const float *const *table,
                                         float *logits);

#define ATTN_MODEL_MANIFEST_SYMBOL "attn_model_manifest"
#define ATTN_MODEL_PREFILL_SYMBOL "attn_model_prefill"
#define ATTN_MODEL_DECODE_SYMBOL "attn_model_decode"
#define ATTN_MODEL_SET_NUM_THREADS_SYMBOL "attn_model_set_num_threads"
#define ATTN_MODEL_PACK_SYMBOL "attn_model_pack"
#define ATTN_MODEL_SET_ALLOCATOR_SYMBOL "attn_model_set_allocator"
#define ATTN_MODEL_DECODE_BATCH_SYMBOL "attn_model_decode_batch"
#define ATTN_MODEL_INSPECT_SYMBOL "attn_model_inspect"
#define ATTN_MODEL_UNEMBED_SYMBOL "attn_model_unembed"
#define ATTN_MODEL_SET_COLLECTIVES_SYMBOL "attn_model_set_collectives"

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_MODEL_ABI_H */
