//===- VectorizeRows.cpp - vector code for the ops between the kernels ----===//
//
// What is left of a layer once attn-lower-gemm and attn-lower-attention have
// run is linalg on memrefs: norms, RoPE, KV cache appends, activations that
// did not fuse into a projection, copies. attn-parallelize-rows has tiled a
// prefill's into one-row ops under its threads (without threads they are
// tiled here, under a plain loop); decode's are one row already. Every such op
// has a static iteration space of one row, so linalg's vectorizer takes it
// whole (no masks, no remainder loop), and the vector ops it makes are
// lowered here to one-dimensional loads, stores and arithmetic, which
// convert-vector-to-llvm takes as they are. The lowering patterns run on the
// vectorized ops only: the kernels' hand-built vector code is not touched.
//
// A row's sum (the norms' statistics) is a vector.reduction marked
// reassociable: LLVM adds the lanes as a tree of vector adds, in an order
// fixed at compile time, so it is the same for every thread count.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"
#include "RowTiling.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_VECTORIZEROWSPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// Why `op` stays for convert-linalg-to-loops, or an empty string when
/// linalg's vectorizer can take it whole.
std::string whyNotVectorized(linalg::LinalgOp op, int64_t maxLanes) {
  int64_t lanes = 1;
  for (int64_t extent : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(extent))
      return "its loops have dynamic extents";
    lanes *= extent;
  }
  if (lanes > maxLanes)
    return llvm::formatv("{0} elements, more than max-lanes ({1})", lanes, maxLanes).str();
  // A row's statistic reduces one row. An op that reduces across several
  // outputs at once (a one-row matmul of an unpacked weight, 1 x 192 x 64)
  // would become one vector of every product, unrolled into thousands of
  // ops: a GPT-2 block's LLVM IR grew from 4 to 105 thousand lines and LLVM
  // took minutes over it.
  int64_t outputs = 1;
  bool reduces = false;
  for (auto [extent, kind] :
       llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray())) {
    if (kind == utils::IteratorType::reduction)
      reduces = true;
    else
      outputs *= extent;
  }
  if (reduces && outputs > 1)
    return llvm::formatv("it reduces into {0} outputs at once (a contraction)", outputs)
        .str();
  if (failed(linalg::vectorizeOpPrecondition(op)))
    return "linalg's vectorizer cannot take it (an indirect load, or an "
           "indexing map that is not a projected permutation)";
  return "";
}

/// Whether `op` is a contraction that reads each input along its one
/// reduction loop, innermost and contiguous (an out_in weight's rows: a
/// mixture of experts' router, [1 x experts x hidden]), with at most
/// `maxLanes` elements reduced into each output. One op per output of such
/// a contraction is a dot product the vectorizer takes as a row's
/// statistic; an input read across its rows (in_out, [1 x 192 x 64]) would
/// be a strided gather per output and stays scalar.
bool readsRowsPerOutput(linalg::LinalgOp op, int64_t maxLanes) {
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  if (reductions.size() != 1 || op.getNumParallelLoops() == 0 ||
      op.getNumDpsInits() != 1)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges[reductions[0]] > maxLanes)
    return false;
  // One output (a row's statistic) is vectorized whole as it is.
  if (llvm::product_of(ranges) / ranges[reductions[0]] == 1)
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(reductions[0]))
      continue;
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || !type.isLastDimUnitStride() || map.getNumResults() == 0 ||
        map.getResults().back() != getAffineDimExpr(reductions[0], op.getContext()))
      return false;
  }
  return true;
}

/// Lets LLVM sum a floating-point reduction's lanes as a tree rather than
/// one lane after another (an add chain as long as the row).
struct ReassociateFloatReduction : OpRewritePattern<vector::ReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ReductionOp op,
                                PatternRewriter &rewriter) const override {
    if (!isa<FloatType>(op.getType()) ||
        bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::reassoc))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.setFastmath(op.getFastmath() | arith::FastMathFlags::reassoc);
    });
    return success();
  }
};

/// Records the operations a rewrite creates and has not erased.
struct CreatedOps : RewriterBase::Listener {
  llvm::SetVector<Operation *> ops;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.insert(op);
  }
  void notifyOperationErased(Operation *op) override { ops.remove(op); }
};

/// The recorded operations still in the IR, in IR order. (A builder the
/// vectorizer uses internally may erase an op it made without telling the
/// listener; a walk only meets live ones.)
SmallVector<Operation *> liveOps(Operation *root, const CreatedOps &created) {
  SmallVector<Operation *> live;
  root->walk([&](Operation *op) {
    if (created.ops.contains(op))
      live.push_back(op);
  });
  return live;
}

struct VectorizeRowsPass
    : mlir::attn::impl::VectorizeRowsPassBase<VectorizeRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxLanes < 1) {
      getOperation()->emitError()
          << "attn-vectorize-rows: max-lanes must be positive, got "
          << static_cast<int64_t>(maxLanes);
      return signalPassFailure();
    }
    // Ops over a prefill's rows that no thread runs (threads=0): one row at
    // a time, each a static one-row op.
    SmallVector<linalg::LinalgOp> rowOps;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (attn::overDynamicRows(op))
        rowOps.push_back(op);
    });
    IRRewriter tiler(&getContext());
    // An op that does not tile stays whole; with report-left its remark
    // below names the dynamic extents that kept it scalar.
    for (linalg::LinalgOp op : rowOps)
      (void)attn::tileRowByRow(tiler, op, linalg::LinalgTilingLoopType::Loops);

    // A contraction along rows, one output at a time: a loop of dot
    // products.
    SmallVector<linalg::LinalgOp> contractions;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && readsRowsPerOutput(op, maxLanes))
        contractions.push_back(op);
    });
    for (linalg::LinalgOp op : contractions) {
      SmallVector<int64_t> tiles;
      for (utils::IteratorType kind : op.getIteratorTypesArray())
        tiles.push_back(kind == utils::IteratorType::parallel ? 1 : 0);
      linalg::LinalgTilingOptions options;
      options.setTileSizes(tiles).setLoopType(linalg::LinalgTilingLoopType::Loops);
      tiler.setInsertionPoint(op);
      if (succeeded(linalg::tileLinalgOp(tiler, op, options)))
        tiler.eraseOp(op);
    }

    SmallVector<linalg::LinalgOp> candidates;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0)
        return;
      std::string why = whyNotVectorized(op, maxLanes);
      if (why.empty())
        candidates.push_back(op);
      else if (reportLeft)
        op.emitRemark("attn-vectorize-rows: left to scalar loops: ") << why;
    });

    CreatedOps created;
    IRRewriter rewriter(&getContext(), &created);
    for (linalg::LinalgOp op : candidates) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::vectorize(rewriter, op))) {
        if (reportLeft)
          op.emitRemark("attn-vectorize-rows: left to scalar loops: the vectorizer failed");
        continue;
      }
      rewriter.eraseOp(op);
    }
    if (created.ops.empty())
      return;

    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    config.setListener(&created);
    // A one-row op's vectors are 1 x N (a row's statistic 1 x 1): without the
    // unit dimension a per-row scalar is a broadcast, not a transposed read.
    RewritePatternSet unitDims(&getContext());
    vector::populateCastAwayVectorLeadingOneDimPatterns(unitDims);
    vector::populateVectorTransferDropUnitDimsPatterns(unitDims);
    if (failed(applyOpPatternsGreedily(liveOps(getOperation(), created), std::move(unitDims),
                                       config))) {
      getOperation()->emitError("attn-vectorize-rows: unit dimensions did not fold");
      return signalPassFailure();
    }

    // To one-dimensional vectors: reductions to vector.reduction, broadcasts
    // and transposed reads to plain ones, n-d transfers unrolled into 1-d
    // loads and stores along the innermost (contiguous) dimension.
    RewritePatternSet patterns(&getContext());
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    vector::populateVectorTransferLoweringPatterns(patterns, /*maxTransferRank=*/1);
    populateVectorToSCFConversionPatterns(
        patterns, VectorTransferToSCFOptions().enableFullUnroll());
    patterns.add<ReassociateFloatReduction>(&getContext());
    if (failed(applyOpPatternsGreedily(liveOps(getOperation(), created), std::move(patterns),
                                       config))) {
      getOperation()->emitError("attn-vectorize-rows: vector lowering did not converge");
      return signalPassFailure();
    }
  }
};

} // namespace
