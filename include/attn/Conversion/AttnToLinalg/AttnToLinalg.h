//===- AttnToLinalg.h - attn to linalg patterns -----------------*- C++ -*-===//

#ifndef ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include <cstdint>

namespace mlir {
class RewritePatternSet;
namespace attn {

/// Block sizes of the attention lowering.
struct AttentionLoweringOptions {
  /// Query rows processed together against each key block.
  int64_t queryBlock = 64;
  /// Keys per online-softmax step.
  int64_t kvBlock = 64;
  /// Attention without a bias becomes attn.flash_attention (lowered by
  /// attn-lower-attention) instead of linalg ops.
  bool useKernel = false;
};

/// Adds one pattern per attn op that rewrites it to linalg/tensor/scf/arith/
/// math ops on tensors.
void populateAttnToLinalgPatterns(RewritePatternSet &patterns,
                                  const AttentionLoweringOptions &options = {});

} // namespace attn
} // namespace mlir

#endif // ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
