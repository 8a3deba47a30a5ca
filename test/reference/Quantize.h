//===- Quantize.h - scalar reference of llama.cpp's q8_0 and q4_0 -*- C++ -*-===//
//
// The oracle of the quantized weight formats: blocks of 32 values with one
// f16 scale, rounded exactly as llama.cpp's quantize_row_q8_0_ref and
// quantize_row_q4_0_ref round them, and the per-row int8 quantization of
// activations the int8 kernels apply (scale amax / 127 kept in f32, values
// rounded to nearest even). Plain C++17, independent of the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_REFERENCE_QUANTIZE_H
#define ATTN_TEST_REFERENCE_QUANTIZE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn {
namespace ref {

enum class QuantFormat { Q8_0, Q4_0 };

constexpr int64_t kQuantBlock = 32;

/// The f16 nearest to `value` (ties to even; overflow to infinity,
/// subnormals kept), as its bits; and back.
uint16_t f16Bits(float value);
float f16Value(uint16_t bits);

/// One block: the integer values (q8_0: -127..127; q4_0: the stored 0..15
/// minus 8) and the f16 scale's bits.
struct QuantBlock {
  int8_t values[kQuantBlock];
  uint16_t scale;
  float value(int i) const { return static_cast<float>(values[i]) * f16Value(scale); }
};

/// Quantizes x[0], x[stride], ... x[31 * stride] as llama.cpp does.
QuantBlock quantizeBlock(const float *x, std::ptrdiff_t stride, QuantFormat format);

/// Replaces each block of 32 along the input dimension of a weight by its
/// quantized value: `outIn` [out, in] (blocks contiguous) or [in, out].
/// `in` must be a multiple of 32.
void roundThroughFormat(std::vector<float> &weight, int64_t in, bool outIn,
                        QuantFormat format);

/// The weight [n, k] (nn.Linear) packed in blocks of `nr` features as
/// include/attn/Dialect/Attn/IR/PackedWeight.h lays out q8_0 and q4_0
/// (the last block's features past n are zeros); k a multiple of 32.
std::vector<uint8_t> packQuantized(const std::vector<float> &w, int64_t n, int64_t k,
                                   int64_t nr, QuantFormat format);

/// The activations the int8 kernels multiply: each row of x [rows, k] in
/// blocks of 32 as q * d, d = amax / 127 (f32), q = x / d rounded to
/// nearest even.
std::vector<float> quantizeActivationRows(const std::vector<float> &x, int64_t rows,
                                          int64_t k);

} // namespace ref
} // namespace attn

#endif // ATTN_TEST_REFERENCE_QUANTIZE_H
