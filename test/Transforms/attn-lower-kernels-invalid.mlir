// The kernel lowerings run after bufferization and say so otherwise; bad
// pass options are reported, not acted on.
// RUN: attn-opt %s -split-input-file --attn-lower-gemm --attn-lower-attention -verify-diagnostics
// RUN: echo "module {}" | not attn-opt --attn-lower-gemm="tile-rows=0" 2>&1 | FileCheck %s --check-prefix=GEMM
// RUN: echo "module {}" | not attn-opt --attn-lower-attention="block-rows=-1" 2>&1 | FileCheck %s --check-prefix=ATTENTION
// RUN: echo "module {}" | not attn-opt --attn-lower-gemm="prefetch-bytes=-64" 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: echo "module {}" | not attn-opt --attn-lower-gemm="int8-dot=vpdpwssd" 2>&1 | FileCheck %s --check-prefix=DOT
// DOT: error: attn-lower-gemm: int8-dot must be vpdpbusd or vpmaddubsw, got 'vpdpwssd'
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

// -----

// The int8 dot products work on 32- or 64-byte vectors: 8 or 16 lanes of 4
// inputs; a block of 4 features would narrow the vectors to 4 lanes.
func.func @q8_0_needs_8_lanes(%x: memref<?x64xf32>, %w: memref<1x2x4x34xi8>, %out: memref<?x4xf32>) {
  // expected-error @+1 {{with a q8_0 weight needs blocks of whole 8- or 16-lane vectors (the int8 dot products of AVX2 and AVX-512), got vector-width 16 and blocks of 4}}
  attn.gemm none ins(%x, %w : memref<?x64xf32>, memref<1x2x4x34xi8>) outs(%out : memref<?x4xf32>)
  return
}

// -----

func.func @q4_0_input_strided(%x: memref<4x64xf32, strided<[1, 4]>>, %w: memref<2x2x32x18xi8>, %out: memref<4x64xf32>) {
  // expected-error @+1 {{with a quantized weight needs an input with contiguous rows, got 'memref<4x64xf32, strided<[1, 4]>>'}}
  attn.gemm none ins(%x, %w : memref<4x64xf32, strided<[1, 4]>>, memref<2x2x32x18xi8>) outs(%out : memref<4x64xf32>)
  return
}
