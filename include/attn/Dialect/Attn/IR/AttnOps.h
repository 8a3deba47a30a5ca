//===- AttnOps.h - attn dialect operations ----------------------*- C++ -*-===//

#ifndef ATTN_DIALECT_ATTN_IR_ATTNOPS_H
#define ATTN_DIALECT_ATTN_IR_ATTNOPS_H

#include "attn/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "attn/Dialect/Attn/IR/AttnEnums.h.inc"

namespace mlir {
namespace attn {
/// Whether a gemm epilogue multiplies by a second product (swiglu, geglu),
/// so that the gemm takes a second weight.
inline bool isGatedEpilogue(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::Swiglu ||
         epilogue == GemmEpilogue::GegluTanh ||
         epilogue == GemmEpilogue::GegluErf ||
         epilogue == GemmEpilogue::ClampedSwiglu;
}
} // namespace attn
} // namespace mlir

#define GET_OP_CLASSES
#include "attn/Dialect/Attn/IR/AttnOps.h.inc"

#endif // ATTN_DIALECT_ATTN_IR_ATTNOPS_H
