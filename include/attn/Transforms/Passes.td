//===- Passes.td - attn CPU code generation passes -------------------------===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MemrefCopyToLinalgPass : Pass<"attn-memref-copy-to-linalg"> {
  let summary = "Rewrite memref.copy as linalg.copy";
  let description = [{
    Bufferization copies results into out-parameters and out-of-place
    buffers with `memref.copy`. Between strided memrefs (a KV cache prefix,
    a head's columns) MLIR lowers that op to a call into
    `libmlir_c_runner_utils`, which a compiled model must not depend on. As
    `linalg.copy` the copy becomes loops (or vectors) in the model itself.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
