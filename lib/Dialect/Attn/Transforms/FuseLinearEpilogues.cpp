//===- FuseLinearEpilogues.cpp - elementwise consumers into attn.gemm -----===//

#include "attn/Dialect/Attn/Transforms/Passes.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_FUSELINEAREPILOGUESPASS
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A single-use projection with a packed weight, or null.
LinearOp fusibleLinear(Value value) {
  auto linear = value.getDefiningOp<LinearOp>();
  if (!linear || linear.getLayout() != WeightLayout::Packed ||
      !linear->hasOneUse())
    return nullptr;
  return linear;
}

/// A single-use gemm with no residual yet, or null.
GemmOp fusibleGemm(Value value) {
  auto gemm = value.getDefiningOp<GemmOp>();
  if (!gemm || !gemm->hasOneUse() || gemm.getResidual() ||
      !isa<RankedTensorType>(gemm.getInit().getType()))
    return nullptr;
  return gemm;
}

/// An empty [rows(input), features] tensor of `type` for a gemm's init.
Value emptyInit(PatternRewriter &rewriter, Location loc, RankedTensorType type,
                Value input) {
  SmallVector<Value> dynamicSizes;
  if (type.isDynamicDim(0))
    dynamicSizes.push_back(tensor::DimOp::create(rewriter, loc, input, 0));
  return tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                 type.getElementType(), dynamicSizes);
}

/// A single-use gemm with no epilogue or residual yet (its input may be
/// normalized), or null: what FuseInputNorm makes of a plain projection.
GemmOp plainGemm(Value value) {
  GemmOp gemm = fusibleGemm(value);
  if (!gemm || gemm.getEpilogue() != GemmEpilogue::None)
    return nullptr;
  return gemm;
}

/// A gemm computing `linear` (and `linear2` for swiglu) with `epilogue`.
GemmOp createGemm(PatternRewriter &rewriter, Operation *root, LinearOp linear,
                  LinearOp linear2, GemmEpilogue epilogue) {
  auto type = cast<RankedTensorType>(root->getResult(0).getType());
  Value init = emptyInit(rewriter, root->getLoc(), type, linear.getInput());
  return GemmOp::create(rewriter, root->getLoc(), TypeRange{type},
                        linear.getInput(), linear.getWeight(),
                        linear2 ? linear2.getWeight() : Value(),
                        /*norm_gamma=*/Value(), /*norm_beta=*/Value(),
                        linear.getBias(), linear2 ? linear2.getBias() : Value(),
                        /*row_scale=*/Value(), /*residual=*/Value(), init, epilogue,
                        /*norm_epsilon=*/FloatAttr(),
                        /*norm_gain_offset=*/FloatAttr(), /*alpha=*/FloatAttr(),
                        /*limit=*/FloatAttr());
}

/// swiglu / geglu(linear(x, Wg), linear(x, Wu)) -> gemm swiglu / geglu_*
/// ins(x, Wg, Wu).
template <typename OpTy>
struct FuseGated : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    LinearOp gate = fusibleLinear(op.getGate()), up = fusibleLinear(op.getUp());
    if (!gate || !up)
      return rewriter.notifyMatchFailure(op, "operands are not fusible linears");
    if (gate.getInput() != up.getInput() || gate.getBias() || up.getBias() ||
        gate.getWeight().getType() != up.getWeight().getType())
      return rewriter.notifyMatchFailure(
          op, "gate and up differ in input or weight shape, or have biases");
    GemmOp gemm = createGemm(rewriter, op, gate, up, epilogue(op));
    rewriter.replaceOp(op, gemm.getResult());
    rewriter.eraseOp(gate);
    rewriter.eraseOp(up);
    return success();
  }

  static GemmEpilogue epilogue(SwigluOp) { return GemmEpilogue::Swiglu; }
  static GemmEpilogue epilogue(GegluOp op) {
    return op.getApproximation() == GeluApproximation::Tanh
               ? GemmEpilogue::GegluTanh
               : GemmEpilogue::GegluErf;
  }
};

/// gelu / silu of a linear -> gemm with that epilogue.
template <typename OpTy>
struct FuseActivation : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    // A projection whose input norm was fused first takes the epilogue too.
    if (GemmOp gemm = plainGemm(op.getInput())) {
      rewriter.modifyOpInPlace(gemm, [&] { gemm.setEpilogue(epilogue(op)); });
      rewriter.replaceOp(op, gemm.getResult());
      return success();
    }
    LinearOp linear = fusibleLinear(op.getInput());
    if (!linear)
      return rewriter.notifyMatchFailure(op, "input is not a fusible linear");
    GemmOp gemm = createGemm(rewriter, op, linear, nullptr, epilogue(op));
    rewriter.replaceOp(op, gemm.getResult());
    rewriter.eraseOp(linear);
    return success();
  }

  static GemmEpilogue epilogue(GeluOp op) {
    return op.getApproximation() == GeluApproximation::Tanh
               ? GemmEpilogue::GeluTanh
               : GemmEpilogue::GeluErf;
  }
  static GemmEpilogue epilogue(SiluOp) { return GemmEpilogue::Silu; }
  static GemmEpilogue epilogue(ReluOp) { return GemmEpilogue::Relu; }
};

/// residual_add(projection, r) -> the projection's gemm with residual r.
struct FuseResidual : OpRewritePattern<ResidualAddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ResidualAddOp op,
                                PatternRewriter &rewriter) const override {
    for (unsigned side = 0; side < 2; ++side) {
      Value projection = op->getOperand(side);
      Value residual = op->getOperand(1 - side);
      GemmOp gemm = fusibleGemm(projection);
      if (gemm && gemm->getBlock() == op->getBlock()) {
        // The gemm moves down to the add: its operands dominate it there,
        // and so does the residual, which may be computed after it.
        rewriter.moveOpBefore(gemm, op);
        rewriter.modifyOpInPlace(gemm, [&] {
          gemm.getResidualMutable().assign(residual);
        });
        rewriter.replaceOp(op, gemm.getResult());
        return success();
      }
      if (LinearOp linear = fusibleLinear(projection)) {
        GemmOp fused =
            createGemm(rewriter, op, linear, nullptr, GemmEpilogue::None);
        rewriter.modifyOpInPlace(fused, [&] {
          fused.getResidualMutable().assign(residual);
        });
        rewriter.replaceOp(op, fused.getResult());
        rewriter.eraseOp(linear);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "no fusible projection operand");
  }
};

/// rms_norm / layer_norm(x) feeding only a packed projection -> that
/// projection's gemm with the norm on its input: a quantizing kernel
/// normalizes each row as it quantizes it, and the normalized rows are never
/// written in f32.
template <typename NormOp>
struct FuseInputNorm : OpRewritePattern<NormOp> {
  using OpRewritePattern<NormOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    if (norm.getInput().getType().getRank() != 2 ||
        !norm.getInput().getType().getElementType().isF32() || !wholeRows(norm))
      return rewriter.notifyMatchFailure(norm, "does not normalize f32 rows");
    // Its sizes (the row count of a gemm's init, say) are its input's; any
    // other use must be the one projection.
    Operation *user = nullptr;
    for (Operation *use : norm->getUsers()) {
      if (isa<tensor::DimOp>(use))
        continue;
      if (user && user != use)
        return rewriter.notifyMatchFailure(norm, "has more than one consumer");
      user = use;
    }
    if (!user || llvm::count(user->getOperands(), norm.getResult()) != 1)
      return rewriter.notifyMatchFailure(norm, "is not one operand of one projection");
    auto linear = dyn_cast<LinearOp>(user);
    auto gemm = dyn_cast<GemmOp>(user);
    if (linear && (linear.getLayout() != WeightLayout::Packed ||
                   linear.getInput() != norm.getResult()))
      return rewriter.notifyMatchFailure(norm, "feeds an unpacked weight");
    if (gemm && (gemm.getInput() != norm.getResult() || gemm.hasInputNorm() ||
                 !isa<RankedTensorType>(gemm.getInit().getType())))
      return rewriter.notifyMatchFailure(norm, "is not the gemm's only input");
    if (!linear && !gemm)
      return rewriter.notifyMatchFailure(norm, "does not feed a projection");
    if (linear) {
      rewriter.setInsertionPoint(linear);
      gemm = createGemm(rewriter, linear, linear, nullptr, GemmEpilogue::None);
      rewriter.replaceOp(linear, gemm.getResult());
    }
    // (The gemm's init just made may ask for the rows too.)
    for (Operation *use : llvm::make_early_inc_range(norm->getUsers()))
      if (auto dim = dyn_cast<tensor::DimOp>(use))
        rewriter.modifyOpInPlace(dim, [&] {
          dim.getSourceMutable().assign(norm.getInput());
        });
    rewriter.modifyOpInPlace(gemm, [&] {
      gemm.getInputMutable().assign(norm.getInput());
      gemm.getNormGammaMutable().assign(norm.getGamma());
      if (Value beta = getBeta(norm))
        gemm.getNormBetaMutable().assign(beta);
      gemm.setNormEpsilonAttr(norm.getEpsilonAttr());
      gemm.setNormGainOffsetAttr(getGainOffset(norm));
    });
    rewriter.eraseOp(norm);
    return success();
  }

  /// A per-head norm (qk-norm) is not a gemm's row norm.
  static bool wholeRows(RmsNormOp op) { return !op.getHeadDim(); }
  static bool wholeRows(LayerNormOp) { return true; }
  static Value getBeta(RmsNormOp) { return Value(); }
  static Value getBeta(LayerNormOp op) { return op.getBeta(); }
  static FloatAttr getGainOffset(RmsNormOp op) { return op.getGainOffsetAttr(); }
  static FloatAttr getGainOffset(LayerNormOp) { return FloatAttr(); }
};

struct FuseLinearEpiloguesPass
    : mlir::attn::impl::FuseLinearEpiloguesPassBase<FuseLinearEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseLinearEpiloguesPatterns(patterns);
    if (inputNorms)
      populateFuseInputNormPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateFuseLinearEpiloguesPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  // Activations first (benefit 2): a residual then folds into their gemm.
  patterns.add<FuseGated<SwigluOp>, FuseGated<GegluOp>, FuseActivation<GeluOp>,
               FuseActivation<SiluOp>, FuseActivation<ReluOp>>(ctx,
                                                               /*benefit=*/2);
  patterns.add<FuseResidual>(ctx, /*benefit=*/1);
}

void mlir::attn::populateFuseInputNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseInputNorm<RmsNormOp>, FuseInputNorm<LayerNormOp>>(
      patterns.getContext());
}
