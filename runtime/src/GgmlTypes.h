//===- GgmlTypes.h - ggml's tensor types and their dequantization -*- C++ -*-===//
//
// The tensor types a GGUF file can hold, numbered as ggml.h numbers them,
// with their block geometry (so a reader can size every tensor, even one of
// a type Attn does not compute with, and name it), and the dequantization of
// the types Attn reads, following ggml-quants.c's dequantize_row_* formulas
// operation for operation (the runtime builds with -ffp-contract=off, so the
// products round as written there).
//
// Block layouts (little-endian; d, dmin and m are f16):
//   Q4_0 [d, 16 bytes of nibbles]: x[j] = (lo(q[j]) - 8) d, x[j+16] = (hi - 8) d
//   Q4_1 [d, m, nibbles]: x = q d + m
//   Q5_0 [d, u32 fifth bits, nibbles]: x = (q | bit << 4) - 16) d
//   Q5_1 [d, m, u32 fifth bits, nibbles]: x = (q | bit << 4) d + m
//   Q8_0 [d, 32 x i8]: x = q d
//   Q4_K super-block of 256 [d, dmin, 12 bytes of 6-bit scales and mins for
//        8 sub-blocks of 32, 128 bytes of nibbles]: x = d sc q - dmin m
//   Q5_K as Q4_K plus 32 bytes of fifth bits
//   Q6_K [128 bytes low nibbles, 64 bytes of 2-bit highs, 16 x i8 scales,
//        d]: x = d sc (q - 32)
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_GGMLTYPES_H
#define ATTNRT_GGMLTYPES_H

#include <cstddef>
#include <cstdint>

namespace attnrt {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct GgmlTypeTraits {
  GgmlType type;
  const char *name; // As ggml names it ("q4_K", "bf16").
  uint32_t blockSize; // Elements per block.
  uint32_t typeSize;  // Bytes per block.
};

/// The traits of ggml type number `id`, or null for a number ggml does not
/// define (or no longer reads, like the removed Q4_2 and the repacked
/// Q4_0_4_4).
const GgmlTypeTraits *ggmlTypeTraits(uint32_t id);
inline const GgmlTypeTraits &ggmlTypeTraits(GgmlType type) {
  return *ggmlTypeTraits(static_cast<uint32_t>(type));
}

/// True for the types dequantizeGgmlRow converts.
bool canDequantizeGgml(GgmlType type);

/// Converts `count` elements (a multiple of the type's block size) starting
/// at `blocks` to f32. Only for types canDequantizeGgml accepts.
void dequantizeGgmlRow(GgmlType type, const uint8_t *blocks, float *out,
                       int64_t count);

/// True for the types quantizeGgmlRow writes: the ones dequantizeGgmlRow
/// reads.
bool canQuantizeGgml(GgmlType type);

/// Writes `count` f32 values (a multiple of the type's block size) as blocks
/// of `type`, with ggml's reference quantizers (quantize_row_<type>_ref in
/// ggml-quants.c): the same bytes llama.cpp's converter and llama-quantize
/// (without an importance matrix) write. Only for types canQuantizeGgml
/// accepts.
void quantizeGgmlRow(GgmlType type, const float *values, uint8_t *blocks,
                     int64_t count);

} // namespace attnrt

#endif // ATTNRT_GGMLTYPES_H
