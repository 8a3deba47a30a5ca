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

def FuseRopeNormsPass : Pass<"attn-fuse-rope-norms"> {
  let summary = "Fold a per-head RMSNorm (qk-norm) into the RoPE it feeds";
  let description = [{
    Rewrites `attn.rope(attn.rms_norm(x, g) head_dim(d))`, where the norm's
    only use is a rope of the same `head_dim` without a norm of its own,
    into one `attn.rope` with the input norm `rms_norm(g) epsilon(e)` (and
    the norm's gain offset): Qwen3's and Gemma 3's q_norm and k_norm. The
    rope lowering then normalizes each pair as it rotates it, so the
    normalized queries and keys are never written to memory: one read of
    the projection's q or k for the statistics and one for the rotation,
    instead of a norm pass, a write and then the rope.

    A norm with another use, or over whole rows, is left alone.

    Example:
    ```mlir
    %n = attn.rms_norm %q, %g epsilon(1.0e-06) head_dim(64) : tensor<?x256xf32>, tensor<64xf32>
    %r = attn.rope %n offset(%pos) head_dim(64) theta(1.0e+06) rotate_half : tensor<?x256xf32>
    ```
    becomes
    ```mlir
    %r = attn.rope %q offset(%pos) head_dim(64) theta(1.0e+06) rms_norm(%g : tensor<64xf32>) epsilon(1.0e-06) rotate_half : tensor<?x256xf32>
    ```
  }];
}

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_TD
