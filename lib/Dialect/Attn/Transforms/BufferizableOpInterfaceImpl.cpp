//===- BufferizableOpInterfaceImpl.cpp - bufferizing attn codegen ops -----===//

#include "attn/Dialect/Attn/Transforms/BufferizableOpInterfaceImpl.h"

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::bufferization;

namespace {

/// A destination-style attn op on tensors becomes the same op on the
/// operands' buffers, with no results; its tensor result is the init's
/// buffer, written in place.
template <typename OpTy>
struct DstOpBufferization
    : DstBufferizableOpInterfaceExternalModel<DstOpBufferization<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      if (!isa<TensorType>(operand.getType())) {
        operands.push_back(operand);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
      if (failed(buffer))
        return failure();
      operands.push_back(*buffer);
    }
    auto dps = cast<DestinationStyleOpInterface>(op);
    SmallVector<Value> results;
    for (OpOperand &init : dps.getDpsInitsMutable())
      results.push_back(operands[init.getOperandNumber()]);

    rewriter.setInsertionPoint(op);
    OperationState bufferized(op->getLoc(), op->getName());
    bufferized.addOperands(operands);
    bufferized.addAttributes(op->getAttrs());
    bufferized.propertiesAttr = op->getPropertiesAsAttribute();
    rewriter.create(bufferized);
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

} // namespace

void mlir::attn::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    GemmOp::attachInterface<DstOpBufferization<GemmOp>>(*ctx);
    FlashAttentionOp::attachInterface<DstOpBufferization<FlashAttentionOp>>(
        *ctx);
  });
}
