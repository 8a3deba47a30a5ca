//===- ParallelizeRows.cpp - linalg ops over a prefill's rows in parallel -===//
//
// After the gemm and attention kernels are lowered, what is left in a
// prefill is linalg on memrefs: norms, RoPE, KV cache appends, gathers,
// copies. convert-linalg-to-loops turns each into sequential loops, so one
// core computes them while the other threads wait at the next kernel's
// fork. A linalg op whose first loop is parallel over a dynamic extent (the
// prompt's tokens) is tiled here into an scf.parallel over rows of the op on
// one row, which ParallelToOpenMP runs on the thread team. Ops over a static
// extent (decode's single row) stay sequential: a fork there costs more
// than the row.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"
#include "RowTiling.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_PARALLELIZEROWSPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `op` runs over a dynamic number of rows that may go in parallel.
bool overDynamicRows(linalg::LinalgOp op) {
  return attn::overDynamicRows(op) && !op->getParentOfType<scf::ParallelOp>();
}

struct ParallelizeRowsPass
    : mlir::attn::impl::ParallelizeRowsPassBase<ParallelizeRowsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (overDynamicRows(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      if (failed(attn::tileRowByRow(rewriter, op,
                                    linalg::LinalgTilingLoopType::ParallelLoops))) {
        op.emitError("attn-parallelize-rows: could not tile the rows");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
