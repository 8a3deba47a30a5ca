// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// The CPU kernel ops round-trip on tensors and on memrefs, with every
// optional operand and epilogue.

// CHECK-LABEL: func.func @gemm_tensors
// CHECK: attn.gemm none ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<3x64x32xf32>) outs(%{{.*}} : tensor<?x80xf32>) -> tensor<?x80xf32>
// CHECK: attn.gemm gelu_tanh ins({{.*}}) bias(%{{.*}} : tensor<80xf32>) outs({{.*}}) -> tensor<?x80xf32>
// CHECK: attn.gemm swiglu ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) row_scale(%{{.*}} : tensor<?xf32>) residual(%{{.*}} : tensor<?x80xf32>) outs
// CHECK: attn.gemm clamped_swiglu ins({{.*}}) bias(%{{.*}} : tensor<80xf32>) bias2(%{{.*}} : tensor<80xf32>) alpha(1.702000e+00) limit(7.000000e+00) outs({{.*}}) -> tensor<?x80xf32>
func.func @gemm_tensors(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %w2: tensor<3x64x32xf32>,
                        %b: tensor<80xf32>, %s: tensor<?xf32>, %r: tensor<?x80xf32>,
                        %init: tensor<?x80xf32>) -> (tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>) {
  %0 = attn.gemm none ins(%x, %w : tensor<?x64xf32>, tensor<3x64x32xf32>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  %1 = attn.gemm gelu_tanh ins(%x, %w : tensor<?x64xf32>, tensor<3x64x32xf32>) bias(%b : tensor<80xf32>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  %2 = attn.gemm swiglu ins(%x, %w, %w2 : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) row_scale(%s : tensor<?xf32>) residual(%r : tensor<?x80xf32>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  %3 = attn.gemm clamped_swiglu ins(%x, %w, %w2 : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) bias(%b : tensor<80xf32>) bias2(%b : tensor<80xf32>) alpha(1.702) limit(7.0) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  return %0, %1, %2, %3 : tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
}

// A gemm's input norm: RMS (with Gemma's gain offset) or layer norm, on
// tensors and on memrefs, before the epilogue operands.
// CHECK-LABEL: func.func @gemm_input_norms
// CHECK: attn.gemm none ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<3x64x32xf32>) rms_norm(%[[G:.*]] : tensor<64xf32>) epsilon(9.99999974E-6) outs
// CHECK: attn.gemm silu ins({{.*}}) rms_norm(%[[G]] : tensor<64xf32>) epsilon(9.99999997E-7) gain_offset(1.000000e+00) bias(%{{.*}} : tensor<80xf32>) outs
// CHECK: attn.gemm gelu_tanh ins({{.*}}) layer_norm(%[[G]], %[[BETA:.*]] : tensor<64xf32>, tensor<64xf32>) epsilon(9.99999974E-6) residual(%{{.*}} : tensor<?x80xf32>) outs
// CHECK: attn.gemm none ins(%{{.*}}, %{{.*}} : memref<1x64xf32>, memref<3x64x32xf32>) layer_norm(%{{.*}}, %{{.*}} : memref<64xf32>, memref<64xf32>) epsilon(1.000000e-03) outs(%{{.*}} : memref<1x80xf32>)
func.func @gemm_input_norms(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<64xf32>,
                            %beta: tensor<64xf32>, %b: tensor<80xf32>, %r: tensor<?x80xf32>,
                            %init: tensor<?x80xf32>, %mx: memref<1x64xf32>, %mw: memref<3x64x32xf32>,
                            %mg: memref<64xf32>, %mout: memref<1x80xf32>) -> (tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>) {
  %0 = attn.gemm none ins(%x, %w : tensor<?x64xf32>, tensor<3x64x32xf32>) rms_norm(%g : tensor<64xf32>) epsilon(1.0e-05) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  %1 = attn.gemm silu ins(%x, %w : tensor<?x64xf32>, tensor<3x64x32xf32>) rms_norm(%g : tensor<64xf32>) epsilon(1.0e-06) gain_offset(1.0) bias(%b : tensor<80xf32>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  %2 = attn.gemm gelu_tanh ins(%x, %w : tensor<?x64xf32>, tensor<3x64x32xf32>) layer_norm(%g, %beta : tensor<64xf32>, tensor<64xf32>) epsilon(1.0e-05) residual(%r : tensor<?x80xf32>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  attn.gemm none ins(%mx, %mw : memref<1x64xf32>, memref<3x64x32xf32>) layer_norm(%mg, %mg : memref<64xf32>, memref<64xf32>) epsilon(1.0e-03) outs(%mout : memref<1x80xf32>)
  return %0, %1, %2 : tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x80xf32>
}

// CHECK-LABEL: func.func @gemm_memrefs
// CHECK: attn.gemm silu ins(%{{.*}}, %{{.*}} : memref<1x64xf32>, memref<3x64x32xf32>) outs(%{{.*}} : memref<1x80xf32>)
// CHECK-NOT: ->
// CHECK: attn.gemm gelu_erf
func.func @gemm_memrefs(%x: memref<1x64xf32>, %w: memref<3x64x32xf32>, %out: memref<1x80xf32>) {
  attn.gemm silu ins(%x, %w : memref<1x64xf32>, memref<3x64x32xf32>) outs(%out : memref<1x80xf32>)
  attn.gemm gelu_erf ins(%x, %w : memref<1x64xf32>, memref<3x64x32xf32>) outs(%out : memref<1x80xf32>)
  return
}

// CHECK-LABEL: func.func @flash_attention
// CHECK: attn.flash_attention heads(8) kv_heads(2) scale(1.250000e-01) causal ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x512xf32>, tensor<?x128xf32>, tensor<?x128xf32>) outs(%{{.*}} : tensor<?x512xf32>) -> tensor<?x512xf32>
// CHECK: attn.flash_attention heads(8) kv_heads(8) scale(5.000000e-01) ins({{.*}}) outs(%{{.*}} : memref<1x512xf32>)
// CHECK: attn.flash_attention heads(8) kv_heads(8) scale(5.000000e-01) softcap(5.000000e+01) causal window(16) ins({{.*}}) outs(%{{.*}} : memref<1x512xf32>)
// CHECK: attn.flash_attention heads(8) kv_heads(8) scale(5.000000e-01) causal sinks(%{{.*}} : memref<8xf32>) ins({{.*}}) outs(%{{.*}} : memref<1x512xf32>)
func.func @flash_attention(%q: tensor<?x512xf32>, %k: tensor<?x128xf32>, %v: tensor<?x128xf32>, %init: tensor<?x512xf32>,
                           %mq: memref<1x512xf32>, %mk: memref<?x512xf32>, %mv: memref<?x512xf32>, %mo: memref<1x512xf32>,
                           %ms: memref<8xf32>) -> tensor<?x512xf32> {
  %0 = attn.flash_attention heads(8) kv_heads(2) scale(0.125) causal ins(%q, %k, %v : tensor<?x512xf32>, tensor<?x128xf32>, tensor<?x128xf32>) outs(%init : tensor<?x512xf32>) -> tensor<?x512xf32>
  attn.flash_attention heads(8) kv_heads(8) scale(0.5) ins(%mq, %mk, %mv : memref<1x512xf32>, memref<?x512xf32>, memref<?x512xf32>) outs(%mo : memref<1x512xf32>)
  attn.flash_attention heads(8) kv_heads(8) scale(0.5) softcap(50.0) causal window(16) ins(%mq, %mk, %mv : memref<1x512xf32>, memref<?x512xf32>, memref<?x512xf32>) outs(%mo : memref<1x512xf32>)
  attn.flash_attention heads(8) kv_heads(8) scale(0.5) causal sinks(%ms : memref<8xf32>) ins(%mq, %mk, %mv : memref<1x512xf32>, memref<?x512xf32>, memref<?x512xf32>) outs(%mo : memref<1x512xf32>)
  return %0 : tensor<?x512xf32>
}

// Packed weights in the model-level ops: a projection reads [ceil(N/NR), K, NR]
// blocks; an embedding looks rows up in a packed table (tied output layer).
// CHECK-LABEL: func.func @packed
// CHECK: attn.linear %{{.*}}, %{{.*}}, %{{.*}} layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<80xf32> -> tensor<?x80xf32>
// CHECK: attn.embedding %{{.*}}[%{{.*}}] : tensor<4x64x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
func.func @packed(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %b: tensor<80xf32>,
                  %table: tensor<4x64x32xf32>, %ids: tensor<?xi32>) -> (tensor<?x80xf32>, tensor<?x64xf32>) {
  %0 = attn.linear %x, %w, %b layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<80xf32> -> tensor<?x80xf32>
  %1 = attn.embedding %table[%ids] : tensor<4x64x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %0, %1 : tensor<?x80xf32>, tensor<?x64xf32>
}

// Quantized packed weights (PackedWeight.h): q8_0 [NB, K/32, NR, 34] and
// q4_0 [NB, K/32, NR, 18] bytes, in a projection, a gemm and a tied table.
// CHECK-LABEL: func.func @quantized
// CHECK: attn.linear %{{.*}}, %{{.*}} layout(packed) : tensor<?x64xf32>, tensor<3x2x32x34xi8> -> tensor<?x80xf32>
// CHECK: attn.gemm swiglu ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<3x2x32x18xi8>, tensor<3x2x32x18xi8>)
// CHECK: attn.embedding %{{.*}}[%{{.*}}] : tensor<4x2x32x18xi8>, tensor<?xi32> -> tensor<?x64xf32>
func.func @quantized(%x: tensor<?x64xf32>, %w: tensor<3x2x32x34xi8>, %g: tensor<3x2x32x18xi8>,
                     %init: tensor<?x80xf32>, %table: tensor<4x2x32x18xi8>, %ids: tensor<?xi32>)
    -> (tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x64xf32>) {
  %0 = attn.linear %x, %w layout(packed) : tensor<?x64xf32>, tensor<3x2x32x34xi8> -> tensor<?x80xf32>
  %1 = attn.gemm swiglu ins(%x, %g, %g : tensor<?x64xf32>, tensor<3x2x32x18xi8>, tensor<3x2x32x18xi8>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  %2 = attn.embedding %table[%ids] : tensor<4x2x32x18xi8>, tensor<?xi32> -> tensor<?x64xf32>
  return %0, %1, %2 : tensor<?x80xf32>, tensor<?x80xf32>, tensor<?x64xf32>
}

// Keys and values from an f16 cache.
// CHECK-LABEL: func.func @flash_f16_keys
// CHECK: attn.flash_attention heads(4) kv_heads(2) scale(1.250000e-01) causal ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x128xf32>, tensor<?x64xf16>, tensor<?x64xf16>)
func.func @flash_f16_keys(%q: tensor<?x128xf32>, %k: tensor<?x64xf16>, %v: tensor<?x64xf16>, %init: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %0 = attn.flash_attention heads(4) kv_heads(2) scale(0.125) causal ins(%q, %k, %v : tensor<?x128xf32>, tensor<?x64xf16>, tensor<?x64xf16>) outs(%init : tensor<?x128xf32>) -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}
