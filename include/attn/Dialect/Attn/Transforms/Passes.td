//===- Passes.td - attn dialect-level transformations ----------------------===//

#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_TD
#define ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseLinearEpiloguesPass : Pass<"attn-fuse-linear-epilogues"> {
  let summary = "Fold the elementwise consumers of packed projections into "
                "attn.gemm epilogues, and the norms before them into its input";
  let description = [{
    Rewrites, for projections whose weight is packed:

    - `swiglu(linear(x, Wg), linear(x, Wu))` into one `attn.gemm swiglu`
      that reads `x` once and both weights, and stores only the gated
      product;
    - `gelu(linear(x, W, b))` and `silu(linear(x, W))` into a gemm with that
      epilogue;
    - `residual_add(projection, r)` (either operand) into a gemm that adds
      `r` before its store;
    - with `input-norms`, `rms_norm` / `layer_norm` whose only use is a
      projection's input into that gemm's input norm, which the kernel
      applies as it quantizes the rows (q8_0, q4_0; the float kernels
      normalize a copy first).

    Each fused intermediate is never written to memory. A projection with
    another use is left alone (its value is needed anyway), as are a norm
    with another use (a post-norm block's residual) and projections with
    unpacked weights.
  }];
  let options = [
    Option<"inputNorms", "input-norms", "bool", /*default=*/"true",
           "Fuse a norm into the projection it feeds">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_TD
