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
// is loaded (the products and sums stay f32): half the bytes to stream. A
// one-row tile (decode, or the rows left over) keeps several independent
// accumulator chains so FMA latency does not bound it: it runs at the speed
// the weights stream from memory.
//
// This file is the loop nest; the register tile's products come from the
// microkernel for the weight format and instruction set (Gemm/GemmKernel.h
// has the table; a q8_0 / q4_0 weight keeps the same blocks and tiles with
// int8 dot products, a bf16 weight may use vdpbf16ps or AMX tiles), and the
// input rows they read are prepared once per gemm (Gemm/GemmInputs.cpp:
// normalized by a fused input norm, quantized, rounded to bf16).
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "Gemm/GemmKernel.h"

#include "attn/Dialect/Attn/Utils/Activations.h"

// The dialects the microkernels create (the pass's dependentDialects).
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

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_LOWERGEMMPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gemm;

namespace {

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

/// One register tile: `rows` rows from `row0` of output block `block`.
void emitTile(OpBuilder &b, Location loc, const GemmKernel &g, Value row0,
              Value block, int64_t rows, ArrayRef<int64_t> validLanes) {
  SmallVector<Value> rowIndex;
  for (int64_t r = 0; r < rows; ++r)
    rowIndex.push_back(r == 0 ? row0
                              : arith::AddIOp::create(b, loc, row0,
                                                      indexConstant(b, loc, r)));
  SmallVector<Value> totals =
      g.dotPairs              ? emitBf16DotProducts(b, loc, g, rowIndex, rows)
      : isQuantized(g.format) ? emitInt8Products(b, loc, g, rowIndex, block, rows)
                              : emitFmaProducts(b, loc, g, rowIndex, block, rows);
  emitEpilogue(b, loc, g, rowIndex, block, validLanes,
               [&](int64_t w, int64_t r, int64_t j) {
                 return totals[(w * rows + r) * g.vectorsPerBlock + j];
               });
}

/// One AMX group: the microkernel's sums, then the epilogue row by row.
void emitAmxGroup(OpBuilder &b, Location loc, const GemmKernel &g, Value row0,
                  Value block, ArrayRef<Value> pairs, Value sums,
                  ArrayRef<int64_t> validLanes) {
  emitAmxProducts(b, loc, g, row0, pairs, sums);
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

