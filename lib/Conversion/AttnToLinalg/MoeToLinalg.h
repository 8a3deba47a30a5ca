//===- MoeToLinalg.h - mixture-of-experts lowering ---------------*- C++ -*-===//

#ifndef ATTN_LIB_CONVERSION_ATTNTOLINALG_MOETOLINALG_H
#define ATTN_LIB_CONVERSION_ATTNTOLINALG_MOETOLINALG_H

namespace mlir {
class RewritePatternSet;
namespace attn {

/// Adds the reference lowerings of attn.moe_router and attn.moe_experts.
void populateMoeToLinalgPatterns(RewritePatternSet &patterns);

} // namespace attn
} // namespace mlir

#endif // ATTN_LIB_CONVERSION_ATTNTOLINALG_MOETOLINALG_H
