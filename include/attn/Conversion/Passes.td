//===- Passes.td - attn conversion passes ----------------------------------===//

#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalgPass : Pass<"convert-attn-to-linalg"> {
  let summary = "Lower attn ops to linalg, tensor, scf, arith and math";
  let description = [{
    Rewrites every attn op into destination-passing-style ops on tensors:
    linalg named ops and `linalg.generic`s for the dense math,
    `tensor.insert_slice`/`extract_slice` for the KV cache, and for
    `attn.attention` a blocked loop nest with online softmax:

    ```
    for each head h, for each block of query rows:
      m = -inf, l = 0, acc = 0
      for each block of keys up to the causal diagonal:   // blocks above it are never visited
        s = scale * Q_blk K_blk^T (+ bias), masked (-inf) where a key is not visible
        m' = max(m, rowmax(s));  p = exp(s - m');  alpha = exp(m - m')
        l = alpha * l + rowsum(p);  acc = alpha * acc + p V_blk;  m = m'
      out = acc / l   (0 for a row that sees no key)
    ```

    The score tile is at most `query-block x kv-block`, whatever the sequence
    length: the `[seq, seq]` matrix is never materialized. Sequence lengths
    stay dynamic; partial blocks at the ends are handled with `min` bounds.

    With `attention-kernel`, attention without a bias instead becomes the
    destination-style `attn.flash_attention`, which `attn-lower-attention`
    turns into a vectorized kernel after bufferization (the attn-to-llvm
    pipeline's default); packed projections always become `attn.gemm`.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let options = [
    Option<"queryBlock", "query-block", "int64_t", /*default=*/"64",
           "Query rows per attention block">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"64",
           "Keys per attention block (the online-softmax step)">,
    Option<"attentionKernel", "attention-kernel", "bool", /*default=*/"false",
           "Lower attention without a bias to attn.flash_attention (the CPU "
           "kernel) instead of linalg ops">,
  ];
}

#endif // ATTN_CONVERSION_PASSES_TD
