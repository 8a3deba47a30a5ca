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

def PublicResultsToOutParamsPass
    : Pass<"attn-public-results-to-out-params", "::mlir::ModuleOp"> {
  let summary = "Return public functions' buffers through caller-allocated "
                "out-parameters";
  let description = [{
    After bufferization, a public function's memref results become trailing
    out-parameters that its caller allocates (a static or dynamic shape
    alike), so no buffer ownership crosses the library boundary. Private
    functions (the per-layer functions of a model) keep returning buffers:
    their callers are compiled with them, and a caller cannot preallocate a
    result whose size the callee computes. Copies into the out-parameters are
    `linalg.copy`, which later stages vectorize.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
