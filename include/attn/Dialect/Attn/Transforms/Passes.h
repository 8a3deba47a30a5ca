//===- Passes.h - attn dialect-level transformations ------------*- C++ -*-===//

#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace attn {

#define GEN_PASS_DECL
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/Dialect/Attn/Transforms/Passes.h.inc"

/// The epilogue rewrites of attn-fuse-linear-epilogues.
void populateFuseLinearEpiloguesPatterns(RewritePatternSet &patterns);

/// Its input-norm rewrites (option input-norms): a norm into the gemm it
/// feeds.
void populateFuseInputNormPatterns(RewritePatternSet &patterns);

/// attn-fuse-rope-norms: a per-head rms_norm into the rope it feeds.
void populateFuseRopeNormPatterns(RewritePatternSet &patterns);

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H
