//===- Half.h - exact f16 / bf16 to f32 conversion -------------*- C++ -*-===//
//
// Bit-exact widening (every f16 and bf16 value, subnormals, infinities and
// NaN payloads included, is representable in f32), written out rather than
// relying on _Float16 or F16C so the result is the same on every host.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_HALF_H
#define ATTNRT_HALF_H

#include <cstdint>
#include <cstring>

namespace attnrt {

inline float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

/// IEEE binary16 -> binary32.
inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  if (exponent == 0x1F) // Inf / NaN: keep the payload.
    return bitsToFloat(sign | 0x7F800000 | (mantissa << 13));
  if (exponent != 0) // Normal: rebias 15 -> 127.
    return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0)
    return bitsToFloat(sign);
  // Subnormal, mantissa * 2^-24: shift the leading one up to the implicit
  // bit (bit 10) and lower the exponent to match.
  int shift = __builtin_clz(mantissa) - 21;
  mantissa = (mantissa << shift) & 0x3FF;
  uint32_t biased = static_cast<uint32_t>(113 - shift);
  return bitsToFloat(sign | (biased << 23) | (mantissa << 13));
}

/// bfloat16 is the top half of a binary32.
inline float bfloat16ToFloat(uint16_t b) {
  return bitsToFloat(static_cast<uint32_t>(b) << 16);
}

/// binary32 -> IEEE binary16, rounding to nearest even (as F16C's vcvtps2ph
/// and ggml's GGML_FP32_TO_FP16 do): overflow gives Inf, NaN stays a quiet
/// NaN.
inline uint16_t floatToHalf(float f) {
  uint32_t bits = floatToBits(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) // NaN: quiet, top payload bits kept.
    return static_cast<uint16_t>(sign | 0x7E00 | ((magnitude >> 13) & 0x3FF));
  if (magnitude >= 0x477FF000) // Rounds to 65536 or more (or is Inf).
    return static_cast<uint16_t>(sign | 0x7C00);
  if (magnitude < 0x38800000) { // Below 2^-14: subnormal or zero.
    // value * 2^24 rounded to an integer, to nearest even.
    uint32_t exponent = magnitude >> 23;
    if (exponent < 102) // Below 2^-25: rounds to zero.
      return sign;
    uint32_t mantissa = (magnitude & 0x7FFFFF) | 0x800000;
    uint32_t shift = 126 - exponent; // 14..24
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias 127 -> 15 and round the 13 dropped bits to nearest even
  // (a carry into the exponent is the right result).
  uint32_t rebased = magnitude - (112u << 23);
  uint32_t rounded = rebased + 0xFFF + ((rebased >> 13) & 1);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

/// binary32 -> bfloat16, rounding to nearest even (ggml's
/// GGML_FP32_TO_BF16): NaN stays a quiet NaN.
inline uint16_t floatToBfloat16(float f) {
  uint32_t bits = floatToBits(f);
  if ((bits & 0x7FFFFFFF) > 0x7F800000)
    return static_cast<uint16_t>((bits >> 16) | 64);
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

/// NaN or +-Inf.
inline bool isNonFinite(uint32_t floatBits) {
  return (floatBits & 0x7F800000) == 0x7F800000;
}

} // namespace attnrt

#endif // ATTNRT_HALF_H
