// The mixture-of-experts ops print and parse back unchanged, in the generic
// form too.
// RUN: attn-opt %s -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file -mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @mixtral
// CHECK: %{{.*}}, %{{.*}} = attn.moe_router %{{.*}}, %{{.*}} top_k(2) softmax_top_k normalize : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
// CHECK: attn.moe_experts %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
func.func @mixtral(%x: tensor<?x64xf32>, %router: tensor<8x64xf32>, %gate: tensor<8x96x64xf32>, %up: tensor<8x96x64xf32>, %down: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  %w, %e = attn.moe_router %x, %router top_k(2) softmax_top_k normalize : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %y = attn.moe_experts %x, %w, %e, %gate, %up, %down swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Qwen3-MoE without norm_topk_prob: the chosen probabilities as they are.
// CHECK-LABEL: func.func @qwen3_moe_unnormalized
// CHECK: attn.moe_router %{{.*}}, %{{.*}} top_k(8) softmax_top_k : tensor<3x32xf32>, tensor<16x32xf32> -> tensor<3x8xf32>, tensor<3x8xi32>
func.func @qwen3_moe_unnormalized(%x: tensor<3x32xf32>, %router: tensor<16x32xf32>) -> (tensor<3x8xf32>, tensor<3x8xi32>) {
  %w, %e = attn.moe_router %x, %router top_k(8) softmax_top_k : tensor<3x32xf32>, tensor<16x32xf32> -> tensor<3x8xf32>, tensor<3x8xi32>
  return %w, %e : tensor<3x8xf32>, tensor<3x8xi32>
}

// -----

// gpt-oss: a router with bias, top-k then softmax, biased experts with the
// clamped GLU.
// CHECK-LABEL: func.func @gpt_oss
// CHECK: attn.moe_router %{{.*}}, %{{.*}}, %{{.*}} top_k(4) top_k_softmax : tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
// CHECK: attn.moe_experts %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} biases(%{{.*}}, %{{.*}}, %{{.*}} : tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x64xf32>) clamped_swiglu alpha(1.702000e+00) limit(7.000000e+00) : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<32x48x64xf32>, tensor<32x48x64xf32>, tensor<32x64x48xf32> -> tensor<?x64xf32>
func.func @gpt_oss(%x: tensor<?x64xf32>, %router: tensor<32x64xf32>, %rb: tensor<32xf32>, %gate: tensor<32x48x64xf32>, %up: tensor<32x48x64xf32>, %down: tensor<32x64x48xf32>, %gb: tensor<32x48xf32>, %ub: tensor<32x48xf32>, %db: tensor<32x64xf32>) -> tensor<?x64xf32> {
  %w, %e = attn.moe_router %x, %router, %rb top_k(4) top_k_softmax : tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  %y = attn.moe_experts %x, %w, %e, %gate, %up, %down biases(%gb, %ub, %db : tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x64xf32>) clamped_swiglu alpha(1.702) limit(7.0) : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<32x48x64xf32>, tensor<32x48x64xf32>, tensor<32x64x48xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Qwen2-MoE: a shared expert every token runs, its output scaled by the
// sigmoid of its gate's logit and added to the routed sum.
// CHECK-LABEL: func.func @shared_expert
// CHECK: attn.moe_experts %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} shared(%{{.*}} : tensor<?x64xf32>) shared_gate(%{{.*}} : tensor<?x1xf32>) swiglu : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<60x24x64xf32>, tensor<60x24x64xf32>, tensor<60x64x24xf32> -> tensor<?x64xf32>
// CHECK: attn.moe_experts %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} shared(%{{.*}} : tensor<?x64xf32>) swiglu :
func.func @shared_expert(%x: tensor<?x64xf32>, %w: tensor<?x4xf32>, %e: tensor<?x4xi32>, %gate: tensor<60x24x64xf32>, %up: tensor<60x24x64xf32>, %down: tensor<60x64x24xf32>, %s: tensor<?x64xf32>, %sg: tensor<?x1xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %y = attn.moe_experts %x, %w, %e, %gate, %up, %down shared(%s : tensor<?x64xf32>) shared_gate(%sg : tensor<?x1xf32>) swiglu : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<60x24x64xf32>, tensor<60x24x64xf32>, tensor<60x64x24xf32> -> tensor<?x64xf32>
  %z = attn.moe_experts %x, %w, %e, %gate, %up, %down shared(%s : tensor<?x64xf32>) swiglu : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<60x24x64xf32>, tensor<60x24x64xf32>, tensor<60x64x24xf32> -> tensor<?x64xf32>
  return %y, %z : tensor<?x64xf32>, tensor<?x64xf32>
}
