//===- PublicResultsToOutParams.cpp - out-parameters for public functions -===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_PUBLICRESULTSTOOUTPARAMSPASS
#include "attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct PublicResultsToOutParamsPass
    : mlir::attn::impl::PublicResultsToOutParamsPassBase<
          PublicResultsToOutParamsPass> {
  void runOnOperation() override {
    bufferization::BufferResultsToOutParamsOpts options;
    options.filterFn = [](func::FuncOp *func) { return func->isPublic(); };
    options.modifyPublicFunctions = true;
    options.hoistStaticAllocs = true;
    options.hoistDynamicAllocs = true;
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from, Value to) {
      linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    if (failed(bufferization::promoteBufferResultsToOutParams(getOperation(),
                                                              options)))
      signalPassFailure();
  }
};
} // namespace
