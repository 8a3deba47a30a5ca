//===- FuseRopeNorms.cpp - per-head RMSNorm into the RoPE it feeds --------===//

#include "attn/Dialect/Attn/Transforms/Passes.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_FUSEROPENORMSPASS
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// rope(rms_norm(x) head_dim(d)) -> rope(x) with the norm on its input.
struct FuseRopeNorm : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp rope,
                                PatternRewriter &rewriter) const override {
    if (rope.hasInputNorm())
      return rewriter.notifyMatchFailure(rope, "already has an input norm");
    auto norm = rope.getInput().getDefiningOp<RmsNormOp>();
    if (!norm || !norm->hasOneUse())
      return rewriter.notifyMatchFailure(rope, "input is not a single-use rms_norm");
    std::optional<uint64_t> headDim = norm.getHeadDim();
    if (!headDim || *headDim != rope.getHeadDim())
      return rewriter.notifyMatchFailure(rope, "norm is not over the rope's heads");
    rewriter.modifyOpInPlace(rope, [&] {
      rope.getInputMutable().assign(norm.getInput());
      rope.getNormGammaMutable().assign(norm.getGamma());
      rope.setNormEpsilonAttr(norm.getEpsilonAttr());
      rope.setNormGainOffsetAttr(norm.getGainOffsetAttr());
    });
    rewriter.eraseOp(norm);
    return success();
  }
};

struct FuseRopeNormsPass
    : mlir::attn::impl::FuseRopeNormsPassBase<FuseRopeNormsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseRopeNormPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateFuseRopeNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseRopeNorm>(patterns.getContext());
}
