// Every verifier error of the mixture-of-experts ops, one broken invariant
// per chunk.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @router_top_k_above_experts(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> (tensor<?x9xf32>, tensor<?x9xi32>) {
  // expected-error @+1 {{'attn.moe_router' op top_k must be in [1, 8] (the number of experts), got 9}}
  %w, %e = attn.moe_router %x, %r top_k(9) softmax_top_k : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x9xf32>, tensor<?x9xi32>
  return %w, %e : tensor<?x9xf32>, tensor<?x9xi32>
}

// -----

func.func @router_top_k_zero(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> (tensor<?x0xf32>, tensor<?x0xi32>) {
  // expected-error @+1 {{'attn.moe_router' op top_k must be in [1, 8] (the number of experts), got 0}}
  %w, %e = attn.moe_router %x, %r top_k(0) softmax_top_k : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x0xf32>, tensor<?x0xi32>
  return %w, %e : tensor<?x0xf32>, tensor<?x0xi32>
}

// -----

func.func @router_normalize_after_softmax(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  // expected-error @+1 {{'attn.moe_router' op normalize applies to softmax_top_k: top_k_softmax's weights already sum to 1}}
  %w, %e = attn.moe_router %x, %r top_k(2) top_k_softmax normalize : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %e : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

func.func @router_hidden_mismatch(%x: tensor<?x64xf32>, %r: tensor<8x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  // expected-error @+1 {{'attn.moe_router' op dimension 1 of weight (32) does not match dimension 1 of input (64)}}
  %w, %e = attn.moe_router %x, %r top_k(2) softmax_top_k : tensor<?x64xf32>, tensor<8x32xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %e : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

func.func @router_dynamic_experts(%x: tensor<?x64xf32>, %r: tensor<?x64xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  // expected-error @+1 {{'attn.moe_router' op requires a static size for dimension 0 of weight, got 'tensor<?x64xf32>'}}
  %w, %e = attn.moe_router %x, %r top_k(2) softmax_top_k : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %e : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

func.func @router_bias_size(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>, %b: tensor<7xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
  // expected-error @+1 {{'attn.moe_router' op dimension 0 of bias (7) does not match dimension 0 of weight (8)}}
  %w, %e = attn.moe_router %x, %r, %b top_k(2) top_k_softmax : tensor<?x64xf32>, tensor<8x64xf32>, tensor<7xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  return %w, %e : tensor<?x2xf32>, tensor<?x2xi32>
}

// -----

func.func @router_result_columns(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> (tensor<?x2xf32>, tensor<?x3xi32>) {
  // expected-error @+1 {{'attn.moe_router' op requires experts with top_k (2) columns, got 'tensor<?x3xi32>'}}
  %w, %e = attn.moe_router %x, %r top_k(2) softmax_top_k : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x3xi32>
  return %w, %e : tensor<?x2xf32>, tensor<?x3xi32>
}

// -----

func.func @router_result_rows(%x: tensor<3x64xf32>, %r: tensor<8x64xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>) {
  // expected-error @+1 {{'attn.moe_router' op dimension 0 of weights (4) does not match dimension 0 of input (3)}}
  %w, %e = attn.moe_router %x, %r top_k(2) softmax_top_k : tensor<3x64xf32>, tensor<8x64xf32> -> tensor<4x2xf32>, tensor<4x2xi32>
  return %w, %e : tensor<4x2xf32>, tensor<4x2xi32>
}

// -----

func.func @router_i64_experts(%x: tensor<?x64xf32>, %r: tensor<8x64xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>) {
  // expected-error @+1 {{result #1 must be 2D tensor of 32-bit signless integer values}}
  %w, %e = attn.moe_router %x, %r top_k(2) softmax_top_k : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x2xi64>
  return %w, %e : tensor<?x2xf32>, tensor<?x2xi64>
}

// -----

func.func @experts_down_shape(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x96x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op requires down of shape [8, 64, 96] (experts, hidden, ffn), got 'tensor<8x96x64xf32>'}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x96x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_up_expert_count(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<7x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op requires up of shape [8, 96, 64] (experts, ffn, hidden), got 'tensor<7x96x64xf32>'}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<7x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_gate_hidden(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x32xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op requires gate of shape [8, 96, 64] (experts, ffn, hidden), got 'tensor<8x96x32xf32>'}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x32xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_slots_mismatch(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x3xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op dimension 1 of experts (3) does not match dimension 1 of weights (2)}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x3xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_result_width(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x96xf32> {
  // expected-error @+1 {{'attn.moe_experts' op dimension 1 of result (96) does not match dimension 1 of input (64)}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}

// -----

func.func @experts_bias_shape(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %gb: tensor<8x96xf32>, %ub: tensor<8x96xf32>, %db: tensor<8x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op requires down_bias of shape [8, 64] (experts, hidden), got 'tensor<8x96xf32>'}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d biases(%gb, %ub, %db : tensor<8x96xf32>, tensor<8x96xf32>, tensor<8x96xf32>) swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_clamped_without_limit(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op clamped_swiglu requires alpha and limit}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d clamped_swiglu alpha(1.702) : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_negative_limit(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op limit must be positive and finite, got -7}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d clamped_swiglu alpha(1.702) limit(-7.0) : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_swiglu_with_limit(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op alpha and limit belong to clamped_swiglu}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu limit(7.0) : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The custom form prints the biases together; the generic form can omit some.
func.func @experts_partial_biases(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %gb: tensor<8x96xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op requires the gate, up and down biases together}}
  %y = "attn.moe_experts"(%x, %w, %e, %g, %u, %d, %gb) <{activation = 0 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0>}> : (tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32>, tensor<8x96xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_shared_wrong_width(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %s: tensor<?x32xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op dimension 1 of shared (32) does not match dimension 1 of input (64)}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d shared(%s : tensor<?x32xf32>) swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_shared_gate_per_feature(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %s: tensor<?x64xf32>, %sg: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op requires shared_gate of one logit per token [tokens, 1], got 'tensor<?x64xf32>'}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d shared(%s : tensor<?x64xf32>) shared_gate(%sg : tensor<?x64xf32>) swiglu : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The generic form can name a gate without the shared expert it scales.
func.func @experts_shared_gate_alone(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %sg: tensor<?x1xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op shared_gate requires the shared expert's output}}
  %y = "attn.moe_experts"(%x, %w, %e, %g, %u, %d, %sg) <{activation = 0 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1>}> : (tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32>, tensor<?x1xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @experts_shared_fewer_tokens(%x: tensor<4x64xf32>, %w: tensor<4x2xf32>, %e: tensor<4x2xi32>, %g: tensor<8x96x64xf32>, %u: tensor<8x96x64xf32>, %d: tensor<8x64x96xf32>, %s: tensor<4x64xf32>, %sg: tensor<3x1xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'attn.moe_experts' op dimension 0 of shared_gate (3) does not match dimension 0 of input (4)}}
  %y = attn.moe_experts %x, %w, %e, %g, %u, %d shared(%s : tensor<4x64xf32>) shared_gate(%sg : tensor<3x1xf32>) swiglu : tensor<4x64xf32>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<8x96x64xf32>, tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}
