//===- LowerGemm.cpp - attn.gemm to register-tiled vector code ------------===//
//
// attn.gemm on memrefs becomes a BLAS-style kernel:
//
//   for each chunk of input rows that fits the L2 budget:      (sequential)
//     scf.parallel over blocks of NR output features:            (threads)
//       for each tile of MR rows (then the remaining rows, 1 at a time):
//         acc[MR][NR/W] = 0                                      (registers)
//         for k (unrolled):
//           b[j] = load weight[block, k, j*W : (j+1)*W]          (contiguous)
//           acc[r][j] += broadcast(input[m + r, k]) * b[j]       (FMAs)
//         epilogue on the accumulators, one store per output vector
//
// The packed weight block is read contiguously; every FMA's operands come
// from registers or a broadcast load. A bf16 weight is widened to f32 as it
// is loaded (the products and sums stay f32): half the bytes to stream. A one-row tile (decode, or the rows
// left over) keeps several independent accumulator chains so FMA latency
// does not bound it: it runs at the speed the weights stream from memory.
//
// A q8_0 / q4_0 weight (PackedWeight.h) keeps the same blocks and tiles, but
// the k loop walks blocks of 32 inputs: the input rows, quantized to int8
// per block of 32 once per gemm, meet the weight bytes in int8 dot products
// (4 products per 32-bit lane, summed in int32: one vpdpbusd with VNNI,
// vpmaddubsw then vpmaddwd without), and each block's sums join the f32
// accumulators times the two scales.
//
// With AMX (bf16 weights, a prefill's rows) the register tile is a group of
// 32 rows times the block in 16 x 16 f32 tiles, fed by tdpbf16ps from the
// input rows rounded to bf16 and the block interleaved into pairs of k rows
// (the tiles' layout) once per chunk.
//
// A gemm with an input norm (rms_norm / layer_norm fused into it) computes
// each row's statistics, then normalizes the row as it quantizes it; the
// kernels that read f32 rows as they are get a normalized copy first.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"
#include "attn/Dialect/Attn/Utils/Activations.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

#include <cmath>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_LOWERGEMMPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

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

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value splat(OpBuilder &b, Location loc, VectorType type, double value) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
}

/// Loads `lanes` valid elements at `indices` of a row-major memref (all of
/// them when lanes == width); the rest read as zero.
Value loadVector(OpBuilder &b, Location loc, const GemmKernel &g, Value base,
                 ValueRange indices, int64_t lanes) {
  if (lanes == g.width)
    return vector::LoadOp::create(b, loc, g.vectorType, base, indices);
  auto maskType = VectorType::get({g.width}, b.getI1Type());
  Value mask = vector::ConstantMaskOp::create(b, loc, maskType,
                                              ArrayRef<int64_t>{lanes});
  return vector::MaskedLoadOp::create(b, loc, g.vectorType, base, indices, mask,
                                      splat(b, loc, g.vectorType, 0.0));
}

void storeVector(OpBuilder &b, Location loc, const GemmKernel &g, Value value,
                 Value base, ValueRange indices, int64_t lanes) {
  if (lanes == g.width) {
    vector::StoreOp::create(b, loc, value, base, indices);
    return;
  }
  auto maskType = VectorType::get({g.width}, b.getI1Type());
  Value mask = vector::ConstantMaskOp::create(b, loc, maskType,
                                              ArrayRef<int64_t>{lanes});
  vector::MaskedStoreOp::create(b, loc, base, indices, mask, value);
}

/// Prefetches row `kk + ahead` of `buffers` ([blocks, rows, rowBytes]
/// bytes of each), every cache line of it, which past the block's last row
/// is a row of the next block: blocks lie back to back, and a thread's
/// blocks are a contiguous range. Past the last block it prefetches the last
/// row. Rows are k rows of an f32/bf16 weight, slabs of a quantized one.
void emitPrefetch(OpBuilder &b, Location loc, ArrayRef<Value> buffers,
                  int64_t blocks, int64_t rows, int64_t ahead, int64_t rowElements,
                  int64_t elementBytes, Value block, Value kk) {
  Value aheadRow = arith::AddIOp::create(b, loc, kk, indexConstant(b, loc, ahead));
  Value rowCount = indexConstant(b, loc, rows);
  Value nextBlock = arith::AddIOp::create(
      b, loc, block, arith::DivUIOp::create(b, loc, aheadRow, rowCount));
  Value lastBlock = indexConstant(b, loc, blocks - 1);
  Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, nextBlock, lastBlock);
  Value row = arith::SelectOp::create(b, loc, past, indexConstant(b, loc, rows - 1),
                                      arith::RemUIOp::create(b, loc, aheadRow, rowCount));
  nextBlock = arith::SelectOp::create(b, loc, past, lastBlock, nextBlock);
  int64_t lineElements = 64 / elementBytes;
  for (int64_t lane = 0; lane < rowElements; lane += lineElements)
    for (Value buffer : buffers)
      if (buffer)
        memref::PrefetchOp::create(b, loc, buffer,
                                   ValueRange{nextBlock, row, indexConstant(b, loc, lane)},
                                   /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
}

/// A tile's accumulators ((chain * weights + weight) * rows + row) *
/// vectors + j, the chains added up: (weight * rows + row) * vectors + j.
SmallVector<Value> sumChains(OpBuilder &b, Location loc, ValueRange acc,
                             int64_t chains) {
  int64_t perChain = acc.size() / chains;
  SmallVector<Value> totals;
  for (int64_t i = 0; i < perChain; ++i) {
    Value sum = acc[i];
    for (int64_t c = 1; c < chains; ++c)
      sum = arith::AddFOp::create(b, loc, sum, acc[c * perChain + i]);
    totals.push_back(sum);
  }
  return totals;
}

/// The f32 products of one tile of `rows` rows (rowIndex) with output block
/// `block` of an f32 or bf16 weight: element (w * rows + r) * vectors + j is
/// vector j of row r with weight w.
SmallVector<Value> emitFloatProducts(OpBuilder &b, Location loc, const GemmKernel &g,
                                     ArrayRef<Value> rowIndex, Value block,
                                     int64_t rows) {
  const int64_t vectors = g.vectorsPerBlock;
  const int64_t weights = g.weight2 ? 2 : 1;
  // One row has too few independent FMAs to hide their latency: keep one
  // accumulator chain per unrolled k step and add them up at the end.
  const int64_t chains = rows == 1 ? g.kUnroll : 1;
  auto accIndex = [&](int64_t chain, int64_t weight, int64_t row, int64_t j) {
    return ((chain * weights + weight) * rows + row) * vectors + j;
  };
  int64_t numAcc = chains * weights * rows * vectors;
  SmallVector<Value> zeros(numAcc, splat(b, loc, g.vectorType, 0.0));
  SmallVector<Value> lane;
  for (int64_t j = 0; j < vectors; ++j)
    lane.push_back(indexConstant(b, loc, j * g.width));

  auto kLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.k),
      indexConstant(b, loc, g.kUnroll), zeros,
      [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
        SmallVector<Value> acc(carried);
        for (int64_t u = 0; u < g.kUnroll; ++u) {
          Value kk = u == 0 ? k
                            : arith::AddIOp::create(nb, l, k,
                                                    indexConstant(nb, l, u));
          int64_t chain = chains == 1 ? 0 : u;
          if (rows == 1 && g.prefetchRows > 0)
            emitPrefetch(nb, l, {g.weight, g.weight2}, g.blocks, g.k, g.prefetchRows,
                         g.blockSize, g.weightVectorType.getElementTypeBitWidth() / 8,
                         block, kk);
          SmallVector<Value> bVec[2];
          for (int64_t w = 0; w < weights; ++w) {
            Value weight = w == 0 ? g.weight : g.weight2;
            for (int64_t j = 0; j < vectors; ++j) {
              Value loaded = vector::LoadOp::create(
                  nb, l, g.weightVectorType, weight,
                  ValueRange{g.widenedBlock ? indexConstant(nb, l, 0) : block, kk, lane[j]});
              // bf16 is the top half of an f32: widening is exact.
              if (g.weightVectorType != g.vectorType)
                loaded = arith::ExtFOp::create(nb, l, g.vectorType, loaded);
              bVec[w].push_back(loaded);
            }
          }
          for (int64_t r = 0; r < rows; ++r) {
            Value a = memref::LoadOp::create(nb, l, g.input,
                                             ValueRange{rowIndex[r], kk});
            Value aVec = vector::BroadcastOp::create(nb, l, g.vectorType, a);
            for (int64_t w = 0; w < weights; ++w)
              for (int64_t j = 0; j < vectors; ++j) {
                Value &slot = acc[accIndex(chain, w, r, j)];
                slot = vector::FMAOp::create(nb, l, g.vectorType, aVec,
                                             bVec[w][j], slot);
              }
          }
        }
        scf::YieldOp::create(nb, l, acc);
      });

  return sumChains(b, loc, kLoop.getResults(), chains);
}

Value callIntrinsic(OpBuilder &b, Location loc, Type type, StringRef name,
                    ValueRange operands) {
  return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name), operands)
      ->getResult(0);
}

/// vpdpbusd: each i32 lane of `acc` plus the 4 products of its unsigned
/// bytes of `weights` with its signed bytes of `inputs`.
Value dotInt8(OpBuilder &b, Location loc, int64_t width, Value acc, Value weights,
              Value inputs) {
  return callIntrinsic(b, loc, acc.getType(),
                       width == 16 ? "llvm.x86.avx512.vpdpbusd.512"
                                   : "llvm.x86.avx512.vpdpbusd.256",
                       ValueRange{acc, weights, inputs});
}

/// vpmaddubsw: each i16 lane the sum of the products of its two unsigned
/// bytes of `a` with its two signed bytes of `s` (saturating, which the
/// callers' bounds rule out).
Value multiplyBytePairs(OpBuilder &b, Location loc, int64_t width, Value a, Value s) {
  auto type = VectorType::get({2 * width}, b.getI16Type());
  return callIntrinsic(b, loc, type,
                       width == 16 ? "llvm.x86.avx512.pmaddubs.w.512"
                                   : "llvm.x86.avx2.pmadd.ub.sw",
                       ValueRange{a, s});
}

/// vpmaddwd by ones: each i32 lane the sum of its two i16 lanes of `pairs`.
Value sumPairs(OpBuilder &b, Location loc, int64_t width, Value pairs) {
  auto type = VectorType::get({width}, b.getI32Type());
  Value ones = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(cast<VectorType>(pairs.getType()),
                                     b.getI16IntegerAttr(1)));
  return callIntrinsic(b, loc, type,
                       width == 16 ? "llvm.x86.avx512.pmaddw.d.512"
                                   : "llvm.x86.avx2.pmadd.wd",
                       ValueRange{pairs, ones});
}

/// `bytes` negated where `signs` is negative and zeroed where it is zero
/// (vpsignb; AVX-512 has none, so a compare and a masked negation there).
Value applySigns(OpBuilder &b, Location loc, int64_t width, Value bytes, Value signs) {
  if (width == 8)
    return callIntrinsic(b, loc, bytes.getType(), "llvm.x86.avx2.psign.b",
                         ValueRange{bytes, signs});
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(cast<VectorType>(bytes.getType()),
                                     b.getI8IntegerAttr(0)));
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, signs, zero);
  // Where the sign is zero the other factor, |signs|, is zero too.
  return arith::SelectOp::create(b, loc, negative,
                                 arith::SubIOp::create(b, loc, zero, bytes), bytes);
}

/// emitFloatProducts for a q8_0 / q4_0 weight and the quantized input rows.
SmallVector<Value> emitQuantizedProducts(OpBuilder &b, Location loc,
                                         const GemmKernel &g,
                                         ArrayRef<Value> rowIndex, Value block,
                                         int64_t rows) {
  const int64_t vectors = g.vectorsPerBlock, width = g.width;
  const int64_t weights = g.weight2 ? 2 : 1;
  const bool q8 = g.format == PackedFormat::Q8_0;
  const bool vnni = g.dot == Int8Dot::Vpdpbusd;
  // q4_0 without VNNI: a block's nibble products, at most 16 * 15 * 127 per
  // lane, add up in int16 and are widened once per block.
  const bool int16Sums = !vnni && !q8;
  const int64_t quadsPerBlock = kQuantBlock / 4;
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto intType = VectorType::get({width}, i32);
  auto byteType = VectorType::get({4 * width}, i8);
  auto sumType = int16Sums ? VectorType::get({2 * width}, b.getI16Type()) : intType;
  const int64_t perChain = weights * rows * vectors;
  // One row: two integer chains per block (even and odd quads) so the dot
  // products' latency does not bound it, where the registers hold them
  // (32 with AVX-512, 16 with AVX2) beside the weights and the inputs.
  const int64_t registers = width == 16 ? 32 : 16;
  const int64_t chains =
      rows == 1 && 3 * perChain + weights * vectors + 2 <= registers ? 2 : 1;
  auto accIndex = [&](int64_t w, int64_t r, int64_t j) {
    return (w * rows + r) * vectors + j;
  };
  SmallVector<Value> zeros(perChain, splat(b, loc, g.vectorType, 0.0));
  Value zeroSum = arith::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(sumType, int16Sums ? b.getI16IntegerAttr(0)
                                                : b.getI32IntegerAttr(0)));
  auto byteSplat = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantOp::create(
        nb, l, DenseElementsAttr::get(byteType, nb.getI8IntegerAttr(v)));
  };
  const int64_t nr = g.blockSize;
  const int64_t scaleStart = quantWeightBytes(g.format) * nr;

  auto groupLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.groups),
      indexConstant(b, loc, 1), zeros,
      [&](OpBuilder &nb, Location l, Value group, ValueRange carried) {
        if (rows == 1 && g.prefetchRows > 0)
          emitPrefetch(nb, l, {g.slabs, g.slabs2}, g.blocks, g.groups, g.prefetchRows,
                       g.slabBytes, 1, block, group);
        SmallVector<Value> sums(chains * perChain, zeroSum);
        Value firstQuad = arith::MulIOp::create(nb, l, group,
                                                indexConstant(nb, l, quadsPerBlock));
        SmallVector<Value> packedBytes[2];
        for (int64_t q = 0; q < quadsPerBlock; ++q) {
          SmallVector<Value> w8[2];
          for (int64_t w = 0; w < weights; ++w) {
            Value slabs = w == 0 ? g.slabs : g.slabs2;
            for (int64_t j = 0; j < vectors; ++j) {
              if (q8) {
                Value bytes = vector::LoadOp::create(
                    nb, l, byteType, slabs,
                    ValueRange{block, group, indexConstant(nb, l, (q * nr + j * width) * 4)});
                // The stored byte is the weight plus 128: flipping its top
                // bit gives the signed weight.
                if (g.signedWeights())
                  bytes = arith::XOrIOp::create(nb, l, bytes, byteSplat(nb, l, -128));
                w8[w].push_back(bytes);
                continue;
              }
              // q4_0: quads q and q + 4 share bytes (low, high nibble).
              if (q < quadsPerBlock / 2)
                packedBytes[w].push_back(vector::LoadOp::create(
                    nb, l, byteType, slabs,
                    ValueRange{block, group, indexConstant(nb, l, (q * nr + j * width) * 4)}));
              Value bytes = packedBytes[w][(q % (quadsPerBlock / 2)) * vectors + j];
              w8[w].push_back(q < quadsPerBlock / 2
                                  ? arith::AndIOp::create(nb, l, bytes, byteSplat(nb, l, 15)).getResult()
                                  : arith::ShRUIOp::create(nb, l, bytes, byteSplat(nb, l, 4)).getResult());
            }
          }
          Value quad = arith::AddIOp::create(nb, l, firstQuad, indexConstant(nb, l, q));
          int64_t chain = q % chains;
          for (int64_t r = 0; r < rows; ++r) {
            Value word = memref::LoadOp::create(nb, l, g.quads, ValueRange{rowIndex[r], quad});
            Value inputs = vector::BitCastOp::create(
                nb, l, byteType, vector::BroadcastOp::create(nb, l, intType, word));
            Value magnitudes;
            if (g.signedWeights())
              magnitudes = math::AbsIOp::create(nb, l, inputs);
            for (int64_t w = 0; w < weights; ++w)
              for (int64_t j = 0; j < vectors; ++j) {
                Value &slot = sums[chain * perChain + accIndex(w, r, j)];
                if (vnni) {
                  slot = dotInt8(nb, l, width, slot, w8[w][j], inputs);
                } else if (int16Sums) {
                  slot = arith::AddIOp::create(
                      nb, l, slot, multiplyBytePairs(nb, l, width, w8[w][j], inputs));
                } else {
                  // x * w = |x| * (w with the sign of x): a pair of these is
                  // at most 2 * 127 * 127, inside int16.
                  Value pairs = multiplyBytePairs(
                      nb, l, width, magnitudes,
                      applySigns(nb, l, width, w8[w][j], inputs));
                  slot = arith::AddIOp::create(nb, l, slot, sumPairs(nb, l, width, pairs));
                }
              }
          }
        }
        if (int16Sums)
          for (Value &sum : sums)
            sum = sumPairs(nb, l, width, sum);
        // acc += (sum - offset * sum(inputs)) * d_weight * d_input.
        SmallVector<Value> acc(carried);
        auto halfType = VectorType::get({width}, nb.getF16Type());
        auto scaleBytesType = VectorType::get({2 * width}, i8);
        SmallVector<Value> weightScale[2];
        for (int64_t w = 0; w < weights; ++w)
          for (int64_t j = 0; j < vectors; ++j) {
            Value bytes = vector::LoadOp::create(
                nb, l, scaleBytesType, w == 0 ? g.slabs : g.slabs2,
                ValueRange{block, group, indexConstant(nb, l, scaleStart + 2 * j * width)});
            Value halves = vector::BitCastOp::create(nb, l, halfType, bytes);
            weightScale[w].push_back(
                arith::ExtFOp::create(nb, l, g.vectorType, halves).getResult());
          }
        for (int64_t r = 0; r < rows; ++r) {
          Value inputScale = vector::BroadcastOp::create(
              nb, l, g.vectorType,
              memref::LoadOp::create(nb, l, g.scales, ValueRange{rowIndex[r], group}));
          Value correction;
          if (g.corrections)
            correction = vector::BroadcastOp::create(
                nb, l, intType,
                memref::LoadOp::create(nb, l, g.corrections, ValueRange{rowIndex[r], group}));
          for (int64_t w = 0; w < weights; ++w)
            for (int64_t j = 0; j < vectors; ++j) {
              Value sum = sums[accIndex(w, r, j)];
              for (int64_t c = 1; c < chains; ++c)
                sum = arith::AddIOp::create(nb, l, sum, sums[c * perChain + accIndex(w, r, j)]);
              if (correction)
                sum = arith::SubIOp::create(nb, l, sum, correction);
              Value scale = arith::MulFOp::create(nb, l, weightScale[w][j], inputScale);
              Value &slot = acc[accIndex(w, r, j)];
              slot = vector::FMAOp::create(
                  nb, l, g.vectorType,
                  arith::SIToFPOp::create(nb, l, g.vectorType, sum), scale, slot);
            }
        }
        scf::YieldOp::create(nb, l, acc);
      });
  return SmallVector<Value>(groupLoop.getResults());
}

/// The sum of products for weight w, tile row r and vector j of the block.
using TotalFn = llvm::function_ref<Value(int64_t w, int64_t r, int64_t j)>;

/// The epilogue of the rows `rowIndex` of output block `block`: row scale,
/// bias, activation, gate, residual, then one store per output vector.
/// `validLanes[j]` is how many lanes of the block's vector j lie below N (a
/// partial last block has fewer).
void emitEpilogue(OpBuilder &b, Location loc, const GemmKernel &g,
                  ArrayRef<Value> rowIndex, Value block,
                  ArrayRef<int64_t> validLanes, TotalFn total) {
  const int64_t vectors = g.vectorsPerBlock;
  SmallVector<Value> lane;
  for (int64_t j = 0; j < vectors; ++j)
    lane.push_back(indexConstant(b, loc, j * g.width));
  Value blockStart =
      arith::MulIOp::create(b, loc, block, indexConstant(b, loc, g.blockSize));
  for (int64_t r = 0, rows = rowIndex.size(); r < rows; ++r) {
    Value scale;
    if (g.rowScale) {
      Value s = memref::LoadOp::create(b, loc, g.rowScale, ValueRange{rowIndex[r]});
      scale = vector::BroadcastOp::create(b, loc, g.vectorType, s);
    }
    for (int64_t j = 0; j < vectors; ++j) {
      int64_t lanes = validLanes[j];
      if (lanes <= 0)
        continue;
      Value column = arith::AddIOp::create(b, loc, blockStart, lane[j]);
      Value v = total(0, r, j);
      if (scale)
        v = arith::MulFOp::create(b, loc, v, scale);
      if (g.bias)
        v = arith::AddFOp::create(
            b, loc, v, loadVector(b, loc, g, g.bias, ValueRange{column}, lanes));
      switch (g.epilogue) {
      case GemmEpilogue::None:
        break;
      case GemmEpilogue::GeluTanh:
        v = buildGelu(b, loc, v, GeluApproximation::Tanh);
        break;
      case GemmEpilogue::GeluErf:
        v = buildGelu(b, loc, v, GeluApproximation::Erf);
        break;
      case GemmEpilogue::Silu:
        v = buildSilu(b, loc, v);
        break;
      case GemmEpilogue::Relu:
        v = arith::MaximumFOp::create(b, loc, v, splat(b, loc, g.vectorType, 0.0));
        break;
      case GemmEpilogue::Swiglu:
      case GemmEpilogue::GegluTanh:
      case GemmEpilogue::GegluErf:
      case GemmEpilogue::ClampedSwiglu: {
        Value up = total(1, r, j);
        if (scale)
          up = arith::MulFOp::create(b, loc, up, scale);
        if (g.bias2)
          up = arith::AddFOp::create(
              b, loc, up, loadVector(b, loc, g, g.bias2, ValueRange{column}, lanes));
        if (g.epilogue == GemmEpilogue::ClampedSwiglu) {
          v = buildClampedSwiglu(b, loc, v, up, g.alpha, g.limit);
          break;
        }
        Value gate = g.epilogue == GemmEpilogue::Swiglu
                         ? buildSilu(b, loc, v)
                         : buildGelu(b, loc, v,
                                     g.epilogue == GemmEpilogue::GegluTanh
                                         ? GeluApproximation::Tanh
                                         : GeluApproximation::Erf);
        v = arith::MulFOp::create(b, loc, gate, up);
        break;
      }
      }
      if (g.residual)
        v = arith::AddFOp::create(
            b, loc, v,
            loadVector(b, loc, g, g.residual, ValueRange{rowIndex[r], column}, lanes));
      storeVector(b, loc, g, v, g.output, ValueRange{rowIndex[r], column}, lanes);
    }
  }
}

/// vdpbf16ps (AVX-512 BF16): each f32 lane of `acc` plus the two products of
/// its pair of bf16 in `a` and in `b`.
Value dotBf16(OpBuilder &b, Location loc, Value acc, Value a, Value pairsOfB) {
  return callIntrinsic(b, loc, acc.getType(), "llvm.x86.avx512bf16.dpbf16ps.512",
                       ValueRange{acc, a, pairsOfB});
}

/// The f32 products of one tile through vdpbf16ps, indexed as
/// emitFloatProducts': the k loop runs over pairs of k, each row's pair
/// (g.inputPairs) broadcast against 16 pairs of the interleaved weight
/// block (g.pairs).
SmallVector<Value> emitBf16DotProducts(OpBuilder &b, Location loc, const GemmKernel &g,
                                       ArrayRef<Value> rowIndex, int64_t rows) {
  const int64_t vectors = g.vectorsPerBlock;
  const int64_t weights = g.pairs.size();
  const int64_t pairCount = g.k / 2;
  const int64_t unroll = pairCount % g.kUnroll == 0 ? g.kUnroll : 1;
  const int64_t chains = rows == 1 ? unroll : 1;
  auto accIndex = [&](int64_t chain, int64_t weight, int64_t row, int64_t j) {
    return ((chain * weights + weight) * rows + row) * vectors + j;
  };
  SmallVector<Value> zeros(chains * weights * rows * vectors,
                           splat(b, loc, g.vectorType, 0.0));
  auto pairType = VectorType::get({2 * g.width}, b.getBF16Type());
  auto laneType = VectorType::get({g.width}, b.getI32Type());
  auto kLoop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, pairCount),
      indexConstant(b, loc, unroll), zeros,
      [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
        SmallVector<Value> acc(carried);
        for (int64_t u = 0; u < unroll; ++u) {
          Value kk = u == 0 ? k
                            : arith::AddIOp::create(nb, l, k, indexConstant(nb, l, u));
          int64_t chain = chains == 1 ? 0 : u;
          SmallVector<Value> bPairs[2];
          for (int64_t w = 0; w < weights; ++w)
            for (int64_t j = 0; j < vectors; ++j)
              bPairs[w].push_back(vector::LoadOp::create(
                  nb, l, pairType, g.pairs[w],
                  ValueRange{kk, indexConstant(nb, l, 2 * j * g.width)}));
          for (int64_t r = 0; r < rows; ++r) {
            Value pair = memref::LoadOp::create(nb, l, g.inputPairs,
                                                ValueRange{rowIndex[r], kk});
            Value a = vector::BitCastOp::create(
                nb, l, pairType, vector::BroadcastOp::create(nb, l, laneType, pair));
            for (int64_t w = 0; w < weights; ++w)
              for (int64_t j = 0; j < vectors; ++j) {
                Value &slot = acc[accIndex(chain, w, r, j)];
                slot = dotBf16(nb, l, slot, a, bPairs[w][j]);
              }
          }
        }
        scf::YieldOp::create(nb, l, acc);
      });
  return sumChains(b, loc, kLoop.getResults(), chains);
}

/// One register tile: `rows` rows from `row0` of output block `block`.
void emitTile(OpBuilder &b, Location loc, const GemmKernel &g, Value row0,
              Value block, int64_t rows, ArrayRef<int64_t> validLanes) {
  SmallVector<Value> rowIndex;
  for (int64_t r = 0; r < rows; ++r)
    rowIndex.push_back(r == 0 ? row0
                              : arith::AddIOp::create(b, loc, row0,
                                                      indexConstant(b, loc, r)));
  SmallVector<Value> totals =
      g.dotPairs            ? emitBf16DotProducts(b, loc, g, rowIndex, rows)
      : isQuantized(g.format) ? emitQuantizedProducts(b, loc, g, rowIndex, block, rows)
                              : emitFloatProducts(b, loc, g, rowIndex, block, rows);
  emitEpilogue(b, loc, g, rowIndex, block, validLanes,
               [&](int64_t w, int64_t r, int64_t j) {
                 return totals[(w * rows + r) * g.vectorsPerBlock + j];
               });
}

/// AMX tiles: 16 rows by 16 f32 outputs, fed 32 bf16 of k at a time.
constexpr int64_t kAmxRows = 16, kAmxColumns = 16, kAmxDepth = 32;

/// Interleaves output block `block` of a bf16 weight ([blocks, K, NR]) into
/// `pairs` ([K/2, 2 NR]): row kk holds (w[2kk][n], w[2kk+1][n]) for each n,
/// the layout of tdpbf16ps's second operand.
void emitPairRows(OpBuilder &b, Location loc, const GemmKernel &g, Value weight,
                  Value block, Value pairs) {
  auto halfType = VectorType::get({g.width}, b.getBF16Type());
  scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.k / 2),
      indexConstant(b, loc, 1), ValueRange{},
      [&](OpBuilder &nb, Location l, Value kk, ValueRange) {
        Value even = arith::MulIOp::create(nb, l, kk, indexConstant(nb, l, 2));
        Value odd = arith::AddIOp::create(nb, l, even, indexConstant(nb, l, 1));
        for (int64_t j = 0; j < g.vectorsPerBlock; ++j) {
          Value lane = indexConstant(nb, l, j * g.width);
          Value lo = vector::LoadOp::create(nb, l, halfType, weight,
                                            ValueRange{block, even, lane});
          Value hi = vector::LoadOp::create(nb, l, halfType, weight,
                                            ValueRange{block, odd, lane});
          vector::StoreOp::create(nb, l, vector::InterleaveOp::create(nb, l, lo, hi),
                                  pairs,
                                  ValueRange{kk, indexConstant(nb, l, 2 * j * g.width)});
        }
        scf::YieldOp::create(nb, l);
      });
}

/// One AMX group: g.amxRows() rows from `row0` of output block `block`,
/// from the interleaved blocks `pairs` (one per weight). The tiles
/// accumulate across the whole k loop, unrolled (a tile cannot be a loop's
/// carried value through the LLVM lowering), then land in `sums`
/// ([weights * amxRows, NR] f32) for the epilogue, one row at a time.
void emitAmxGroup(OpBuilder &b, Location loc, const GemmKernel &g, Value row0,
                  Value block, ArrayRef<Value> pairs, Value sums,
                  ArrayRef<int64_t> validLanes) {
  const int64_t rowTiles = g.amxRows() / kAmxRows;
  const int64_t columnTiles = g.blockSize / kAmxColumns;
  const int64_t weights = pairs.size();
  auto operandType = amx::TileType::get({kAmxRows, kAmxDepth}, b.getBF16Type());
  auto accType = amx::TileType::get({kAmxRows, kAmxColumns}, b.getF32Type());
  auto accIndex = [&](int64_t w, int64_t i, int64_t j) {
    return (w * rowTiles + i) * columnTiles + j;
  };
  SmallVector<Value> acc;
  for (int64_t t = 0; t < weights * rowTiles * columnTiles; ++t)
    acc.push_back(amx::TileZeroOp::create(b, loc, accType));
  SmallVector<Value> rowStart;
  for (int64_t i = 0; i < rowTiles; ++i)
    rowStart.push_back(arith::AddIOp::create(b, loc, row0,
                                             indexConstant(b, loc, i * kAmxRows)));
  for (int64_t k0 = 0; k0 < g.k; k0 += kAmxDepth) {
    Value k = indexConstant(b, loc, k0);
    Value pairRow = indexConstant(b, loc, k0 / 2);
    SmallVector<Value> a;
    for (int64_t i = 0; i < rowTiles; ++i)
      a.push_back(amx::TileLoadOp::create(b, loc, operandType, g.inputBf16,
                                          ValueRange{rowStart[i], k}));
    for (int64_t w = 0; w < weights; ++w)
      for (int64_t j = 0; j < columnTiles; ++j) {
        Value bTile = amx::TileLoadOp::create(
            b, loc, operandType, pairs[w],
            ValueRange{pairRow, indexConstant(b, loc, 2 * j * kAmxColumns)});
        for (int64_t i = 0; i < rowTiles; ++i) {
          Value &slot = acc[accIndex(w, i, j)];
          slot = amx::TileMulFOp::create(b, loc, accType, a[i], bTile, slot);
        }
      }
  }
  for (int64_t w = 0; w < weights; ++w)
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t j = 0; j < columnTiles; ++j)
        amx::TileStoreOp::create(
            b, loc, sums,
            ValueRange{indexConstant(b, loc, w * g.amxRows() + i * kAmxRows),
                       indexConstant(b, loc, j * kAmxColumns)},
            acc[accIndex(w, i, j)]);
  scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, g.amxRows()),
      indexConstant(b, loc, 1), ValueRange{},
      [&](OpBuilder &nb, Location l, Value r, ValueRange) {
        Value row = arith::AddIOp::create(nb, l, row0, r);
        emitEpilogue(nb, l, g, {row}, block, validLanes,
                     [&](int64_t w, int64_t, int64_t j) -> Value {
                       Value sumRow = arith::AddIOp::create(
                           nb, l, r, indexConstant(nb, l, w * g.amxRows()));
                       return vector::LoadOp::create(
                           nb, l, g.vectorType, sums,
                           ValueRange{sumRow, indexConstant(nb, l, j * g.width)});
                     });
        scf::YieldOp::create(nb, l);
      });
}

void emitTiles(OpBuilder &b, Location loc, const GemmKernel &g, int64_t tileRows,
               Value rowBegin, Value rowEnd, Value block,
               ArrayRef<int64_t> validLanes);

/// Rows of a chunk from which a bf16 weight block is widened to f32 once
/// instead of in every tile: the widening then costs 1/rows of a tile's.
constexpr int64_t kWidenRows = 16;
/// The largest widened block ([K, NR] f32 on a thread's stack, in L2).
constexpr int64_t kWidenBytes = 256 * 1024;
/// Rows of a chunk from which vdpbf16ps's interleaved copy of a block pays.
constexpr int64_t kDotRows = 8;

/// Every tile of rows [rowBegin, rowEnd) for output block `block`. With
/// 8-lane vectors a bf16 weight meets a chunk of kWidenRows or more rows
/// widened to f32 first, and the tiles run the f32 kernel on the cached
/// copy: AVX2's 4-row tiles would widen every vector again for every 4 rows
/// (LLaMA-110M bf16 prefill on a Zen 1 EPYC 245 against f32's 336 tok/s).
/// AVX-512's 8-row tiles amortize it (bf16 prefill there equals f32's).
void emitBlock(OpBuilder &b, Location loc, const GemmKernel &g, int64_t tileRows,
               Value rowBegin, Value rowEnd, Value block,
               ArrayRef<int64_t> validLanes) {
  if (g.amx) {
    // Whole AMX groups, then the f32 kernel for the rows left over.
    Value groupRows = indexConstant(b, loc, g.amxRows());
    Value groups = arith::DivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, rowEnd, rowBegin), groupRows);
    Value amxEnd = arith::AddIOp::create(
        b, loc, rowBegin, arith::MulIOp::create(b, loc, groups, groupRows));
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, groups,
                                      indexConstant(b, loc, 0));
    scf::IfOp::create(b, loc, any, [&](OpBuilder &tb, Location tl) {
      emitPairRows(tb, tl, g, g.weight, block, g.pairs[0]);
      if (g.weight2)
        emitPairRows(tb, tl, g, g.weight2, block, g.pairs[1]);
      scf::ForOp::create(tb, tl, rowBegin, amxEnd, groupRows, ValueRange{},
                         [&](OpBuilder &nb, Location l, Value row, ValueRange) {
                           emitAmxGroup(nb, l, g, row, block, g.pairs, g.amxSums,
                                        validLanes);
                           scf::YieldOp::create(nb, l);
                         });
      scf::YieldOp::create(tb, tl);
    });
    emitTiles(b, loc, g, tileRows, amxEnd, rowEnd, block, validLanes);
    return;
  }
  if (g.bf16Dot) {
    // Each block interleaved once per chunk for vdpbf16ps where the chunk
    // has rows enough to repay the copy; the widening kernel otherwise.
    Value count = arith::SubIOp::create(b, loc, rowEnd, rowBegin);
    Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, count,
                                       indexConstant(b, loc, kDotRows));
    scf::IfOp::create(
        b, loc, many,
        [&](OpBuilder &tb, Location tl) {
          GemmKernel dot = g;
          dot.dotPairs = true;
          dot.prefetchRows = 0;
          emitPairRows(tb, tl, g, g.weight, block, g.pairs[0]);
          if (g.weight2)
            emitPairRows(tb, tl, g, g.weight2, block, g.pairs[1]);
          emitTiles(tb, tl, dot, tileRows, rowBegin, rowEnd, block, validLanes);
          scf::YieldOp::create(tb, tl);
        },
        [&](OpBuilder &eb, Location el) {
          emitTiles(eb, el, g, tileRows, rowBegin, rowEnd, block, validLanes);
          scf::YieldOp::create(eb, el);
        });
    return;
  }
  int64_t staticRows = cast<MemRefType>(g.output.getType()).getDimSize(0);
  if (g.weightVectorType == g.vectorType || isQuantized(g.format) || g.width >= 16 ||
      g.k * g.blockSize * 4 > kWidenBytes ||
      (!ShapedType::isDynamic(staticRows) && staticRows < kWidenRows)) {
    emitTiles(b, loc, g, tileRows, rowBegin, rowEnd, block, validLanes);
    return;
  }
  Value count = arith::SubIOp::create(b, loc, rowEnd, rowBegin);
  Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, count,
                                     indexConstant(b, loc, kWidenRows));
  scf::IfOp::create(
      b, loc, many,
      [&](OpBuilder &tb, Location tl) {
        // A stack scope per block: the copy lives while its tiles run.
        auto scope = memref::AllocaScopeOp::create(tb, tl, TypeRange{});
        OpBuilder sb = OpBuilder::atBlockBegin(&scope.getBodyRegion().emplaceBlock());
        GemmKernel widened = g;
        widened.widenedBlock = true;
        widened.weightVectorType = g.vectorType;
        widened.prefetchRows = 0;
        auto copyType = MemRefType::get({1, g.k, g.blockSize}, sb.getF32Type());
        Value zero = indexConstant(sb, tl, 0);
        for (int64_t w = 0; w < (g.weight2 ? 2 : 1); ++w) {
          Value source = w == 0 ? g.weight : g.weight2;
          Value copy = memref::AllocaOp::create(sb, tl, copyType);
          (w == 0 ? widened.weight : widened.weight2) = copy;
          scf::ForOp::create(
              sb, tl, zero, indexConstant(sb, tl, g.k), indexConstant(sb, tl, 1),
              ValueRange{}, [&](OpBuilder &fb, Location fl, Value k, ValueRange) {
                for (int64_t j = 0; j < g.vectorsPerBlock; ++j) {
                  Value lane = indexConstant(fb, fl, j * g.width);
                  Value bits = vector::LoadOp::create(fb, fl, g.weightVectorType, source,
                                                      ValueRange{block, k, lane});
                  vector::StoreOp::create(fb, fl,
                                          arith::ExtFOp::create(fb, fl, g.vectorType, bits),
                                          copy, ValueRange{zero, k, lane});
                }
                scf::YieldOp::create(fb, fl);
              });
        }
        emitTiles(sb, tl, widened, tileRows, rowBegin, rowEnd, block, validLanes);
        memref::AllocaScopeReturnOp::create(sb, tl, ValueRange{});
        scf::YieldOp::create(tb, tl);
      },
      [&](OpBuilder &eb, Location el) {
        emitTiles(eb, el, g, tileRows, rowBegin, rowEnd, block, validLanes);
        scf::YieldOp::create(eb, el);
      });
}

/// Every tile of rows [rowBegin, rowEnd) for output block `block`.
void emitTiles(OpBuilder &b, Location loc, const GemmKernel &g, int64_t tileRows,
               Value rowBegin, Value rowEnd, Value block,
               ArrayRef<int64_t> validLanes) {
  // Full tiles of tileRows, then the rows left over one at a time.
  Value count = arith::SubIOp::create(b, loc, rowEnd, rowBegin);
  Value left = arith::RemUIOp::create(b, loc, count, indexConstant(b, loc, tileRows));
  Value fullEnd = arith::SubIOp::create(b, loc, rowEnd, left);
  scf::ForOp::create(b, loc, rowBegin, fullEnd, indexConstant(b, loc, tileRows),
                     ValueRange{},
                     [&](OpBuilder &nb, Location l, Value row, ValueRange) {
                       emitTile(nb, l, g, row, block, tileRows, validLanes);
                       scf::YieldOp::create(nb, l);
                     });
  scf::ForOp::create(b, loc, fullEnd, rowEnd, indexConstant(b, loc, 1),
                     ValueRange{},
                     [&](OpBuilder &nb, Location l, Value row, ValueRange) {
                       emitTile(nb, l, g, row, block, 1, validLanes);
                       scf::YieldOp::create(nb, l);
                     });
}

/// Runs `body` for each of the `rows` input rows: a prefill's on every
/// thread, decode's one row on the calling thread.
void forEachInputRow(OpBuilder &b, Location loc, const GemmKernel &g, Value rows,
                     llvm::function_ref<void(OpBuilder &, Location, Value)> body) {
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  if (ShapedType::isDynamic(cast<MemRefType>(g.output.getType()).getDimSize(0))) {
    scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{rows}, ValueRange{one},
                            [&](OpBuilder &pb, Location pl, ValueRange ivs) {
                              body(pb, pl, ivs[0]);
                            });
    return;
  }
  scf::ForOp::create(b, loc, zero, rows, one, ValueRange{},
                     [&](OpBuilder &rb, Location rl, Value row, ValueRange) {
                       body(rb, rl, row);
                       scf::YieldOp::create(rb, rl);
                     });
}

/// `scalar` (f32) as a value of `like`'s type: itself, or broadcast.
Value broadcastLike(OpBuilder &b, Location loc, Value scalar, Value like) {
  if (auto type = dyn_cast<VectorType>(like.getType()))
    return vector::BroadcastOp::create(b, loc, type, scalar);
  return scalar;
}

/// One row's input-norm statistics: the normalized value is
/// (x - mean) * scale, with no mean for an RMS norm.
struct RowNorm {
  Value mean, scale;
};

/// The input norm's statistics of row `row`, in the arithmetic of
/// convert-attn-to-linalg's attn.rms_norm / attn.layer_norm (sum / K, + eps,
/// sqrt, 1 / root; a layer norm's variance in a second pass, about the mean);
/// the sums are taken in vectors of the kernel's width, then across lanes.
RowNorm emitRowNorm(OpBuilder &b, Location loc, const GemmKernel &g, Value row) {
  auto scalar = [&](OpBuilder &nb, Location l, double v) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
  };
  const int64_t vectorEnd = g.k / g.width * g.width;
  // sum_k f(x[row, k]), f applied to vectors, then to the scalar tail.
  auto rowSum = [&](llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, vectorEnd),
        indexConstant(b, loc, g.width), ValueRange{splat(b, loc, g.vectorType, 0.0)},
        [&](OpBuilder &nb, Location l, Value k, ValueRange carried) {
          Value x = vector::LoadOp::create(nb, l, g.vectorType, g.input,
                                           ValueRange{row, k});
          scf::YieldOp::create(
              nb, l, ValueRange{arith::AddFOp::create(nb, l, carried[0], f(nb, l, x))});
        });
    Value sum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            loop.getResult(0));
    for (int64_t k = vectorEnd; k < g.k; ++k) {
      Value x = memref::LoadOp::create(b, loc, g.input,
                                       ValueRange{row, indexConstant(b, loc, k)});
      sum = arith::AddFOp::create(b, loc, sum, f(b, loc, x));
    }
    return sum;
  };
  Value count = scalar(b, loc, static_cast<double>(g.k));
  auto inverseRootMean = [&](Value sum) -> Value {
    Value mean = arith::DivFOp::create(b, loc, sum, count);
    Value root = math::SqrtOp::create(
        b, loc, arith::AddFOp::create(b, loc, mean, scalar(b, loc, g.normEpsilon)));
    return arith::DivFOp::create(b, loc, scalar(b, loc, 1.0), root);
  };
  if (!g.normBeta)
    return {Value(), inverseRootMean(rowSum([](OpBuilder &nb, Location l, Value x) {
              return arith::MulFOp::create(nb, l, x, x).getResult();
            }))};
  Value mean = arith::DivFOp::create(
      b, loc, rowSum([](OpBuilder &, Location, Value x) { return x; }), count);
  Value scale = inverseRootMean(rowSum([&](OpBuilder &nb, Location l, Value x) {
    Value diff = arith::SubFOp::create(nb, l, x, broadcastLike(nb, l, mean, x));
    return arith::MulFOp::create(nb, l, diff, diff).getResult();
  }));
  return {mean, scale};
}

/// Input elements `x` (a vector, or one scalar) from feature `k0` on,
/// normalized: ((x - mean) * scale) * (gamma + offset) (+ beta), in the
/// order of the unfused norm's ops.
Value emitNormalized(OpBuilder &b, Location loc, const GemmKernel &g,
                     const RowNorm &norm, Value x, Value k0) {
  auto param = [&](Value buffer) -> Value {
    if (auto type = dyn_cast<VectorType>(x.getType()))
      return vector::LoadOp::create(b, loc, type, buffer, ValueRange{k0});
    return memref::LoadOp::create(b, loc, buffer, ValueRange{k0});
  };
  if (norm.mean)
    x = arith::SubFOp::create(b, loc, x, broadcastLike(b, loc, norm.mean, x));
  x = arith::MulFOp::create(b, loc, x, broadcastLike(b, loc, norm.scale, x));
  Value gain = param(g.normGamma);
  if (g.normGainOffset)
    gain = arith::AddFOp::create(
        b, loc, gain,
        broadcastLike(b, loc,
                      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(*g.normGainOffset)),
                      gain));
  x = arith::MulFOp::create(b, loc, x, gain);
  if (g.normBeta)
    x = arith::AddFOp::create(b, loc, x, param(g.normBeta));
  return x;
}

/// The normalized input rows in a new [M, K] f32 buffer, which becomes the
/// input the f32 kernels read (f32 and bf16 weights; AMX rounds it).
void emitNormalizedInput(OpBuilder &b, Location loc, GemmKernel &g, Value rows) {
  Value normalized = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic, g.k}, b.getF32Type()),
      ValueRange{rows});
  const int64_t vectorEnd = g.k / g.width * g.width;
  forEachInputRow(b, loc, g, rows, [&](OpBuilder &rb, Location rl, Value row) {
    RowNorm norm = emitRowNorm(rb, rl, g, row);
    scf::ForOp::create(
        rb, rl, indexConstant(rb, rl, 0), indexConstant(rb, rl, vectorEnd),
        indexConstant(rb, rl, g.width), ValueRange{},
        [&](OpBuilder &nb, Location l, Value k, ValueRange) {
          Value x = vector::LoadOp::create(nb, l, g.vectorType, g.input,
                                           ValueRange{row, k});
          vector::StoreOp::create(nb, l, emitNormalized(nb, l, g, norm, x, k),
                                  normalized, ValueRange{row, k});
          scf::YieldOp::create(nb, l);
        });
    for (int64_t k = vectorEnd; k < g.k; ++k) {
      Value index = indexConstant(rb, rl, k);
      Value x = memref::LoadOp::create(rb, rl, g.input, ValueRange{row, index});
      memref::StoreOp::create(rb, rl, emitNormalized(rb, rl, g, norm, x, index),
                              normalized, ValueRange{row, index});
    }
  });
  g.input = g.normalizedInput = normalized;
}

/// Quantizes the input rows for the int8 dot products, as llama.cpp
/// quantizes activations to q8_0: per row and block of 32, d = amax / 127
/// and q = round(x / d) (to nearest even, the x86 rounding llama.cpp's AVX
/// code uses; d stays f32). Also records offset * sum(q) per block, which
/// the unsigned weight bytes add to every dot product (unless the kernel
/// multiplies signed weights).
LogicalResult emitQuantizedInput(OpBuilder &b, Location loc, GemmKernel &g,
                                 Value rows) {
  auto inputType = cast<MemRefType>(g.input.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(inputType.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return g.op.emitOpError("with a quantized weight needs an input with "
                            "contiguous rows, got ")
           << inputType;
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), i8 = b.getI8Type();
  int64_t dyn = ShapedType::kDynamic;
  g.quads = memref::AllocOp::create(b, loc, MemRefType::get({dyn, g.k / 4}, i32),
                                    ValueRange{rows});
  g.scales = memref::AllocOp::create(b, loc, MemRefType::get({dyn, g.groups}, f32),
                                     ValueRange{rows});
  if (!g.signedWeights())
    g.corrections = memref::AllocOp::create(
        b, loc, MemRefType::get({dyn, g.groups}, i32), ValueRange{rows});
  auto valuesType = VectorType::get({kQuantBlock}, f32);
  auto intsType = VectorType::get({kQuantBlock}, i32);
  auto bytesType = VectorType::get({kQuantBlock}, i8);
  auto quadsType = VectorType::get({kQuantBlock / 4}, i32);
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto quantizeRow = [&](OpBuilder &rb, Location rl, Value row) {
    RowNorm norm;
    if (g.normGamma)
      norm = emitRowNorm(rb, rl, g, row);
    scf::ForOp::create(
        rb, rl, zero, indexConstant(rb, rl, g.groups), one, ValueRange{},
        [&](OpBuilder &nb, Location l, Value group, ValueRange) {
          Value k0 = arith::MulIOp::create(nb, l, group,
                                           indexConstant(nb, l, kQuantBlock));
          Value x = vector::LoadOp::create(nb, l, valuesType, g.input,
                                           ValueRange{row, k0});
          if (g.normGamma)
            x = emitNormalized(nb, l, g, norm, x, k0);
          Value amax = vector::ReductionOp::create(
              nb, l, vector::CombiningKind::MAXNUMF,
              math::AbsFOp::create(nb, l, x));
          auto scalar = [&](double v) -> Value {
            return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
          };
          Value d = arith::DivFOp::create(nb, l, amax, scalar(127.0));
          Value nonzero = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNE,
                                                d, scalar(0.0));
          Value id = arith::SelectOp::create(
              nb, l, nonzero, arith::DivFOp::create(nb, l, scalar(1.0), d),
              scalar(0.0));
          Value scaled = arith::MulFOp::create(
              nb, l, x, vector::BroadcastOp::create(nb, l, valuesType, id));
          Value q = arith::FPToSIOp::create(
              nb, l, intsType, math::RoundEvenOp::create(nb, l, scaled));
          Value bytes = arith::TruncIOp::create(nb, l, bytesType, q);
          Value firstQuad = arith::MulIOp::create(
              nb, l, group, indexConstant(nb, l, kQuantBlock / 4));
          vector::StoreOp::create(nb, l,
                                  vector::BitCastOp::create(nb, l, quadsType, bytes),
                                  g.quads, ValueRange{row, firstQuad});
          memref::StoreOp::create(nb, l, d, g.scales, ValueRange{row, group});
          if (g.corrections) {
            Value sum = vector::ReductionOp::create(nb, l, vector::CombiningKind::ADD, q);
            Value correction = arith::MulIOp::create(
                nb, l, sum,
                arith::ConstantIntOp::create(nb, l, quantOffset(g.format), 32));
            memref::StoreOp::create(nb, l, correction, g.corrections,
                                    ValueRange{row, group});
          }
          scf::YieldOp::create(nb, l);
        });
  };
  forEachInputRow(b, loc, g, rows, quantizeRow);
  return success();
}

/// Rounds the input rows to bf16 (round to nearest even), a prefill's rows
/// on every thread: [M, K] bf16 for the AMX tiles, or with `asPairs` [M,
/// K/2] i32 for vdpbf16ps's broadcasts.
void emitBf16Input(OpBuilder &b, Location loc, GemmKernel &g, Value rows,
                   bool asPairs = false) {
  Value rounded = memref::AllocOp::create(
      b, loc,
      asPairs ? MemRefType::get({ShapedType::kDynamic, g.k / 2}, b.getI32Type())
              : MemRefType::get({ShapedType::kDynamic, g.k}, b.getBF16Type()),
      ValueRange{rows});
  (asPairs ? g.inputPairs : g.inputBf16) = rounded;
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto halfType = VectorType::get({g.width}, b.getBF16Type());
  scf::ParallelOp::create(
      b, loc, ValueRange{zero}, ValueRange{rows}, ValueRange{one},
      [&](OpBuilder &pb, Location pl, ValueRange ivs) {
        scf::ForOp::create(
            pb, pl, zero, indexConstant(pb, pl, g.k), indexConstant(pb, pl, g.width),
            ValueRange{}, [&](OpBuilder &nb, Location l, Value k, ValueRange) {
              Value x = vector::LoadOp::create(nb, l, g.vectorType, g.input,
                                               ValueRange{ivs[0], k});
              Value half = arith::TruncFOp::create(nb, l, halfType, x);
              if (asPairs) {
                half = vector::BitCastOp::create(
                    nb, l, VectorType::get({g.width / 2}, nb.getI32Type()), half);
                k = arith::DivUIOp::create(nb, l, k, indexConstant(nb, l, 2));
              }
              vector::StoreOp::create(nb, l, half, rounded, ValueRange{ivs[0], k});
              scf::YieldOp::create(nb, l);
            });
      });
}

/// The largest interleaved weight block an AMX kernel copies to a thread's
/// stack (K x NR bf16; libomp's threads have 4 MiB).
constexpr int64_t kPairBytes = 1024 * 1024;

/// Tile shape and cache budget of the generated kernels.
struct GemmOptions {
  int64_t width, tileRows, kUnroll, l2Budget, prefetchBytes;
  Int8Dot dot;
  bool amx, bf16Dot;
};

LogicalResult lowerGemm(RewriterBase &rewriter, GemmOp op,
                        const GemmOptions &options) {
  int64_t width = options.width, tileRows = options.tileRows,
          kUnroll = options.kUnroll, l2Budget = options.l2Budget;
  if (!isa<MemRefType>(op.getInit().getType()))
    return op.emitOpError("must be bufferized before attn-lower-gemm");
  auto weightType = cast<MemRefType>(op.getWeight().getType());
  std::optional<PackedWeightInfo> info = getPackedWeightInfo(weightType);
  if (!info)
    return op.emitOpError("has no packed weight type");
  GemmKernel g;
  g.op = op;
  g.input = op.getInput();
  g.weight = op.getWeight();
  g.weight2 = op.getWeight2();
  g.bias = op.getBias();
  g.bias2 = op.getBias2();
  if (FloatAttr alpha = op.getAlphaAttr())
    g.alpha = alpha.getValueAsDouble();
  if (FloatAttr limit = op.getLimitAttr())
    g.limit = limit.getValueAsDouble();
  g.rowScale = op.getRowScale();
  g.residual = op.getResidual();
  g.normGamma = op.getNormGamma();
  g.normBeta = op.getNormBeta();
  if (g.normGamma) {
    g.normEpsilon = op.getNormEpsilonAttr().getValueAsDouble();
    if (FloatAttr offset = op.getNormGainOffsetAttr())
      g.normGainOffset = offset.getValueAsDouble();
  }
  g.output = op.getInit();
  g.format = info->format;
  g.blocks = info->blocks;
  g.k = info->inFeatures;
  g.blockSize = info->blockSize;
  g.n = cast<MemRefType>(g.output.getType()).getDimSize(1);
  g.epilogue = op.getEpilogue();
  const bool quantized = isQuantized(g.format);
  // A block is whole vectors: narrow them for a block of fewer lanes
  // (attn-compile packs blocks of two full vectors).
  while (g.blockSize % width != 0)
    width /= 2;
  if (quantized && width != 16 && width != 8)
    return op.emitOpError()
           << "with a " << packedFormatName(g.format)
           << " weight needs blocks of whole 8- or 16-lane vectors (the int8 "
              "dot products of AVX2 and AVX-512), got vector-width "
           << options.width << " and blocks of " << g.blockSize;
  g.dot = options.dot;
  g.width = width;
  g.vectorsPerBlock = g.blockSize / width;
  g.kUnroll = g.k % kUnroll == 0 ? kUnroll : 1;
  g.vectorType = VectorType::get({width}, rewriter.getF32Type());
  // (Quantized weights load bytes of slabs instead.)
  g.weightVectorType = VectorType::get({width}, weightType.getElementType());
  int64_t rowBytes = g.blockSize * g.weightVectorType.getElementTypeBitWidth() / 8;
  if (quantized) {
    g.groups = g.k / kQuantBlock;
    g.slabBytes = g.blockSize * quantBlockBytes(g.format);
    rowBytes = g.slabBytes;
  }
  // A quantized k step consumes a whole slab (576 or 1088 bytes): at
  // `prefetch-bytes` it would run only 3-7 steps ahead. Twice that distance
  // measured best (LLaMA-110M q8_0 decode, 2 threads, 5 alternating rounds:
  // 4096 / 8192 / 16384 bytes gave 306-318 / 321-335 / 292-317 tok/s; q4_0
  // 577-609 / 582-607 / 559-605), while f32 is best at 4096 (70.4 against
  // 64.7 tok/s at 8192) and bf16 indifferent.
  int64_t prefetchBytes = quantized ? 2 * options.prefetchBytes : options.prefetchBytes;
  g.prefetchRows = prefetchBytes > 0 ? std::max<int64_t>(1, prefetchBytes / rowBytes) : 0;

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value zero = indexConstant(rewriter, loc, 0);
  Value one = indexConstant(rewriter, loc, 1);
  Value rows = memref::DimOp::create(rewriter, loc, g.output, 0);
  if (quantized) {
    // The slabs as rows of bytes; the register tile shrinks so that the
    // integer sums fit in the registers beside the f32 accumulators (half as
    // many rows in AVX2's 16 registers as in AVX-512's 32).
    SmallVector<ReassociationIndices> slabDims = {{0}, {1}, {2, 3}};
    g.slabs = memref::CollapseShapeOp::create(rewriter, loc, g.weight, slabDims);
    if (g.weight2)
      g.slabs2 = memref::CollapseShapeOp::create(rewriter, loc, g.weight2, slabDims);
    tileRows = std::min<int64_t>(tileRows, (g.weight2 ? 2 : 4) * width / 16);
    if (failed(emitQuantizedInput(rewriter, loc, g, rows)))
      return failure();
  }
  // AMX for a prefill's (dynamic) rows of a bf16 weight whose blocks are
  // whole tiles of columns and whose k is whole tiles of depth.
  auto inputType = cast<MemRefType>(g.input.getType());
  g.amx = options.amx && g.format == PackedFormat::BF16 && width == 16 &&
          g.blockSize % kAmxColumns == 0 && g.k % kAmxDepth == 0 &&
          g.k * g.blockSize * 2 <= kPairBytes &&
          ShapedType::isDynamic(cast<MemRefType>(g.output.getType()).getDimSize(0)) &&
          inputType.isLastDimUnitStride();
  // vdpbf16ps where AMX is not, on the same terms but whole vectors of k.
  g.bf16Dot = options.bf16Dot && !g.amx && g.format == PackedFormat::BF16 &&
              width == 16 && g.k % width == 0 && g.k * g.blockSize * 2 <= kPairBytes &&
              ShapedType::isDynamic(cast<MemRefType>(g.output.getType()).getDimSize(0)) &&
              inputType.isLastDimUnitStride();
  // The float kernels read the input as it is: normalized first. (With AMX
  // and vdpbf16ps too: rows they leave to the f32 kernel read it.)
  if (g.normGamma && !quantized)
    emitNormalizedInput(rewriter, loc, g, rows);
  if (g.amx)
    emitBf16Input(rewriter, loc, g, rows);
  if (g.bf16Dot)
    emitBf16Input(rewriter, loc, g, rows, /*asPairs=*/true);

  // Lanes below N in each vector of a full block and of the last block.
  SmallVector<int64_t> full(g.vectorsPerBlock, width), last;
  int64_t lastStart = (g.blocks - 1) * g.blockSize;
  for (int64_t j = 0; j < g.vectorsPerBlock; ++j)
    last.push_back(std::clamp<int64_t>(g.n - lastStart - j * width, 0, width));
  bool partialLast = last != full;

  // Rows per chunk: the chunk of the input (and the weight block) stay in
  // L2 while every block of outputs is computed from them.
  int64_t chunkRows =
      std::max<int64_t>(tileRows, l2Budget / (g.k * 4) / tileRows * tileRows);
  // AMX: whole groups of bf16 rows, and each interleaved block copied once
  // per chunk serves as many of them as fit.
  if (g.amx)
    chunkRows = std::max<int64_t>(g.amxRows(),
                                  l2Budget / (g.k * 2) / g.amxRows() * g.amxRows());
  // vdpbf16ps: bf16 rows too, in whole tiles.
  if (g.bf16Dot)
    chunkRows = std::max<int64_t>(tileRows, l2Budget / (g.k * 2) / tileRows * tileRows);
  scf::ForOp::create(
      rewriter, loc, zero, rows, indexConstant(rewriter, loc, chunkRows),
      ValueRange{}, [&](OpBuilder &b, Location l, Value chunk, ValueRange) {
        Value chunkEnd = arith::MinUIOp::create(
            b, l, rows,
            arith::AddIOp::create(b, l, chunk, indexConstant(b, l, chunkRows)));
        auto blocks = scf::ParallelOp::create(
            b, l, ValueRange{zero}, ValueRange{indexConstant(b, l, g.blocks)},
            ValueRange{one},
            [&](OpBuilder &pb, Location pl, ValueRange ivs) {
              Value block = ivs[0];
              // Fixed-size buffers first in the body: one per thread
              // (ParallelToOpenMP), not one per block.
              GemmKernel local = g;
              if (g.amx || g.bf16Dot) {
                auto pairsType =
                    MemRefType::get({g.k / 2, 2 * g.blockSize}, pb.getBF16Type());
                for (Value weight : {g.weight, g.weight2})
                  if (weight)
                    local.pairs.push_back(memref::AllocaOp::create(pb, pl, pairsType));
              }
              if (g.amx) {
                local.amxSums = memref::AllocaOp::create(
                    pb, pl,
                    MemRefType::get({static_cast<int64_t>(local.pairs.size()) *
                                         g.amxRows(),
                                     g.blockSize},
                                    pb.getF32Type()));
              }
              if (!partialLast) {
                emitBlock(pb, pl, local, tileRows, chunk, chunkEnd, block, full);
                return;
              }
              Value isLast = arith::CmpIOp::create(
                  pb, pl, arith::CmpIPredicate::eq, block,
                  indexConstant(pb, pl, g.blocks - 1));
              scf::IfOp::create(
                  pb, pl, isLast,
                  [&](OpBuilder &tb, Location tl) {
                    emitBlock(tb, tl, local, tileRows, chunk, chunkEnd, block, last);
                    scf::YieldOp::create(tb, tl);
                  },
                  [&](OpBuilder &eb, Location el) {
                    emitBlock(eb, el, local, tileRows, chunk, chunkEnd, block, full);
                    scf::YieldOp::create(eb, el);
                  });
            });
        // Every block costs the same; contiguous ranges keep each thread's
        // weight stream sequential.
        blocks->setAttr(kContiguousScheduleAttr, b.getUnitAttr());
        scf::YieldOp::create(b, l);
      });
  for (Value buffer :
       {g.quads, g.scales, g.corrections, g.inputBf16, g.inputPairs, g.normalizedInput})
    if (buffer)
      memref::DeallocOp::create(rewriter, loc, buffer);
  rewriter.eraseOp(op);
  return success();
}

struct LowerGemmPass
    : mlir::attn::impl::LowerGemmPassBase<LowerGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    if (vectorWidth <= 0 || tileRows <= 0 || kUnroll <= 0 || prefetchBytes < 0) {
      emitError(getOperation()->getLoc())
          << "attn-lower-gemm: vector-width, tile-rows and k-unroll must be "
             "positive and prefetch-bytes not negative, got "
          << vectorWidth.getValue() << ", " << tileRows.getValue() << ", "
          << kUnroll.getValue() << ", " << prefetchBytes.getValue();
      return signalPassFailure();
    }
    std::optional<Int8Dot> dot = llvm::StringSwitch<std::optional<Int8Dot>>(int8Dot)
                                     .Case("vpdpbusd", Int8Dot::Vpdpbusd)
                                     .Case("vpmaddubsw", Int8Dot::Vpmaddubsw)
                                     .Default(std::nullopt);
    if (!dot) {
      emitError(getOperation()->getLoc())
          << "attn-lower-gemm: int8-dot must be vpdpbusd or vpmaddubsw, got '"
          << int8Dot.getValue() << "'";
      return signalPassFailure();
    }
    GemmOptions options{vectorWidth, tileRows, kUnroll, l2Budget, prefetchBytes,
                        *dot,        amx,      bf16Dot};
    SmallVector<GemmOp> gemms;
    getOperation()->walk([&](GemmOp op) { gemms.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (GemmOp op : gemms)
      if (failed(lowerGemm(rewriter, op, options)))
        return signalPassFailure();
  }
};

} // namespace
