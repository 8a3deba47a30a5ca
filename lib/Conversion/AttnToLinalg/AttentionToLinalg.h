//===- AttentionToLinalg.h - attention lowering ------------------*- C++ -*-===//

#ifndef ATTN_LIB_CONVERSION_ATTNTOLINALG_ATTENTIONTOLINALG_H
#define ATTN_LIB_CONVERSION_ATTNTOLINALG_ATTENTIONTOLINALG_H

#include "attn/Conversion/AttnToLinalg/AttnToLinalg.h"

namespace mlir {
class RewritePatternSet;
namespace attn {

/// Adds the blocked online-softmax lowering of attn.attention.
void populateAttentionToLinalgPatterns(RewritePatternSet &patterns,
                                       const AttentionLoweringOptions &options);

} // namespace attn
} // namespace mlir

#endif // ATTN_LIB_CONVERSION_ATTNTOLINALG_ATTENTIONTOLINALG_H
