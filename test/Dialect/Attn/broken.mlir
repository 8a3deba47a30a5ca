// A corpus of broken IR: truncated text, wrong types, wrong attributes, ops
// in the wrong place, wrong operand and result counts. Each chunk must end in
// one located diagnostic (checked exactly by -verify-diagnostics), never in a
// crash or a silently accepted module. invalid.mlir holds one case per
// verifier message, malformed.mlir more parser cases.
// RUN: attn-opt %s -split-input-file -verify-diagnostics
// Without -verify-diagnostics every chunk fails: one error per chunk, exit 1.
// RUN: not attn-opt %s -split-input-file 2>%t.err
// RUN: grep -v 'was not produced' %t.err | grep -cE '^[^ ]+:[0-9]+:[0-9]+: error: ' | FileCheck %s --check-prefix=COUNT
// COUNT: {{^}}65{{$}}

// == Truncated input: the text stops in the middle of something.

func.func @truncated_after_op_name(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected SSA operand}}
  %0 = attn.silu

// -----

func.func @truncated_in_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected non-function type}}
  %0 = attn.silu %x : tensor<4x8x

// -----

func.func @truncated_in_attribute(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected ')'}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-05

// -----

func.func @truncated_in_heads(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @below {{expected ')'}}
  %0 = attn.attention %q, %q, %q heads(2

// -----

func.func @truncated_before_result_type(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  // expected-error @below {{expected non-function type}}
  %0 = attn.linear %x, %w layout(out_in) : tensor<?x8xf32>, tensor<16x8xf32> ->

// -----

func.func @truncated_in_layout(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  // expected-error @+2 {{custom op 'attn.linear' expected string or keyword containing one of the following enum values for attribute 'layout'}}
  %0 = attn.linear %x, %w layout(
}

// -----

func.func @truncated_in_kv_cache(%k: tensor<1x8xf32>, %c: tensor<16x8xf32>, %p: index) -> tensor<16x8xf32> {
  // expected-error @below {{expected SSA operand}}
  %0 = attn.kv_cache_append %k into %c[

// -----

func.func @truncated_function_body(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.silu %x : tensor<4x8xf32>
  // expected-error @below {{expected operation name in quotes}}
  return %0 : tensor<4x8xf32>

// -----

// expected-error @below {{expected ')'}}
func.func @truncated_signature(%x: tensor<4x8xf32>

// -----

func.func @truncated_in_operand_list(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected SSA operand}}
  %0 = attn.swiglu %x,

// -----

func.func @truncated_generic_form(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{expected ')'}}
  %0 = "attn.silu"(%x) : (tensor<4x8xf32>

// -----

// == Wrong types.

func.func @silu_on_integers(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{'attn.silu' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<4x8xi32>'}}
  %0 = attn.silu %x : tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

func.func @softmax_on_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'attn.softmax' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<4x8xf16>'}}
  %0 = attn.softmax %x : tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

func.func @gelu_on_memref(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  // expected-error @+1 {{custom op 'attn.gelu' invalid kind of type specified: expected builtin.tensor, but found 'memref<4x8xf32>'}}
  %0 = attn.gelu %x tanh : memref<4x8xf32>
  return %0 : memref<4x8xf32>
}

// -----

func.func @residual_on_vector(%a: vector<4x8xf32>) -> vector<4x8xf32> {
  // expected-error @+1 {{custom op 'attn.residual_add' invalid kind of type specified: expected builtin.tensor, but found 'vector<4x8xf32>'}}
  %0 = attn.residual_add %a, %a : vector<4x8xf32>
  return %0 : vector<4x8xf32>
}

// -----

func.func @rms_norm_unranked(%x: tensor<*xf32>, %g: tensor<8xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{custom op 'attn.rms_norm' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-05) : tensor<*xf32>, tensor<8xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @embedding_float_ids(%t: tensor<100x8xf32>, %ids: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.embedding' op operand #1 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = attn.embedding %t[%ids] : tensor<100x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @embedding_2d_ids(%t: tensor<100x8xf32>, %ids: tensor<2x2xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.embedding' op operand #1 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x2xi32>'}}
  %0 = attn.embedding %t[%ids] : tensor<100x8xf32>, tensor<2x2xi32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_bias_2d(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<1x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'attn.linear' op operand #2 must be 1D tensor of 32-bit float values, but got 'tensor<1x16xf32>'}}
  %0 = attn.linear %x, %w, %b layout(out_in) : tensor<4x8xf32>, tensor<16x8xf32>, tensor<1x16xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @rope_offset_not_index(%x: tensor<4x8xf32>, %p: i64) -> tensor<4x8xf32> {
  // expected-error @+2 {{use of value '%p' expects different type than prior uses: 'index' vs 'i64'}}
  // expected-note @-2 {{prior use here}}
  %0 = attn.rope %x offset(%p) head_dim(4) theta(1.0e+04) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @kv_len_of_type_i32(%q: tensor<1x8xf32>, %k: tensor<16x8xf32>, %n: i32) -> tensor<1x8xf32> {
  // expected-error @+2 {{use of value '%n' expects different type than prior uses: 'index' vs 'i32'}}
  // expected-note @-2 {{prior use here}}
  %0 = attn.attention %q, %k, %k heads(2) kv_len(%n) : tensor<1x8xf32>, tensor<16x8xf32>, tensor<16x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

func.func @kv_cache_position_tensor(%k: tensor<1x8xf32>, %c: tensor<16x8xf32>, %p: tensor<index>) -> tensor<16x8xf32> {
  // expected-error @+2 {{use of value '%p' expects different type than prior uses: 'index' vs 'tensor<index>'}}
  // expected-note @-2 {{prior use here}}
  %0 = attn.kv_cache_append %k into %c[%p] : tensor<1x8xf32> into tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

func.func @swiglu_mismatched_operands(%g: tensor<4x8xf32>, %u: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.swiglu' op requires the same type for all operands and results}}
  %0 = "attn.swiglu"(%g, %u) : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @silu_result_type_differs(%x: tensor<4x8xf32>) -> tensor<4x9xf32> {
  // expected-error @+1 {{'attn.silu' op requires the same type for all operands and results}}
  %0 = "attn.silu"(%x) : (tensor<4x8xf32>) -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @residual_add_shapes_differ(%a: tensor<4x8xf32>, %b: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.residual_add' op requires the same type for all operands and results}}
  %0 = "attn.residual_add"(%a, %b) : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @return_type_mismatch(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %0 = attn.silu %x : tensor<4x8xf32>
  // expected-error @+1 {{type of return operand 0 ('tensor<4x8xf32>') doesn't match function result type ('tensor<4x8xf16>') in function @return_type_mismatch}}
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attention_bias_rank_2(%q: tensor<3x8xf32>, %b: tensor<3x3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'attn.attention' op operand #3 must be 3D tensor of 32-bit float values, but got 'tensor<3x3xf32>'}}
  %0 = attn.attention %q, %q, %q heads(2) bias(%b : tensor<3x3xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @kv_cache_read_result_wider(%c: tensor<16x8xf32>, %n: index) -> tensor<?x16xf32> {
  // expected-error @+1 {{'attn.kv_cache_read' op dimension 1 of result (16) does not match dimension 1 of cache (8)}}
  %0 = attn.kv_cache_read %c[%n] : tensor<16x8xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @sinusoidal_pe_on_i8(%x: tensor<4x8xi8>, %p: index) -> tensor<4x8xi8> {
  // expected-error @+1 {{'attn.sinusoidal_pe' op operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<4x8xi8>'}}
  %0 = attn.sinusoidal_pe %x offset(%p) base(1.0e+04) : tensor<4x8xi8>
  return %0 : tensor<4x8xi8>
}

// -----

// == Wrong attributes.

func.func @unknown_layout(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{custom op 'attn.linear' expected string or keyword containing one of the following enum values for attribute 'layout'}}
  %0 = attn.linear %x, %w layout(row_major) : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @unknown_gelu_form(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{custom op 'attn.gelu' expected string or keyword containing one of the following enum values for attribute 'approximation'}}
  %0 = attn.gelu %x sigmoid : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @unknown_rope_pairing(%x: tensor<4x8xf32>, %p: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{custom op 'attn.rope' expected string or keyword containing one of the following enum values for attribute 'pairing'}}
  %0 = attn.rope %x offset(%p) head_dim(4) theta(1.0e+04) diagonal : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @zero_heads(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'attn.attention' op heads must be positive, got 0}}
  %0 = attn.attention %q, %q, %q heads(0) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @negative_heads(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'attn.attention' op heads must be positive, got -2}}
  %0 = attn.attention %q, %q, %q heads(-2) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @zero_kv_heads(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'attn.attention' op kv_heads must be positive, got 0}}
  %0 = attn.attention %q, %q, %q heads(2) kv_heads(0) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @nan_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op epsilon must be positive and finite, got NaN}}
  %0 = attn.rms_norm %x, %g epsilon(0x7FC00000) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @infinite_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.layer_norm' op epsilon must be positive and finite, got +Inf}}
  %0 = attn.layer_norm %x, %g, %b epsilon(0x7F800000) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @zero_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op epsilon must be positive and finite, got 0}}
  %0 = attn.rms_norm %x, %g epsilon(0.0) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @zero_rope_theta(%x: tensor<4x8xf32>, %p: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rope' op theta must be positive and finite, got 0}}
  %0 = attn.rope %x offset(%p) head_dim(4) theta(0.0) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @negative_pe_base(%x: tensor<4x8xf32>, %p: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.sinusoidal_pe' op base must be positive and finite, got -1}}
  %0 = attn.sinusoidal_pe %x offset(%p) base(-1.0) : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @zero_head_dim(%x: tensor<4x8xf32>, %p: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rope' op head_dim must be positive, got 0}}
  %0 = attn.rope %x offset(%p) head_dim(0) theta(1.0e+04) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @heads_too_large_for_int64(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{integer constant out of range for attribute}}
  %0 = attn.attention %q, %q, %q heads(99999999999999999999) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @causal_twice(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{expected ':'}}
  %0 = attn.attention %q, %q, %q heads(2) causal causal : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @generic_heads_as_string(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{invalid properties {heads = "2", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} for op attn.attention: Invalid attribute `heads` in property conversion: "2"}}
  %0 = "attn.attention"(%q, %q, %q) <{heads = "2", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @generic_layout_as_integer(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'attn.linear' op input has 8 features but the in_out weight of shape 'tensor<16x8xf32>' expects 16 (dimension 0)}}
  %0 = "attn.linear"(%x, %w) <{layout = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @generic_epsilon_as_f64(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op attribute 'epsilon' failed to satisfy constraint: 32-bit float attribute}}
  %0 = "attn.rms_norm"(%x, %g) <{epsilon = 1.0e-05 : f16}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// == Ops in the wrong place.

func.func @attn_op_after_terminator(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'func.return' op must be the last operation in the parent block}}
  return %x : tensor<4x8xf32>
  %0 = attn.silu %x : tensor<4x8xf32>
}

// -----

func.func @attn_op_as_terminator(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{block with no terminator, has %0 = "attn.silu"(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>}}
  %0 = attn.silu %x : tensor<4x8xf32>
}

// -----

func.func @use_before_definition(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{operand #1 does not dominate this use}}
  // expected-note @+2 {{operand defined here (op in the same block)}}
  %0 = attn.residual_add %x, %1 : tensor<4x8xf32>
  %1 = attn.silu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @self_reference(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{operand #1 does not dominate this use}}
  // expected-note @+1 {{operand defined here (op in the same block)}}
  %0 = attn.residual_add %x, %0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attn_op_with_a_region(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.silu' op requires zero regions}}
  %0 = "attn.silu"(%x) ({
  ^bb0:
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attn_op_with_successors(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{successors in non-terminator}}
  "attn.silu"(%x)[^bb1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
^bb1:
  return %x : tensor<4x8xf32>
}

// -----

func.func @value_from_another_function(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}
func.func @uses_it() -> tensor<4x8xf32> {
  // expected-error @+1 {{use of undeclared SSA value name}}
  %0 = attn.silu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attn_op_in_a_block_that_does_not_dominate(%x: tensor<4x8xf32>, %c: i1) -> tensor<4x8xf32> {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = attn.silu %x : tensor<4x8xf32>
  cf.br ^bb2
^bb2:
  // expected-error @+2 {{operand #0 does not dominate this use}}
  // expected-note @-4 {{operand defined here (op in the same region)}}
  return %0 : tensor<4x8xf32>
}

// -----

// == Wrong operand and result counts.

func.func @residual_add_one_operand(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.residual_add' op expected 2 operands, but found 1}}
  %0 = "attn.residual_add"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @silu_three_operands(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.silu' op requires a single operand}}
  %0 = "attn.silu"(%a, %a, %a) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @silu_no_result(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'attn.silu' op requires one result}}
  "attn.silu"(%a) : (tensor<4x8xf32>) -> ()
  return
}

// -----

func.func @softmax_two_results(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.softmax' op requires one result}}
  %0:2 = "attn.softmax"(%a) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %0#0 : tensor<4x8xf32>
}

// -----

func.func @linear_generic_without_layout(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'attn.linear' op requires attribute 'layout'}}
  %0 = "attn.linear"(%x, %w) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @kv_cache_append_without_position(%k: tensor<1x8xf32>, %c: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'attn.kv_cache_append' op expected 3 operands, but found 2}}
  %0 = "attn.kv_cache_append"(%k, %c) : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

func.func @embedding_four_operands(%t: tensor<100x8xf32>, %ids: tensor<4xi32>, %i: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.embedding' op operand group starting at #2 requires 0 or 1 element, but found 2}}
  %0 = "attn.embedding"(%t, %ids, %i, %i) : (tensor<100x8xf32>, tensor<4xi32>, index, index) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attention_two_operands_custom(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = attn.attention %q, %q heads(2) : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @rms_norm_missing_gamma(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = attn.rms_norm %x epsilon(1.0e-05) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_extra_operand(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{custom op 'attn.layer_norm' expected 'epsilon'}}
  %0 = attn.layer_norm %x, %g, %g, %g epsilon(1.0e-05) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @too_few_type_for_operands(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{custom op 'attn.linear' number of operands and types do not match: got 1 operands and 0 types}}
  %0 = attn.linear %x, %w, %b layout(out_in) : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
