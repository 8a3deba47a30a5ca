//===- BufferizableOpInterfaceImpl.h - bufferizing attn codegen ops -*- C++ -*-===//

#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
namespace attn {

/// Lets one-shot bufferization handle the destination-style code generation
/// ops (attn.gemm): inputs are read, the init is written in place and the
/// result aliases it.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
