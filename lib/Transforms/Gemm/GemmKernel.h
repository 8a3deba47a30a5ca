//===- GemmKernel.h - attn.gemm's loop nest and microkernels ----*- C++ -*-===//
//
// What the attn-lower-gemm loop nest (LowerGemm.cpp) and its microkernels
// share: the gemm's shapes and operands (GemmKernel), small builders, and
// the table of microkernels, one file each, keyed by weight format and
// instruction set. A microkernel emits the products of one register tile
// (a few input rows times one packed output block); the loop nest around
// it owns chunking, threads, row tiles and the epilogue.
//
//   weight format | instruction set                       | microkernel
//   --------------+---------------------------------------+--------------------
//   f32           | FMA, 8 lanes (AVX2) or 16 (AVX-512)   | FmaMicrokernel.cpp
//   bf16          | widened to f32 as loaded, then FMA    | FmaMicrokernel.cpp
//   bf16          | vdpbf16ps (AVX-512 BF16)              | Bf16DotMicrokernel.cpp
//   bf16          | AMX tiles, tdpbf16ps                  | AmxMicrokernel.cpp
//   q8_0, q4_0    | vpdpbusd (AVX-512 VNNI, AVX-VNNI) or  | Int8Microkernel.cpp
//                 | vpmaddubsw + vpmaddwd (AVX2)          |
//
// The input rows some of them read (normalized, quantized to int8, rounded
// to bf16) are prepared once per gemm by GemmInputs.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_TRANSFORMS_GEMM_GEMMKERNEL_H
#define ATTN_LIB_TRANSFORMS_GEMM_GEMMKERNEL_H

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mlir::attn::gemm {

/// The instruction of the quantized kernels' int8 dot products.
enum class Int8Dot { Vpdpbusd, Vpmaddubsw };

/// Shapes and operands of one gemm, shared by the tiles.
struct GemmKernel {
  GemmOp op;
  Value input, weight, weight2, bias, bias2, rowScale, residual, output;
  int64_t k, n, blocks, blockSize;
  /// clamped_swiglu's sigmoid gain and clamp.
  double alpha = 0.0, limit = 0.0;
  /// The input norm: per-feature gain (and shift, for a layer norm), its
  /// epsilon and Gemma's gain offset; normGamma is null without one.
  Value normGamma, normBeta;
  double normEpsilon = 0.0;
  std::optional<double> normGainOffset;
  /// The input rows normalized in f32, when a kernel reads them as they are.
  Value normalizedInput;
  /// Lanes per vector and vectors per block row (blockSize / width).
  int64_t width, vectorsPerBlock;
  int64_t kUnroll;
  /// One-row tiles prefetch the weight this many k rows ahead (0: never).
  int64_t prefetchRows;
  /// The weights are one block widened to f32 on the stack ([1, K, NR]):
  /// every tile reads block 0 of them.
  bool widenedBlock = false;
  GemmEpilogue epilogue;
  VectorType vectorType;
  /// How the weight's vectors are loaded: f32, or bf16 then widened.
  VectorType weightVectorType;

  /// Quantized weights: the format, the slabs of each weight as
  /// [NB, K/32, slabBytes] bytes, and the input rows quantized per block of
  /// 32: int8 quads [M, K/4] (i32), scales [M, K/32] and the weight bytes'
  /// offset times each block's sum [M, K/32] (i32).
  PackedFormat format = PackedFormat::F32;
  Int8Dot dot = Int8Dot::Vpdpbusd;
  Value slabs, slabs2, quads, scales, corrections;
  int64_t groups = 0, slabBytes = 0;

  /// q8_0 through vpmaddubsw multiplies signed weights (the stored byte
  /// less 128) by the activations' magnitudes: no offset term to subtract.
  bool signedWeights() const {
    return dot == Int8Dot::Vpmaddubsw && format == PackedFormat::Q8_0;
  }

  /// AMX tiles for a bf16 weight: the input rows rounded to bf16 [M, K].
  bool amx = false;
  Value inputBf16;
  /// vdpbf16ps for a bf16 weight: the input rows rounded to bf16 and read
  /// as pairs [M, K/2] (i32); `dotPairs` while the tiles read the
  /// interleaved blocks below.
  bool bf16Dot = false, dotPairs = false;
  Value inputPairs;
  /// A thread's stack buffers: each weight's block interleaved into pairs of
  /// k rows ([K/2, 2 NR] bf16; AMX and vdpbf16ps), and the tiles' sums
  /// ([weights * amxRows, NR] f32) for AMX's epilogue.
  SmallVector<Value, 2> pairs;
  Value amxSums;
  /// Rows of one AMX group: 32 (two tiles of rows), 16 with a second weight
  /// (its accumulators take the other tile registers).
  int64_t amxRows() const { return weight2 ? 16 : 32; }
};

/// AMX tiles: 16 rows by 16 f32 outputs, fed 32 bf16 of k at a time.
constexpr int64_t kAmxRows = 16, kAmxColumns = 16, kAmxDepth = 32;

//===----------------------------------------------------------------------===//
// Builders every part uses (GemmKernel.cpp)
//===----------------------------------------------------------------------===//

Value indexConstant(OpBuilder &b, Location loc, int64_t value);
/// A vector of `type` with every lane `value` (f32).
Value splat(OpBuilder &b, Location loc, VectorType type, double value);
/// Loads `lanes` valid elements at `indices` of a row-major memref (all of
/// them when lanes == width); the rest read as zero.
Value loadVector(OpBuilder &b, Location loc, const GemmKernel &g, Value base,
                 ValueRange indices, int64_t lanes);
/// Stores the first `lanes` lanes of `value` (all of them when lanes ==
/// width) at `indices`.
void storeVector(OpBuilder &b, Location loc, const GemmKernel &g, Value value,
                 Value base, ValueRange indices, int64_t lanes);
/// Prefetches row `kk + ahead` of `buffers` ([blocks, rows, rowBytes]
/// bytes of each), every cache line of it, which past the block's last row
/// is a row of the next block: blocks lie back to back, and a thread's
/// blocks are a contiguous range. Past the last block it prefetches the last
/// row. Rows are k rows of an f32/bf16 weight, slabs of a quantized one.
void emitPrefetch(OpBuilder &b, Location loc, ArrayRef<Value> buffers,
                  int64_t blocks, int64_t rows, int64_t ahead, int64_t rowElements,
                  int64_t elementBytes, Value block, Value kk);
/// A tile's accumulators ((chain * weights + weight) * rows + row) *
/// vectors + j, the chains added up: (weight * rows + row) * vectors + j.
SmallVector<Value> sumChains(OpBuilder &b, Location loc, ValueRange acc,
                             int64_t chains);
/// An LLVM intrinsic by name: the x86 instructions vector ops do not reach.
Value callIntrinsic(OpBuilder &b, Location loc, Type type, StringRef name,
                    ValueRange operands);
/// Interleaves output block `block` of a bf16 weight ([blocks, K, NR]) into
/// `pairs` ([K/2, 2 NR]): row kk holds (w[2kk][n], w[2kk+1][n]) for each n,
/// the layout of tdpbf16ps's second operand and of vdpbf16ps's.
void emitPairRows(OpBuilder &b, Location loc, const GemmKernel &g, Value weight,
                  Value block, Value pairs);

//===----------------------------------------------------------------------===//
// The microkernels. Each returns the sums of one tile of `rows` rows
// (rowIndex) with output block `block`: element (w * rows + r) * vectors + j
// is vector j of row r with weight w.
//===----------------------------------------------------------------------===//

/// f32 FMAs on an f32 weight or a bf16 weight widened as it is loaded
/// (FmaMicrokernel.cpp).
SmallVector<Value> emitFmaProducts(OpBuilder &b, Location loc, const GemmKernel &g,
                                   ArrayRef<Value> rowIndex, Value block,
                                   int64_t rows);
/// int8 dot products of a q8_0 / q4_0 weight with the quantized input rows,
/// vpdpbusd or vpmaddubsw as g.dot says (Int8Microkernel.cpp).
SmallVector<Value> emitInt8Products(OpBuilder &b, Location loc, const GemmKernel &g,
                                    ArrayRef<Value> rowIndex, Value block,
                                    int64_t rows);
/// vdpbf16ps on the input rows as bf16 pairs (g.inputPairs) and the
/// interleaved blocks (g.pairs) (Bf16DotMicrokernel.cpp).
SmallVector<Value> emitBf16DotProducts(OpBuilder &b, Location loc, const GemmKernel &g,
                                       ArrayRef<Value> rowIndex, int64_t rows);
/// One AMX group: g.amxRows() rows from `row0`, from the interleaved blocks
/// `pairs` (one per weight), its sums stored to `sums` ([weights *
/// amxRows, NR] f32) row by row: AMX tiles cannot be returned as values
/// (AmxMicrokernel.cpp).
void emitAmxProducts(OpBuilder &b, Location loc, const GemmKernel &g, Value row0,
                     ArrayRef<Value> pairs, Value sums);

//===----------------------------------------------------------------------===//
// The input rows the microkernels read (GemmInputs.cpp)
//===----------------------------------------------------------------------===//

/// The normalized input rows in a new [M, K] f32 buffer, which becomes the
/// input the f32 kernels read (f32 and bf16 weights; AMX rounds it).
void emitNormalizedInput(OpBuilder &b, Location loc, GemmKernel &g, Value rows);
/// The input rows quantized per block of 32 for the int8 dot products
/// (g.quads, g.scales, g.corrections), normalized first with an input norm.
LogicalResult emitQuantizedInput(OpBuilder &b, Location loc, GemmKernel &g,
                                 Value rows);
/// The input rows rounded to bf16: [M, K] bf16 for the AMX tiles
/// (g.inputBf16), or with `asPairs` [M, K/2] i32 for vdpbf16ps's broadcasts
/// (g.inputPairs).
void emitBf16Input(OpBuilder &b, Location loc, GemmKernel &g, Value rows,
                   bool asPairs = false);

} // namespace mlir::attn::gemm

#endif // ATTN_LIB_TRANSFORMS_GEMM_GEMMKERNEL_H
