//===- ExpandBF16.cpp - f32 <-> bf16 conversions as integer arithmetic ----===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_EXPANDBF16PASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct ExpandBF16Pass : mlir::attn::impl::ExpandBF16PassBase<ExpandBF16Pass> {
  void runOnOperation() override {
    // Only the bf16 patterns of arith-expand: its others (maximumf, ...)
    // would change code that LLVM lowers well already.
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
