//===- ScopeParallelAllocas.cpp - stack buffers freed per iteration -------===//
//
// scf.parallel is an automatic allocation scope: a memref.alloca in its body
// lives for one iteration. Lowered to sequential loops (threads=0, or a
// parallel loop nested in a thread's work) the body becomes a plain loop,
// and LLVM's alloca in a loop grows the stack with every iteration: a gemm
// that widens each of its 128 weight blocks into a 48 KB stack copy would
// take 6 MB. A stack save at the top of such a body and a restore at its
// end keep the scope the loop promised. (Not a memref.alloca_scope: its
// region must stay one block, and the loops inside it become several when
// scf-to-cf runs, which must come first.)
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_SCOPEPARALLELALLOCASPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// Whether an alloca in `loop`'s body belongs to the loop's scope (not to a
/// nested scope of its own).
bool allocatesInScope(scf::ParallelOp loop) {
  return loop.getBody()
      ->walk([&](memref::AllocaOp alloca) {
        Operation *scope = alloca->getParentWithTrait<OpTrait::AutomaticAllocationScope>();
        if (scope == loop.getOperation())
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

struct ScopeParallelAllocasPass
    : mlir::attn::impl::ScopeParallelAllocasPassBase<ScopeParallelAllocasPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (loop.getNumReductions() == 0 && allocatesInScope(loop))
        loops.push_back(loop);
    });
    OpBuilder b(&getContext());
    auto pointer = LLVM::LLVMPointerType::get(&getContext());
    for (scf::ParallelOp loop : loops) {
      Block *body = loop.getBody();
      b.setInsertionPointToStart(body);
      Value top = LLVM::StackSaveOp::create(b, loop.getLoc(), pointer);
      b.setInsertionPoint(body->getTerminator());
      LLVM::StackRestoreOp::create(b, loop.getLoc(), top);
    }
  }
};

} // namespace
