/*===- MockModel.c - a toy model implementing model_abi.h -------*- C -*-===*
 *
 * Stands in for a library built by attn-compile in the runtime's tests. It
 * keeps the ABI honestly: the KV cache holds each token id at its position,
 * the logits row of position p depends on every cached token 0..p and on all
 * four weights, calls never read cache rows past pos + n, and out-of-range
 * arguments return an error code without touching anything.
 *
 *   h      = sum_{j<=p} wte[t_j] / (1 + p - j)        (a decaying "attention")
 *   z      = tanh(mix.weight * h + mix.bias)
 *   logits = wte * z + head.bias                         (tied embeddings)
 *
 * Test hooks (not part of the ABI): mock_set_manifest replaces the manifest
 * text, mock_num_threads reports the last set_num_threads, and
 * mock_last_weights the weights array of the latest call. Build with
 * -DMOCK_NO_DECODE for a library that lacks attn_model_decode, and with
 * -DMOCK_ABI_VERSION=1 for one built for another ABI.
 *===----------------------------------------------------------------------===*/

#include "attnrt/model_abi.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define MOCK_VOCAB 40
#define MOCK_HIDDEN 6
#define MOCK_MAX_SEQ 24

#define MOCK_EXPORT __attribute__((visibility("default")))

enum { W_WTE, W_MIX, W_MIX_BIAS, W_HEAD_BIAS };

/* -DMOCK_ABI_VERSION=1: a library built for another runtime. */
#ifndef MOCK_ABI_VERSION
#define MOCK_ABI_VERSION ATTN_MODEL_ABI_VERSION
#endif
#define MOCK_STRING(x) MOCK_STRING_(x)
#define MOCK_STRING_(x) #x

static const char defaultManifest[] =
    "{\n"
    "  \"abi_version\": " MOCK_STRING(MOCK_ABI_VERSION) ",\n"
    "  \"architecture\": \"mock\",\n"
    "  \"vocab_size\": 40, \"hidden_size\": 6, \"num_layers\": 1,\n"
    "  \"num_heads\": 2, \"num_kv_heads\": 1, \"head_dim\": 3,\n"
    "  \"intermediate_size\": 12, \"max_seq\": 24,\n"
    "  \"kv_cache\": {\"bytes\": 96},\n"
    "  \"weights\": [\n"
    "    {\"name\": \"wte.weight\", \"dtype\": \"F32\", \"shape\": [40, 6]},\n"
    "    {\"name\": \"h.0.mix.weight\", \"dtype\": \"F32\", \"shape\": [6, "
    "6]},\n"
    "    {\"name\": \"h.0.mix.bias\", \"dtype\": \"F32\", \"shape\": [6]},\n"
    "    {\"name\": \"head.bias\", \"dtype\": \"F32\", \"shape\": [40]}\n"
    "  ],\n"
    "  \"name_prefixes\": [\"transformer.\", \"model.\"],\n"
    "  \"ignored_suffixes\": [\".attn.bias\", \".attn.masked_bias\"],\n"
    "  \"ignored_names\": [\"lm_head.weight\"]\n"
    "}\n";

static const char *_Atomic manifestOverride;
static _Atomic int32_t numThreads;
static const float *const *_Atomic lastWeights;

MOCK_EXPORT void mock_set_manifest(const char *json) {
  atomic_store(&manifestOverride, json);
}

MOCK_EXPORT int32_t mock_num_threads(void) { return atomic_load(&numThreads); }

MOCK_EXPORT const float *const *mock_last_weights(void) {
  return atomic_load(&lastWeights);
}

MOCK_EXPORT const char *attn_model_manifest(void) {
  const char *json = atomic_load(&manifestOverride);
  return json ? json : defaultManifest;
}

MOCK_EXPORT void attn_model_set_num_threads(int32_t n) {
  atomic_store(&numThreads, n);
}

/* Used only when a test's manifest lists packed buffers: buffer 0 (table[4])
 * is the transposed mix weight, the way a real model packs projections, and
 * the entry points then read it instead of the mix weight. There is no
 * buffer 1. */
MOCK_EXPORT int32_t attn_model_pack(float *const *table, int32_t index) {
  if (index != 0)
    return ATTN_MODEL_ERROR_ARGUMENT;
  const float *mix = table[W_MIX];
  float *packed = table[W_HEAD_BIAS + 1];
  for (int d = 0; d < MOCK_HIDDEN; ++d)
    for (int e = 0; e < MOCK_HIDDEN; ++e)
      packed[e * MOCK_HIDDEN + d] = mix[d * MOCK_HIDDEN + e];
  return ATTN_MODEL_OK;
}

static int usesPackedMix(void) {
  return strstr(attn_model_manifest(), "\"packed\"") != NULL;
}

/* The logits row of position p, from the tokens cached at 0..p. */
static void computeRow(const float *const *weights, const float *kvCache,
                       int64_t p, float *out) {
  const float *wte = weights[W_WTE];
  const float *mix = weights[W_MIX];
  const float *mixBias = weights[W_MIX_BIAS];
  const float *headBias = weights[W_HEAD_BIAS];
  float h[MOCK_HIDDEN] = {0};
  for (int64_t j = 0; j <= p; ++j) {
    int32_t token = (int32_t)kvCache[j];
    float scale = 1.0f / (float)(1 + p - j);
    for (int d = 0; d < MOCK_HIDDEN; ++d)
      h[d] += scale * wte[token * MOCK_HIDDEN + d];
  }
  float z[MOCK_HIDDEN];
  const float *packedMix = usesPackedMix() ? weights[W_HEAD_BIAS + 1] : NULL;
  for (int d = 0; d < MOCK_HIDDEN; ++d) {
    float acc = mixBias[d];
    for (int e = 0; e < MOCK_HIDDEN; ++e)
      acc += (packedMix ? packedMix[e * MOCK_HIDDEN + d]
                        : mix[d * MOCK_HIDDEN + e]) *
             h[e];
    z[d] = tanhf(acc);
  }
  for (int v = 0; v < MOCK_VOCAB; ++v) {
    float acc = headBias[v];
    for (int d = 0; d < MOCK_HIDDEN; ++d)
      acc += wte[v * MOCK_HIDDEN + d] * z[d];
    out[v] = acc;
  }
}

MOCK_EXPORT int32_t attn_model_prefill(const int32_t *tokens, int64_t n,
                                       int64_t pos, const float *const *weights,
                                       float *kvCache, float *logits,
                                       int32_t allLogits) {
  if (n < 1 || pos < 0 || pos > MOCK_MAX_SEQ - n)
    return ATTN_MODEL_ERROR_POSITION;
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= MOCK_VOCAB)
      return ATTN_MODEL_ERROR_TOKEN;
  atomic_store(&lastWeights, weights);
  for (int64_t i = 0; i < n; ++i)
    kvCache[pos + i] = (float)tokens[i];
  if (!allLogits) {
    computeRow(weights, kvCache, pos + n - 1, logits);
    return ATTN_MODEL_OK;
  }
  for (int64_t i = 0; i < n; ++i)
    computeRow(weights, kvCache, pos + i, logits + i * MOCK_VOCAB);
  return ATTN_MODEL_OK;
}

#ifndef MOCK_NO_DECODE
MOCK_EXPORT int32_t attn_model_decode(int32_t token, int64_t pos,
                                      const float *const *weights,
                                      float *kvCache, float *logits) {
  if (pos < 0 || pos >= MOCK_MAX_SEQ)
    return ATTN_MODEL_ERROR_POSITION;
  if (token < 0 || token >= MOCK_VOCAB)
    return ATTN_MODEL_ERROR_TOKEN;
  atomic_store(&lastWeights, weights);
  kvCache[pos] = (float)token;
  computeRow(weights, kvCache, pos, logits);
  return ATTN_MODEL_OK;
}
#endif
