// Writes ggml-blocks.txt: ggml's own quantizers and dequantizers on
// pseudo-random rows, the known answers GgmlTypesTest checks Attn's
// dequantization (and, later, its quantizers) against. It needs a llama.cpp
// checkout (not reachable from CI, hence the committed output):
//
//   R=llama.cpp; clang-22 -O2 -ffp-contract=off -I$R/ggml/include \
//     -I$R/ggml/src ggml-blocks.c $R/ggml/src/ggml-quants.c -lm -o gen
//   ./gen > ggml-blocks.txt   (then put the header lines back)
//
// -ffp-contract=off: ggml's formulas with every product rounded, as Attn's
// runtime computes them.
#include "ggml-quants.h"
#include "ggml.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// What ggml-quants.c takes from the rest of ggml: the f16 table (ggml_init
// fills it) and functions only its imatrix paths reach.
float ggml_table_f32_f16[1 << 16];
void ggml_abort(const char *file, int line, const char *fmt, ...) { abort(); }
size_t ggml_row_size(enum ggml_type t, int64_t n) { abort(); }
size_t ggml_type_size(enum ggml_type t) { abort(); }
const char *ggml_type_name(enum ggml_type t) { abort(); }

static uint32_t state = 12345;
static float uniform(void) { // In [-1, 1).
  state = state * 1664525u + 1013904223u;
  return ((state >> 8) / 16777216.0f) * 2 - 1;
}

static void printFloats(const float *x, int n) {
  for (int i = 0; i < n; ++i) {
    uint32_t u;
    memcpy(&u, &x[i], 4);
    printf("%08x", u);
  }
}

typedef void (*QuantizeFn)(const float *, void *, int64_t);
typedef void (*DequantizeFn)(const void *, float *, int64_t);

// Two blocks: signed values with every seventh four times larger (uneven
// sub-block scales), then all positive (the mins of the _1 and K types).
static void emit(const char *name, QuantizeFn quantize,
                 DequantizeFn dequantize, int n, int bytes, float scale) {
  for (int b = 0; b < 2; ++b) {
    float x[256], y[256];
    unsigned char block[512];
    for (int i = 0; i < n; ++i)
      x[i] = uniform() * scale * (1 + (i % 7 == 0) * 3);
    if (b == 1)
      for (int i = 0; i < n; ++i)
        x[i] = fabsf(x[i]) + 0.1f;
    quantize(x, block, n);
    dequantize(block, y, n);
    printf("%s ", name);
    printFloats(x, n);
    printf(" ");
    for (int i = 0; i < bytes; ++i)
      printf("%02x", block[i]);
    printf(" ");
    printFloats(y, n);
    printf("\n");
  }
}

// Many blocks, summarized: 256 blocks of each type whose inputs the test
// regenerates (this generator, seeded afresh per type), with scales from
// 1e-4 to 30 and a zero block among them; printed as the FNV-1a hashes of
// all the blocks' bytes and of their dequantized floats.
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static void emitMany(const char *name, QuantizeFn quantize,
                     DequantizeFn dequantize, int n, int bytes) {
  state = 777;
  uint64_t hb = 14695981039346656037ull, hf = hb;
  for (int b = 0; b < 256; ++b) {
    float x[256], y[256];
    unsigned char block[512];
    static const float scales[13] = {1e-4f, 2e-4f, 5e-4f, 1e-3f, 3e-3f,
                                     1e-2f, 3e-2f, 0.1f,  0.3f,  1.0f,
                                     3.0f,  10.0f, 30.0f};
    float scale = b == 17 ? 0.0f : scales[b % 13];
    for (int i = 0; i < 256; ++i)
      x[i] = uniform() * scale * (1 + (i % (3 + b % 5) == 0) * (b % 4));
    for (int off = 0; off < 256; off += n) {
      quantize(x + off, block, n);
      dequantize(block, y, n);
      hb = fnv(hb, block, bytes);
      hf = fnv(hf, y, sizeof(float) * n);
    }
  }
  printf("many %s %016llx %016llx\n", name, (unsigned long long)hb,
         (unsigned long long)hf);
}

int main(void) {
  for (int i = 0; i < (1 << 16); ++i) {
    uint16_t h = (uint16_t)i;
    _Float16 f;
    memcpy(&f, &h, 2);
    ggml_table_f32_f16[i] = (float)f;
  }
#define EMIT(type, n, bytes, scale)                                            \
  emit(#type, (QuantizeFn)quantize_row_##type##_ref,                          \
       (DequantizeFn)dequantize_row_##type, n, bytes, scale)
  EMIT(q4_0, 32, 18, 0.7f);
  EMIT(q4_1, 32, 20, 0.7f);
  EMIT(q5_0, 32, 22, 0.7f);
  EMIT(q5_1, 32, 24, 0.7f);
  EMIT(q8_0, 32, 34, 0.7f);
  EMIT(q4_K, 256, 144, 0.05f);
  EMIT(q5_K, 256, 176, 0.05f);
  EMIT(q6_K, 256, 210, 0.05f);
#define MANY(type, n, bytes)                                                   \
  emitMany(#type, (QuantizeFn)quantize_row_##type##_ref,                      \
           (DequantizeFn)dequantize_row_##type, n, bytes)
  MANY(q4_0, 32, 18);
  MANY(q4_1, 32, 20);
  MANY(q5_0, 32, 22);
  MANY(q5_1, 32, 24);
  MANY(q8_0, 32, 34);
  MANY(q4_K, 256, 144);
  MANY(q5_K, 256, 176);
  MANY(q6_K, 256, 210);
  return 0;
}
