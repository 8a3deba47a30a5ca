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
// Neighbouring row loops then become one where that is safe: an RMSNorm is
// four ops (zero the sums, sum the squares, the reciprocal root, the
// scale), RoPE three, and each loop is a fork and a join of the thread
// team. Fusing A into the next loop B keeps each row's work in order; it
// is safe when every buffer one of them writes and the other touches is
// accessed by both only as row iv of the same view, and nothing with a
// memory effect other than an allocation lies between them.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"
#include "RowTiling.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/CSE.h"

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

/// The buffer `view` is a view of (through subviews, reshapes and casts): a
/// block argument or an allocation; null when that is not known.
Value rootBuffer(Value view) {
  while (Operation *def = view.getDefiningOp()) {
    if (isa<memref::AllocOp, memref::AllocaOp>(def))
      return view;
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      return {};
    view = viewLike.getViewSource();
  }
  return view;
}

/// An extent as (memref, dimension) when it is a memref.dim (followed
/// through allocations and subviews to the value that sized them), else
/// (the value, -1): equal pairs are equal extents.
std::pair<Value, int64_t> extentOf(Value extent) {
  while (auto dim = extent.getDefiningOp<memref::DimOp>()) {
    std::optional<int64_t> index = getConstantIntValue(dim.getIndex());
    if (!index)
      break;
    Value source = dim.getSource();
    Operation *def = source.getDefiningOp();
    if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def)) {
      MemRefType type = alloc.getType();
      if (!type.isDynamicDim(*index))
        return {source, *index};
      extent = alloc.getDynamicSizes()[type.getDynamicDimIndex(*index)];
      continue;
    }
    if (auto subview = dyn_cast_or_null<memref::SubViewOp>(def)) {
      if (subview.isDynamicSize(*index) && subview.getDroppedDims().none()) {
        extent = subview.getDynamicSize(*index);
        continue;
      }
    }
    return {source, *index};
  }
  return {extent, -1};
}

/// A one-dimensional loop from 0 by 1, as tileRowByRow makes them.
bool isRowLoop(scf::ParallelOp loop) {
  return loop.getNumLoops() == 1 && loop.getNumReductions() == 0 &&
         isConstantIntValue(loop.getLowerBound()[0], 0) &&
         isConstantIntValue(loop.getStep()[0], 1);
}

/// Each memory access in `loop`'s body: the buffer's root, the view
/// accessed as row iv (null when the access is not a row iv subview of a
/// view from outside the loop), and whether it writes. False when some
/// effect is unknown.
struct RowAccess {
  Value root, rowOf;
  bool write;
};
bool collectAccesses(scf::ParallelOp loop, SmallVectorImpl<RowAccess> &accesses) {
  Value iv = loop.getInductionVars()[0];
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (isa<scf::ReduceOp>(op) || isMemoryEffectFree(op))
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ? WalkResult::advance()
                                                                 : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(effect.getEffect()))
        return WalkResult::interrupt();
      Value buffer = effect.getValue();
      if (!buffer)
        return WalkResult::interrupt();
      Value root = rootBuffer(buffer);
      if (!root)
        return WalkResult::interrupt();
      Value rowOf;
      if (auto row = buffer.getDefiningOp<memref::SubViewOp>();
          row && !loop->isAncestor(row.getSource().getParentBlock()->getParentOp()) &&
          row.getMixedOffsets().front() == OpFoldResult(iv) &&
          isConstantIntValue(row.getMixedSizes().front(), 1) &&
          isConstantIntValue(row.getMixedStrides().front(), 1))
        rowOf = row.getSource();
      accesses.push_back({root, rowOf, isa<MemoryEffects::Write>(effect.getEffect())});
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Whether `second` may run each row's work right after `first`'s: see the
/// file comment.
bool canFuse(scf::ParallelOp first, scf::ParallelOp second) {
  if (extentOf(first.getUpperBound()[0]) != extentOf(second.getUpperBound()[0]))
    return false;
  for (Operation *op = first->getNextNode(); op != second; op = op->getNextNode()) {
    if (op->getNumRegions() != 0)
      return false;
    if (isMemoryEffectFree(op))
      continue;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects || !effects.onlyHasEffect<MemoryEffects::Allocate>())
      return false;
  }
  SmallVector<RowAccess> a, b;
  if (!collectAccesses(first, a) || !collectAccesses(second, b))
    return false;
  auto conflicts = [](ArrayRef<RowAccess> writer, ArrayRef<RowAccess> other) {
    for (const RowAccess &w : writer) {
      if (!w.write)
        continue;
      for (const RowAccess &o : other) {
        bool sameRoot = w.root == o.root;
        // Two arguments may be views of one buffer; an allocation is its own.
        bool mayAlias = sameRoot || (isa<BlockArgument>(w.root) && isa<BlockArgument>(o.root));
        if (!mayAlias)
          continue;
        if (!sameRoot || !w.rowOf || w.rowOf != o.rowOf)
          return true;
      }
    }
    return false;
  };
  if (conflicts(a, b) || conflicts(b, a))
    return false;
  // Both sides' every access to a shared written root is row iv of one view.
  auto rowsOnly = [](ArrayRef<RowAccess> accesses, Value root, Value rowOf) {
    return llvm::all_of(accesses, [&](const RowAccess &x) {
      return x.root != root || x.rowOf == rowOf;
    });
  };
  for (const RowAccess &w : a)
    if (w.write && !(rowsOnly(a, w.root, w.rowOf) && rowsOnly(b, w.root, w.rowOf)))
      return false;
  for (const RowAccess &w : b)
    if (w.write && !(rowsOnly(a, w.root, w.rowOf) && rowsOnly(b, w.root, w.rowOf)))
      return false;
  return true;
}

/// Moves `first`'s body to the start of `second`'s and erases `first`.
void fuseInto(RewriterBase &rewriter, scf::ParallelOp first, scf::ParallelOp second) {
  Block *from = first.getBody();
  rewriter.eraseOp(from->getTerminator());
  rewriter.inlineBlockBefore(from, &second.getBody()->front(),
                             second.getInductionVars());
  rewriter.eraseOp(first);
}

/// Fuses each run of neighbouring row loops in `block` (and nested blocks).
void fuseRowLoops(RewriterBase &rewriter, Block &block) {
  for (Operation &op : block)
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        fuseRowLoops(rewriter, nested);
  scf::ParallelOp previous;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto loop = dyn_cast<scf::ParallelOp>(op);
    if (!loop || !isRowLoop(loop))
      continue;
    if (previous && canFuse(previous, loop))
      fuseInto(rewriter, previous, loop);
    previous = loop;
  }
}

struct ParallelizeRowsPass
    : mlir::attn::impl::ParallelizeRowsPassBase<ParallelizeRowsPass> {
  using Base::Base;

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
    if (!fuse)
      return;
    // One SSA value per extent, so that equal loop bounds look equal.
    DominanceInfo dominance;
    eliminateCommonSubExpressions(rewriter, dominance, getOperation());
    for (Region &region : getOperation()->getRegions())
      for (Block &block : region)
        fuseRowLoops(rewriter, block);
  }
};

} // namespace
