// The kernel lowerings run after bufferization and say so otherwise; bad
// pass options are reported, not acted on.
// RUN: attn-opt %s -split-input-file --attn-lower-gemm --attn-lower-attention -verify-diagnostics
// RUN: echo "module {}" | not attn-opt --attn-lower-gemm="tile-rows=0" 2>&1 | FileCheck %s --check-prefix=GEMM
// RUN: echo "module {}" | not attn-opt --attn-lower-attention="block-rows=-1" 2>&1 | FileCheck %s --check-prefix=ATTENTION
// RUN: echo "module {}" | not attn-opt --attn-lower-gemm="prefetch-bytes=-64" 2>&1 | FileCheck %s --check-prefix=PREFETCH
// GEMM: error: attn-lower-gemm: vector-width, tile-rows and k-unroll must be positive and prefetch-bytes not negative, got 16, 0, 4, 4096
// PREFETCH: error: {{.*}} got 16, 8, 4, -64
// GEMM-NOT: builtin.module
// ATTENTION: error: attn-lower-attention: vector-width, block-rows, split-keys and decode-tasks must be positive, got 16, -1, 256, 16

func.func @gemm_on_tensors(%x: tensor<4x64xf32>, %w: tensor<2x64x32xf32>, %init: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{must be bufferized before attn-lower-gemm}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<2x64x32xf32>) outs(%init : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @attention_on_tensors(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{must be bufferized before attn-lower-attention}}
  %0 = attn.flash_attention heads(2) kv_heads(2) scale(0.125) ins(%q, %k, %k : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
