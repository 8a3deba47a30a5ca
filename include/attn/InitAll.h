//===- InitAll.h - one registration point for every attn tool ---*- C++ -*-===//
//
// attn-opt and attn-compile register the same dialects, external interface
// models and passes through these two functions, so a pipeline that runs in
// one tool runs in the other.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_INITALL_H
#define ATTN_INITALL_H

namespace mlir {
class DialectRegistry;
namespace attn {

/// Registers the attn dialect, every upstream dialect our pipelines produce,
/// and the external models (tiling, bufferization, LLVM translation) they need.
void registerAllDialects(DialectRegistry &registry);

/// Registers our passes and pipelines plus the upstream passes attn-opt
/// exposes.
void registerAllPasses();

} // namespace attn
} // namespace mlir

#endif // ATTN_INITALL_H
