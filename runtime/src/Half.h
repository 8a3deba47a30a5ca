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

/// NaN or +-Inf.
inline bool isNonFinite(uint32_t floatBits) {
  return (floatBits & 0x7F800000) == 0x7F800000;
}

} // namespace attnrt

#endif // ATTNRT_HALF_H
