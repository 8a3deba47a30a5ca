//===- ParallelToOpenMP.cpp - scf.parallel as an OpenMP team ---------------===//
//
// Each outermost scf.parallel without reductions becomes one omp.parallel
// region whose threads share the loop's iterations round-robin, by
// omp_get_thread_num and omp_get_num_threads: no worksharing-loop runtime
// calls. (Debian's libomp formats a debug string, a malloc, in every
// __kmpc_for_static_init; a model runs dozens of parallel loops per token.)
// Round-robin over the linearized iteration space also balances the causal
// attention blocks, whose cost grows along the sequence. A loop marked
// attn.contiguous_schedule (equal-cost iterations that stream memory, like a
// GEMV's weight blocks) gives each thread one contiguous range instead.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_PARALLELTOOPENMPPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

/// Declares `int32_t name(void)` in `module` once.
func::FuncOp ompQuery(OpBuilder &b, ModuleOp module, StringRef name) {
  if (auto func = module.lookupSymbol<func::FuncOp>(name))
    return func;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(b, module.getLoc(), name,
                                   b.getFunctionType({}, {b.getI32Type()}));
  func.setPrivate();
  return func;
}

void lowerToTeam(RewriterBase &rewriter, ModuleOp module, scf::ParallelOp op) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // Trip counts, and their product: the linearized iteration space.
  SmallVector<Value> trips;
  Value total = arith::ConstantIndexOp::create(rewriter, loc, 1);
  for (auto [lb, ub, step] :
       llvm::zip(op.getLowerBound(), op.getUpperBound(), op.getStep())) {
    Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
    Value trip = arith::CeilDivSIOp::create(rewriter, loc, span, step);
    trip = arith::MaxSIOp::create(rewriter, loc, trip,
                                  arith::ConstantIndexOp::create(rewriter, loc, 0));
    trips.push_back(trip);
    total = arith::MulIOp::create(rewriter, loc, total, trip);
  }
  func::FuncOp threadNum = ompQuery(rewriter, module, "omp_get_thread_num");
  func::FuncOp numThreads = ompQuery(rewriter, module, "omp_get_num_threads");

  auto team = omp::ParallelOp::create(rewriter, loc, ArrayRef<NamedAttribute>{});
  Block *body = rewriter.createBlock(&team.getRegion());
  rewriter.setInsertionPointToStart(body);
  auto asIndex = [&](func::FuncOp query) -> Value {
    Value value = func::CallOp::create(rewriter, loc, query, ValueRange{}).getResult(0);
    return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), value);
  };
  Value self = asIndex(threadNum), threads = asIndex(numThreads);
  // Fixed-size stack buffers at the top of the body (a kernel's scratch
  // tiles) are allocated once per thread, before its loop.
  IRMapping mapping;
  bool scoped = false;
  for (Operation &nested : op.getBody()->without_terminator()) {
    auto alloca = dyn_cast<memref::AllocaOp>(nested);
    if (alloca && alloca->getNumOperands() == 0)
      mapping.map(alloca.getResult(), rewriter.clone(*alloca)->getResult(0));
    else
      scoped |= nested.walk([](memref::AllocaOp) {
                        return WalkResult::interrupt();
                      }).wasInterrupted();
  }
  // Iterations of thread `self`: every threads-th from `self` (round-robin),
  // or one contiguous range when the loop asks for it.
  Value begin = self, end = total, stride = threads;
  if (op->hasAttr(attn::kContiguousScheduleAttr)) {
    Value chunk = arith::CeilDivSIOp::create(rewriter, loc, total, threads);
    begin = arith::MinSIOp::create(
        rewriter, loc, arith::MulIOp::create(rewriter, loc, self, chunk), total);
    end = arith::MinSIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, begin, chunk), total);
    stride = arith::ConstantIndexOp::create(rewriter, loc, 1);
  }
  auto loop = scf::ForOp::create(rewriter, loc, begin, end, stride);
  omp::TerminatorOp::create(rewriter, team.getLoc());
  rewriter.setInsertionPointToStart(loop.getBody());
  if (scoped) {
    // Other stack buffers live for one iteration: a scope inside the loop,
    // or the stack would grow with every iteration.
    auto scope = memref::AllocaScopeOp::create(rewriter, loc, TypeRange{});
    rewriter.createBlock(&scope.getBodyRegion());
    memref::AllocaScopeReturnOp::create(rewriter, loc, ValueRange{});
    rewriter.setInsertionPointToStart(&scope.getBodyRegion().front());
  }

  // Delinearize (last dimension fastest) and clone the body.
  Value rest = loop.getInductionVar();
  SmallVector<Value> ivs(trips.size());
  for (int64_t d = static_cast<int64_t>(trips.size()) - 1; d >= 0; --d) {
    Value index = d == 0 ? rest : arith::RemSIOp::create(rewriter, loc, rest, trips[d]);
    if (d > 0)
      rest = arith::DivSIOp::create(rewriter, loc, rest, trips[d]);
    Value scaled = arith::MulIOp::create(rewriter, loc, index, op.getStep()[d]);
    ivs[d] = arith::AddIOp::create(rewriter, loc, op.getLowerBound()[d], scaled);
  }
  for (auto [iv, value] : llvm::zip(op.getInductionVars(), ivs))
    mapping.map(iv, value);
  for (Operation &nested : op.getBody()->without_terminator())
    if (!mapping.contains(nested.getResults().empty() ? Value()
                                                      : nested.getResult(0)))
      rewriter.clone(nested, mapping);
  rewriter.eraseOp(op);
}

struct ParallelToOpenMPPass
    : mlir::attn::impl::ParallelToOpenMPPassBase<ParallelToOpenMPPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp op) {
      // The outermost loops only; a nested one runs on its thread (scf-to-cf
      // makes it sequential).
      if (!op->getParentOfType<scf::ParallelOp>())
        loops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp op : loops) {
      if (op.getNumReductions() != 0) {
        op.emitOpError("with reductions is not supported by "
                       "attn-parallel-to-openmp");
        return signalPassFailure();
      }
      lowerToTeam(rewriter, module, op);
    }
  }
};

} // namespace
