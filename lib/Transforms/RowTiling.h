//===- RowTiling.h - linalg ops over a dynamic number of rows, row by row -===//
//
// A prefill's norms, RoPE and copies run over the prompt's tokens: a
// dynamic first loop. attn-parallelize-rows splits them into one-row ops
// under an scf.parallel; attn-vectorize-rows, under a plain loop where no
// thread runs them, so that each one-row op has the static shape linalg's
// vectorizer needs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_TRANSFORMS_ROWTILING_H
#define ATTN_LIB_TRANSFORMS_ROWTILING_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// Whether `op` is a buffer op whose first loop runs in parallel over a
/// dynamic number of rows.
inline bool overDynamicRows(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0)
    return false;
  if (op.getIteratorTypesArray().front() != utils::IteratorType::parallel)
    return false;
  return ShapedType::isDynamic(op.getStaticLoopRanges().front());
}

/// Replaces `op` by a loop of `loopType` over its rows of the op on one row.
inline LogicalResult tileRowByRow(RewriterBase &rewriter, linalg::LinalgOp op,
                                  linalg::LinalgTilingLoopType loopType) {
  SmallVector<int64_t> tiles(op.getNumLoops(), 0);
  tiles.front() = 1;
  linalg::LinalgTilingOptions options;
  options.setTileSizes(tiles).setLoopType(loopType);
  rewriter.setInsertionPoint(op);
  if (failed(linalg::tileLinalgOp(rewriter, op, options)))
    return failure();
  rewriter.eraseOp(op);
  return success();
}

} // namespace mlir::attn

#endif // ATTN_LIB_TRANSFORMS_ROWTILING_H
