//===- AttnToLinalg.h - attn to linalg patterns -----------------*- C++ -*-===//

#ifndef ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H
#define ATTN_CONVERSION_ATTNTOLINALG_ATTNTOLINALG_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir {
class RewritePatternSet;
namespace attn {

/// The functions the tensor-parallel ops lower to, declared private in the
/// module: all_reduce(memref<?xf32>) in place, all_gather(memref<?xf32> in,
/// memref<?xf32> out) and group_rank() -> i64. attn-compile defines them
/// over the hooks of attn_model_set_collectives (ModelAbi.cpp).
inline constexpr llvm::StringLiteral kAllReduceFunction = "attn_collective_all_reduce";
inline constexpr llvm::StringLiteral kAllGatherFunction = "attn_collective_all_gather";
inline constexpr llvm::StringLiteral kGroupRankFunction = "attn_collective_rank";

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
