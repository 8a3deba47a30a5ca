// Packed projections become attn.gemm; with attention-kernel, attention
// without a bias becomes attn.flash_attention.
// RUN: attn-opt %s -split-input-file --convert-attn-to-linalg="attention-kernel=1" --canonicalize | FileCheck %s
// RUN: attn-opt %s -split-input-file --convert-attn-to-linalg | FileCheck %s --check-prefix=LINALG --implicit-check-not=attn.flash_attention

// CHECK-LABEL: func.func @packed_linear
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W:.*]]: tensor<3x64x32xf32>, %[[B:.*]]: tensor<72xf32>)
// CHECK: %[[ROWS:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[INIT:.*]] = tensor.empty(%[[ROWS]]) : tensor<?x72xf32>
// CHECK: attn.gemm none ins(%[[X]], %[[W]] : tensor<?x64xf32>, tensor<3x64x32xf32>) bias(%[[B]] : tensor<72xf32>) outs(%[[INIT]] : tensor<?x72xf32>)
// LINALG-LABEL: func.func @packed_linear
// LINALG: attn.gemm
func.func @packed_linear(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %b: tensor<72xf32>) -> tensor<?x72xf32> {
  %0 = attn.linear %x, %w, %b layout(packed) : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<72xf32> -> tensor<?x72xf32>
  return %0 : tensor<?x72xf32>
}

// -----

// Row v of a packed [blocks, dim, NR] table is [v / NR, :, v % NR]; ids are
// clamped to the padded rows, which hold zeros.
// CHECK-LABEL: func.func @packed_embedding
// CHECK: %[[LAST:.*]] = arith.constant 127 : index
// CHECK: linalg.generic
// CHECK: arith.minsi %{{.*}}, %[[LAST]]
// CHECK: %[[BLOCK:.*]] = arith.divui %{{.*}}, %c32
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK: tensor.extract %{{.*}}[%[[BLOCK]], %{{.*}}, %[[LANE]]] : tensor<4x64x32xf32>
func.func @packed_embedding(%table: tensor<4x64x32xf32>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = attn.embedding %table[%ids] : tensor<4x64x32xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// The kernel sees only the kv_len valid rows of a static cache.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[Q:.*]]: tensor<1x128xf32>, %[[K:.*]]: tensor<64x64xf32>, %[[V:.*]]: tensor<64x64xf32>, %[[N:.*]]: index)
// CHECK: %[[VALID:.*]] = arith.minui %[[N]], %c64
// CHECK: %[[KS:.*]] = tensor.extract_slice %[[K]][0, 0] [%[[VALID]], 64] [1, 1]
// CHECK: %[[VS:.*]] = tensor.extract_slice %[[V]][0, 0] [%[[VALID]], 64] [1, 1]
// CHECK: attn.flash_attention heads(4) kv_heads(2) scale(0.176776692) causal ins(%[[Q]], %[[KS]], %[[VS]] : tensor<1x128xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
// LINALG-LABEL: func.func @decode
// LINALG-NOT: attn.flash_attention
// LINALG: linalg.generic
func.func @decode(%q: tensor<1x128xf32>, %k: tensor<64x64xf32>, %v: tensor<64x64xf32>, %n: index) -> tensor<1x128xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal kv_len(%n) : tensor<1x128xf32>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<1x128xf32>
  return %0 : tensor<1x128xf32>
}

// -----

// A bias (ALiBi, T5) keeps the linalg lowering: the kernel takes none.
// CHECK-LABEL: func.func @biased
// CHECK-NOT: attn.flash_attention
// CHECK: linalg.generic
// CHECK-NOT: attn.flash_attention
// CHECK: return
func.func @biased(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>, %bias: tensor<2x?x?xf32>) -> tensor<?x64xf32> {
  %0 = attn.attention %q, %k, %v heads(2) causal bias(%bias : tensor<2x?x?xf32>) : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// The window and the ALiBi slopes go to the kernel as they are.
// CHECK-LABEL: func.func @window_alibi
// CHECK: attn.flash_attention heads(2) kv_heads(1) scale(1.250000e-01) causal window(16) alibi([5.000000e-01, 2.500000e-01]) ins
// LINALG-LABEL: func.func @window_alibi
// LINALG-NOT: attn.flash_attention
func.func @window_alibi(%q: tensor<?x128xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> tensor<?x128xf32> {
  %0 = attn.attention %q, %k, %v heads(2) kv_heads(1) causal window(16) alibi([0.5, 0.25]) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

// Sinks go to the kernel as an operand; the reference lowering extracts each
// head's sink and adds e^(sink - M) to its rows' sums.
// CHECK-LABEL: func.func @sinks
// CHECK: attn.flash_attention heads(2) kv_heads(1) scale(1.250000e-01) causal window(16) sinks(%{{.*}} : tensor<2xf32>) ins
// LINALG-LABEL: func.func @sinks
// LINALG-NOT: attn.flash_attention
// LINALG: tensor.extract %{{.*}}[%{{.*}}] : tensor<2xf32>
// LINALG: arith.maximumf
// LINALG: math.exp
// LINALG: math.exp
// LINALG: math.fma
func.func @sinks(%q: tensor<?x128xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>, %s: tensor<2xf32>) -> tensor<?x128xf32> {
  %0 = attn.attention %q, %k, %v heads(2) kv_heads(1) causal window(16) sinks(%s : tensor<2xf32>) : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}
