//===- PackedWeight.h - the formats of a packed weight ----------*- C++ -*-===//
//
// A packed weight holds W[n, k] for blocks of NR output features. Its type
// says how each element is stored:
//
//   [NB, K, NR] f32 or bf16    W[n, k] at [n / NR, k, n % NR]
//   [NB, K/32, NR, 34] i8      q8_0: per block of 32 inputs and lane, 32
//                              int8 weights and an f16 scale (34 bytes)
//   [NB, K/32, NR, 18] i8      q4_0: 32 4-bit weights and an f16 scale
//
// The quantized formats are llama.cpp's blocks (same grouping, rounding and
// bytes per weight); only their order in memory is ours. The NR*34 (NR*18)
// bytes of block (b, g) are one slab laid out for the int8 dot product
// instruction (4 adjacent inputs of one output feature per 32-bit lane):
//
//   q8_0: byte (q * NR + lane) * 4 + j holds the weight of k = 32g + 4q + j
//         (q < 8, j < 4) plus 128, as an unsigned byte; W = (byte - 128) * d
//   q4_0: byte ((q % 4) * NR + lane) * 4 + j holds that weight's 4 bits,
//         the low nibble for q < 4 and the high one for q >= 4; W = (v - 8) * d
//   then the lanes' f16 scales d: bytes at weightBytes + 2 * lane.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_IR_PACKEDWEIGHT_H
#define ATTN_DIALECT_ATTN_IR_PACKEDWEIGHT_H

#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>
#include <optional>

namespace mlir {
namespace attn {

enum class PackedFormat { F32, BF16, Q8_0, Q4_0 };

/// Weights per quantization block along the input dimension (llama.cpp's
/// QK8_0 and QK4_0).
constexpr int64_t kQuantBlock = 32;

inline bool isQuantized(PackedFormat format) {
  return format == PackedFormat::Q8_0 || format == PackedFormat::Q4_0;
}

/// Bytes per output feature of one quantization block: the weights, then
/// the f16 scale.
inline int64_t quantWeightBytes(PackedFormat format) {
  return format == PackedFormat::Q8_0 ? kQuantBlock : kQuantBlock / 2;
}
inline int64_t quantBlockBytes(PackedFormat format) {
  return quantWeightBytes(format) + 2;
}

/// What the stored byte adds to a weight's integer value: the int8 dot
/// product multiplies unsigned weight bytes by signed activations.
inline int64_t quantOffset(PackedFormat format) {
  return format == PackedFormat::Q8_0 ? 128 : 8;
}

/// Bytes per weight of a format (scales included).
inline double bytesPerWeight(PackedFormat format) {
  switch (format) {
  case PackedFormat::F32:
    return 4.0;
  case PackedFormat::BF16:
    return 2.0;
  case PackedFormat::Q8_0:
  case PackedFormat::Q4_0:
    return static_cast<double>(quantBlockBytes(format)) / kQuantBlock;
  }
  return 0.0;
}

struct PackedWeightInfo {
  PackedFormat format;
  int64_t blocks, inFeatures, blockSize;
};

/// The format and sizes a packed weight type encodes, or nullopt when the
/// type is none of the forms above (its shape must be static).
inline std::optional<PackedWeightInfo> getPackedWeightInfo(ShapedType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  Type element = type.getElementType();
  if (type.getRank() == 3 && (element.isF32() || element.isBF16()))
    return PackedWeightInfo{element.isF32() ? PackedFormat::F32 : PackedFormat::BF16,
                            type.getDimSize(0), type.getDimSize(1),
                            type.getDimSize(2)};
  if (type.getRank() == 4 && element.isInteger(8)) {
    for (PackedFormat format : {PackedFormat::Q8_0, PackedFormat::Q4_0})
      if (type.getDimSize(3) == quantBlockBytes(format))
        return PackedWeightInfo{format, type.getDimSize(0),
                                type.getDimSize(1) * kQuantBlock,
                                type.getDimSize(2)};
  }
  return std::nullopt;
}

/// The packed shape of `blocks` blocks of `blockSize` features over `k`
/// inputs (k a multiple of kQuantBlock for the quantized formats).
inline SmallVector<int64_t, 4> packedWeightShape(PackedFormat format,
                                                 int64_t blocks, int64_t k,
                                                 int64_t blockSize) {
  if (isQuantized(format))
    return {blocks, k / kQuantBlock, blockSize, quantBlockBytes(format)};
  return {blocks, k, blockSize};
}

/// "f32", "bf16", "q8_0", "q4_0".
inline const char *packedFormatName(PackedFormat format) {
  switch (format) {
  case PackedFormat::F32:
    return "f32";
  case PackedFormat::BF16:
    return "bf16";
  case PackedFormat::Q8_0:
    return "q8_0";
  case PackedFormat::Q4_0:
    return "q4_0";
  }
  return "?";
}

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_IR_PACKEDWEIGHT_H
