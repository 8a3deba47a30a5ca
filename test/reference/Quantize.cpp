//===- Quantize.cpp - scalar reference of llama.cpp's q8_0 and q4_0 -------===//

#include "Quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace attn {
namespace ref {

uint16_t f16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  uint32_t sign = (bits >> 16) & 0x8000u;
  float magnitude = std::fabs(value);
  if (std::isnan(value))
    return static_cast<uint16_t>(sign | 0x7E00u);
  if (magnitude >= 65520.0f) // rounds to infinity
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (magnitude < 0x1.0p-14f) {
    // Subnormal: a multiple of 2^-24, rounded to nearest even.
    float units = std::nearbyint(magnitude * 0x1.0p24f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  int exponent;
  std::frexp(magnitude, &exponent); // magnitude = m * 2^exponent, m in [0.5, 1)
  // 11 significant bits: a multiple of 2^(exponent - 11).
  float units = std::nearbyint(std::ldexp(magnitude, 11 - exponent));
  if (units >= 2048.0f) { // rounded up to the next power of two
    units /= 2;
    ++exponent;
  }
  uint32_t biased = static_cast<uint32_t>(exponent - 1 + 15);
  uint32_t mantissa = static_cast<uint32_t>(units) - 1024u;
  return static_cast<uint16_t>(sign | (biased << 10) | mantissa);
}

float f16Value(uint16_t bits) {
  float sign = (bits & 0x8000u) ? -1.0f : 1.0f;
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  if (exponent == 0)
    return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31)
    return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
}

QuantBlock quantizeBlock(const float *x, std::ptrdiff_t stride, QuantFormat format) {
  QuantBlock block{};
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < kQuantBlock; ++i) {
    float v = x[i * stride];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  // llama.cpp: d = amax / ((1 << 7) - 1) for q8_0, max / -8 for q4_0; the
  // values use the f32 d, the block stores d as f16.
  float d = format == QuantFormat::Q8_0 ? amax / 127.0f : max / -8.0f;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQuantBlock; ++i) {
    float scaled = x[i * stride] * id;
    if (format == QuantFormat::Q8_0) {
      block.values[i] = static_cast<int8_t>(std::round(scaled)); // roundf
    } else {
      int q = std::min(15, static_cast<int>(static_cast<int8_t>(scaled + 8.5f)));
      block.values[i] = static_cast<int8_t>(q - 8);
    }
  }
  block.scale = f16Bits(d);
  return block;
}

void roundThroughFormat(std::vector<float> &weight, int64_t in, bool outIn,
                        QuantFormat format) {
  if (in % kQuantBlock != 0 || weight.size() % in != 0)
    throw std::invalid_argument("roundThroughFormat: bad input features");
  int64_t out = static_cast<int64_t>(weight.size()) / in;
  for (int64_t n = 0; n < out; ++n)
    for (int64_t k0 = 0; k0 < in; k0 += kQuantBlock) {
      float *first = outIn ? &weight[n * in + k0] : &weight[k0 * out + n];
      std::ptrdiff_t stride = outIn ? 1 : out;
      QuantBlock block = quantizeBlock(first, stride, format);
      for (int i = 0; i < kQuantBlock; ++i)
        first[i * stride] = block.value(i);
    }
}

std::vector<float> quantizeActivationRows(const std::vector<float> &x, int64_t rows,
                                          int64_t k) {
  if (k % kQuantBlock != 0 || static_cast<int64_t>(x.size()) != rows * k)
    throw std::invalid_argument("quantizeActivationRows: bad shape");
  std::vector<float> out(x.size());
  for (int64_t i = 0; i < rows * k; i += kQuantBlock) {
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j)
      amax = std::max(amax, std::fabs(x[i + j]));
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQuantBlock; ++j)
      out[i + j] = std::nearbyint(x[i + j] * id) * d; // ties to even
  }
  return out;
}

/// The weight [n, k] (nn.Linear) in the q8_0 / q4_0 layout of
/// include/attn/Dialect/Attn/IR/PackedWeight.h, quantized by the scalar
/// reference: per block of NR features and 32 inputs, the weight of
/// k = 32g + 4q + j at byte (q * NR + lane) * 4 + j (q8_0: value + 128;
/// q4_0: value + 8, quads 4..7 in the high nibbles of quads 0..3), then the
/// lanes' f16 scales.
std::vector<uint8_t> packQuantized(const std::vector<float> &w, int64_t n, int64_t k,
                                   int64_t nr, QuantFormat format) {
  const bool q8 = format == QuantFormat::Q8_0;
  const int64_t weightBytes = q8 ? 32 : 16, slab = nr * (weightBytes + 2);
  const int64_t blocks = (n + nr - 1) / nr, groups = k / 32;
  std::vector<uint8_t> packed(blocks * groups * slab);
  std::vector<float> zeros(32, 0.0f);
  for (int64_t row = 0; row < blocks * nr; ++row)
    for (int64_t g = 0; g < groups; ++g) {
      const float *x = row < n ? &w[row * k + g * 32] : zeros.data();
      QuantBlock block = quantizeBlock(x, 1, format);
      uint8_t *out = &packed[((row / nr) * groups + g) * slab];
      int64_t lane = row % nr;
      for (int t = 0; t < 32; ++t) {
        int quad = t / 4;
        if (q8) {
          out[(quad * nr + lane) * 4 + t % 4] = static_cast<uint8_t>(block.values[t] + 128);
        } else {
          uint8_t nibble = static_cast<uint8_t>(block.values[t] + 8);
          out[((quad % 4) * nr + lane) * 4 + t % 4] |=
              static_cast<uint8_t>(quad < 4 ? nibble : nibble << 4);
        }
      }
      out[weightBytes * nr + 2 * lane] = block.scale & 0xFF;
      out[weightBytes * nr + 2 * lane + 1] = block.scale >> 8;
    }
  return packed;
}

} // namespace ref
} // namespace attn
