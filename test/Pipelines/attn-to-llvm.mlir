// What each stage of attn-to-llvm leaves behind, on a LLaMA-style block.
// RUN: attn-opt %s --attn-pipeline-linalg | FileCheck %s --check-prefix=LINALG
// RUN: attn-opt %s --attn-pipeline-linalg --attn-pipeline-bufferize | FileCheck %s --check-prefix=BUFFERS
// RUN: attn-opt %s --attn-pipeline-linalg --attn-pipeline-bufferize --attn-pipeline-loops | FileCheck %s --check-prefix=LOOPS --implicit-check-not=linalg. --implicit-check-not=attn.
// RUN: attn-opt %s --attn-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s --attn-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=IR

// Stage 1: the block is linalg on tensors, but for the attention, which
// stays an attn.flash_attention for its own kernel (attn-lower-attention,
// stage 3). No other attn op is left, before or after it.
// LINALG-LABEL: func.func @block
// LINALG-NOT: attn.{{(rms_norm|linear|rope|kv_cache|attention |residual_add)}}
// LINALG: linalg.matmul
// LINALG-NOT: attn.{{(rms_norm|linear|rope|kv_cache|attention |residual_add)}}
// LINALG: attn.flash_attention
// LINALG-NOT: attn.{{(rms_norm|linear|rope|kv_cache|attention |residual_add)}}
// LINALG: return

// Stage 2: memrefs only. The cache is written in place through its argument,
// the result is an out-parameter, and no copy calls into the MLIR runtime.
// BUFFERS-LABEL: func.func @block
// BUFFERS-SAME: %[[KC:[a-zA-Z0-9]*]]: memref<64x16xf32>, %{{.*}}: index, %[[OUT:[a-zA-Z0-9]*]]: memref<?x32xf32>)
// BUFFERS-NOT: tensor<
// BUFFERS-NOT: memref.copy
// BUFFERS: memref.subview %[[KC]]
// BUFFERS: return

// Stage 3: loops, no linalg and no attn op anywhere (--implicit-check-not).
// LOOPS-LABEL: func.func @block
// LOOPS: scf.for

// Stage 4: only the LLVM dialect.
// LLVM-NOT: func.func
// LLVM-NOT: scf.
// LLVM-NOT: memref.
// LLVM-NOT: arith.
// LLVM-NOT: math.
// LLVM: llvm.func @block(
// LLVM-NOT: builtin.unrealized_conversion_cast

// IR: define void @block(
// IR-NOT: @memrefCopy

func.func @block(%x: tensor<?x32xf32>, %g: tensor<32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<16x32xf32>,
                 %kcm: memref<64x16xf32>, %pos: index) -> tensor<?x32xf32> {
  %kc = bufferization.to_tensor %kcm restrict writable : memref<64x16xf32> to tensor<64x16xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %h = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<?x32xf32>, tensor<32xf32>
  %q0 = attn.linear %h, %wq layout(out_in) : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
  %k0 = attn.linear %h, %wk layout(out_in) : tensor<?x32xf32>, tensor<16x32xf32> -> tensor<?x16xf32>
  %q = attn.rope %q0 offset(%pos) head_dim(8) theta(1.0e+04) rotate_half : tensor<?x32xf32>
  %k = attn.rope %k0 offset(%pos) head_dim(8) theta(1.0e+04) rotate_half : tensor<?x16xf32>
  %kc1 = attn.kv_cache_append %k into %kc[%pos] : tensor<?x16xf32> into tensor<64x16xf32>
  %len = arith.addi %pos, %n : index
  %keys = attn.kv_cache_read %kc1[%len] : tensor<64x16xf32> -> tensor<?x16xf32>
  %a = attn.attention %q, %keys, %keys heads(4) kv_heads(2) causal : tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x32xf32>
  %y = attn.residual_add %x, %a : tensor<?x32xf32>
  bufferization.materialize_in_destination %kc1 in restrict writable %kcm : (tensor<64x16xf32>, memref<64x16xf32>) -> ()
  return %y : tensor<?x32xf32>
}
