//===- Passes.h - attn CPU code generation passes ---------------*- C++ -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringRef.h"

namespace mlir {
namespace attn {

/// Unit attribute on an scf.parallel whose iterations cost the same and
/// stream memory in order: attn-parallel-to-openmp then gives each thread one
/// contiguous range of them rather than every n-th.
inline constexpr llvm::StringLiteral kContiguousScheduleAttr =
    "attn.contiguous_schedule";

#define GEN_PASS_DECL
#include "attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Transforms/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_TRANSFORMS_PASSES_H
