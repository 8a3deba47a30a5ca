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

/// A gemm computing `linear` (and `linear2` for swiglu) with `epilogue`.
GemmOp createGemm(PatternRewriter &rewriter, Operation *root, LinearOp linear,
                  LinearOp linear2, GemmEpilogue epilogue) {
  auto type = cast<RankedTensorType>(root->getResult(0).getType());
  Value init = emptyInit(rewriter, root->getLoc(), type, linear.getInput());
  return GemmOp::create(rewriter, root->getLoc(), TypeRange{type},
                        linear.getInput(), linear.getWeight(),
                        linear2 ? linear2.getWeight() : Value(),
                        linear.getBias(), /*row_scale=*/Value(),
                        /*residual=*/Value(), init, epilogue);
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

struct FuseLinearEpiloguesPass
    : mlir::attn::impl::FuseLinearEpiloguesPassBase<FuseLinearEpiloguesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseLinearEpiloguesPatterns(patterns);
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
