// Every verifier error of the attn dialect, one broken invariant per chunk.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @embedding_ids_float(%table: tensor<100x8xf32>, %ids: tensor<3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{operand #1 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = "attn.embedding"(%table, %ids) : (tensor<100x8xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @embedding_f16_table(%table: tensor<100x8xf16>, %ids: tensor<3xi32>) -> tensor<3x8xf16> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 8-bit signless integer values}}
  %0 = "attn.embedding"(%table, %ids) : (tensor<100x8xf16>, tensor<3xi32>) -> tensor<3x8xf16>
  return %0 : tensor<3x8xf16>
}

// -----

func.func @embedding_dynamic_table_width(%table: tensor<100x?xf32>, %ids: tensor<3xi32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of table, got 'tensor<100x?xf32>'}}
  %0 = attn.embedding %table[%ids] : tensor<100x?xf32>, tensor<3xi32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @embedding_rows_mismatch(%table: tensor<100x8xf32>, %ids: tensor<3xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dimension 0 of result (4) does not match dimension 0 of ids (3)}}
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<3xi32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @embedding_width_mismatch(%table: tensor<100x8xf32>, %ids: tensor<3xi32>) -> tensor<3x9xf32> {
  // expected-error @+1 {{dimension 1 of result (9) does not match dimension 1 of table (8)}}
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<3xi32> -> tensor<3x9xf32>
  return %0 : tensor<3x9xf32>
}

// -----

func.func @linear_dynamic_weight(%x: tensor<4x8xf32>, %w: tensor<?x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{requires a statically shaped weight, got 'tensor<?x8xf32>'}}
  %0 = attn.linear %x, %w layout(out_in) : tensor<4x8xf32>, tensor<?x8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @embedding_bf16_unpacked(%table: tensor<100x8xbf16>, %ids: tensor<3xi32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{requires an f32 [rows, dim] table (a bf16 or quantized table must be packed), got 'tensor<100x8xbf16>'}}
  %0 = attn.embedding %table[%ids] : tensor<100x8xbf16>, tensor<3xi32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// bf16 weights exist only in the packed layout the CPU kernels stream.
func.func @linear_bf16_unpacked(%x: tensor<4x8xf32>, %w: tensor<16x8xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{requires an f32 weight for layout out_in (a bf16 or quantized weight must be packed), got 'tensor<16x8xbf16>'}}
  %0 = attn.linear %x, %w layout(out_in) : tensor<4x8xf32>, tensor<16x8xbf16> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @linear_f16_packed(%x: tensor<4x8xf32>, %w: tensor<1x8x16xf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit float or bfloat16 type or 8-bit signless integer values}}
  %0 = attn.linear %x, %w layout(packed) : tensor<4x8xf32>, tensor<1x8x16xf16> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @linear_in_features_mismatch(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{input has 8 features but the out_in weight of shape 'tensor<8x16xf32>' expects 16 (dimension 1)}}
  %0 = attn.linear %x, %w layout(out_in) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_rows_mismatch(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<5x16xf32> {
  // expected-error @+1 {{dimension 0 of result (5) does not match dimension 0 of input (4)}}
  %0 = attn.linear %x, %w layout(in_out) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<5x16xf32>
  return %0 : tensor<5x16xf32>
}

// -----

func.func @linear_out_features_mismatch(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dimension 1 of result (8) does not match dimension 1 of weight (16)}}
  %0 = attn.linear %x, %w layout(in_out) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_bias_mismatch(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{dimension 0 of bias (8) does not match dimension 0 of weight (16)}}
  %0 = attn.linear %x, %w, %b layout(out_in) : tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @linear_bias_rank(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<1x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{operand #2 must be 1D tensor of 32-bit float values}}
  %0 = "attn.linear"(%x, %w, %b) <{layout = 0 : i32}> : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @linear_bad_layout(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{invalid properties {layout = 7 : i32} for op attn.linear}}
  %0 = "attn.linear"(%x, %w) <{layout = 7 : i32}> : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @linear_input_rank(%x: tensor<8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float values}}
  %0 = "attn.linear"(%x, %w) <{layout = 0 : i32}> : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @layer_norm_zero_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be positive and finite, got 0}}
  %0 = attn.layer_norm %x, %g, %b epsilon(0.0) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be positive and finite, got -0.5}}
  %0 = attn.layer_norm %x, %g, %b epsilon(-0.5) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_infinite_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be positive and finite, got +Inf}}
  %0 = attn.layer_norm %x, %g, %b epsilon(0x7F800000) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_gamma_mismatch(%x: tensor<4x8xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dimension 1 of input (8) does not match dimension 0 of gamma (6)}}
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<4x8xf32>, tensor<6xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_beta_mismatch(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<6xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{failed to verify that all of {gamma, beta} have same type}}
  %0 = "attn.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<4x8xf32>, tensor<8xf32>, tensor<6xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @layer_norm_dynamic_features(%x: tensor<4x?xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x?xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of input, got 'tensor<4x?xf32>'}}
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<4x?xf32>, tensor<8xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<1xf32>, %b: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{requires an input of rank 1 or more}}
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<f32>, tensor<1xf32>
  return %0 : tensor<f32>
}

// -----

func.func @layer_norm_result_type(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = "attn.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @rms_norm_negative_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be positive and finite, got -9.99999997E-7}}
  %0 = attn.rms_norm %x, %g epsilon(-1.0e-06) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_gamma_mismatch(%x: tensor<4x8xf32>, %g: tensor<16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dimension 1 of input (8) does not match dimension 0 of gamma (16)}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<4x8xf32>, tensor<16xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_gamma_rank(%x: tensor<4x8xf32>, %g: tensor<1x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand #1 must be 1D tensor of 32-bit float values}}
  %0 = "attn.rms_norm"(%x, %g) <{epsilon = 1.0e-06 : f32}> : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @residual_add_type_mismatch(%a: tensor<4x8xf32>, %b: tensor<4x9xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "attn.residual_add"(%a, %b) : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_head_dim_not_dividing(%x: tensor<4x12xf32>, %g: tensor<8xf32>) -> tensor<4x12xf32> {
  // expected-error @+1 {{'attn.rms_norm' op head_dim must be positive and divide the innermost dimension 12, got 8}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(8) : tensor<4x12xf32>, tensor<8xf32>
  return %0 : tensor<4x12xf32>
}

// -----

func.func @rms_norm_head_dim_zero(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op head_dim must be positive and divide the innermost dimension 8, got 0}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(0) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rms_norm_head_dim_gains(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op gamma has 8 gains but head_dim is 4 (one gain per feature of a head)}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(4) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_norm_gains(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rope' op input norm has 8 gains but head_dim is 4 (the norm is per head)}}
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) rms_norm(%g : tensor<8xf32>) epsilon(1.0e-06) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_norm_zero_epsilon(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rope' op norm_epsilon must be positive and finite, got 0}}
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) rms_norm(%g : tensor<4xf32>) epsilon(0.0) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_norm_without_epsilon(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rope' op requires norm_epsilon with an input norm}}
  %0 = "attn.rope"(%x, %pos, %g) <{head_dim = 4 : i64, theta = 1.0e+04 : f32, pairing = 0 : i32}> : (tensor<4x8xf32>, index, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_norm_attributes_without_gains(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.rope' op takes norm_epsilon and norm_gain_offset only with a norm_gamma}}
  %0 = "attn.rope"(%x, %pos) <{head_dim = 4 : i64, theta = 1.0e+04 : f32, norm_epsilon = 1.0e-06 : f32, pairing = 0 : i32}> : (tensor<4x8xf32>, index) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softcap_zero(%l: tensor<1x100xf32>) -> tensor<1x100xf32> {
  // expected-error @+1 {{'attn.softcap' op cap must be positive and finite, got 0}}
  %0 = attn.softcap %l cap(0.0) : tensor<1x100xf32>
  return %0 : tensor<1x100xf32>
}

// -----

func.func @attention_negative_softcap(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.attention' op softcap must be positive and finite, got -5}}
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) softcap(-5.0) causal : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @probabilities_infinite_softcap(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>) -> tensor<4x?x?xf32> {
  // expected-error @+1 {{'attn.attention_probabilities' op softcap must be positive and finite, got +Inf}}
  %0 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) softcap(0x7F800000) causal : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<4x?x?xf32>
  return %0 : tensor<4x?x?xf32>
}

// -----

func.func @rope_odd_head_dim(%x: tensor<4x6xf32>, %pos: index) -> tensor<4x6xf32> {
  // expected-error @+1 {{head_dim must be even to form rotation pairs, got 3}}
  %0 = attn.rope %x offset(%pos) head_dim(3) theta(1.0e+04) rotate_half : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @rope_zero_head_dim(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{head_dim must be positive, got 0}}
  %0 = attn.rope %x offset(%pos) head_dim(0) theta(1.0e+04) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_head_dim_not_dividing(%x: tensor<4x12xf32>, %pos: index) -> tensor<4x12xf32> {
  // expected-error @+1 {{head_dim 8 does not divide the feature dimension 12}}
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) interleaved : tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}

// -----

func.func @rope_negative_theta(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{theta must be positive and finite, got -1}}
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(-1.0) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_dynamic_features(%x: tensor<4x?xf32>, %pos: index) -> tensor<4x?xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of input, got 'tensor<4x?xf32>'}}
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) rotate_half : tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @rope_offset_not_index(%x: tensor<4x8xf32>, %pos: i32) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand #1 must be index}}
  %0 = "attn.rope"(%x, %pos) <{head_dim = 8 : i64, pairing = 0 : i32, theta = 1.0e+04 : f32}> : (tensor<4x8xf32>, i32) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_unknown_pairing(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'pairing' [rotate_half, interleaved]}}
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) rotate_quarter : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_odd_rotary_dims(%x: tensor<4x16xf32>, %pos: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{rotary_dims must be even, positive and at most head_dim (8), got 3}}
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(3) theta(1.0e+04) rotate_half : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @rope_rotary_dims_past_head(%x: tensor<4x16xf32>, %pos: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{rotary_dims must be even, positive and at most head_dim (8), got 10}}
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(10) theta(1.0e+04) rotate_half : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @rope_zero_rotary_dims(%x: tensor<4x16xf32>, %pos: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{rotary_dims must be even, positive and at most head_dim (8), got 0}}
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(0) theta(1.0e+04) rotate_half : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @rope_no_frequencies(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires theta or frequencies}}
  %0 = attn.rope %x offset(%pos) head_dim(8) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_theta_and_frequencies(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{takes theta or frequencies, not both}}
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) frequencies(dense<[1.0, 0.01]> : tensor<2xf64>) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_table_length(%x: tensor<4x16xf32>, %pos: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{frequencies must be a tensor of rotary_dims / 2 = 2 elements, got 'tensor<4xf64>'}}
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf64>) rotate_half : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @rope_table_rank(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{frequencies must be a tensor of rotary_dims / 2 = 2 elements, got 'tensor<1x2xf64>'}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[[1.0, 0.1]]> : tensor<1x2xf64>) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_negative_frequency(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{frequencies[1] must be finite and non-negative, got -0.5}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[1.0, -0.5]> : tensor<2xf64>) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_infinite_frequency(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{frequencies[0] must be finite and non-negative, got +Inf}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[0x7FF0000000000000, 0.5]> : tensor<2xf64>) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_zero_attention_factor(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{attention_factor must be positive and finite, got 0}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[1.0, 0.5]> : tensor<2xf64>) attention_factor(0.0) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_dynamic_non_positive_factor(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{dynamic_ntk factor must be positive and finite, got -2}}
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) dynamic_ntk(factor = -2.0, max_positions = 2048) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_dynamic_zero_positions(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{dynamic_ntk max_positions must be positive, got 0}}
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) dynamic_ntk(factor = 2.0, max_positions = 0) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_dynamic_two_dims(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{dynamic_ntk needs rotary_dims > 2 (its exponent is r / (r - 2)), got 2}}
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(2) theta(1.0e+04) dynamic_ntk(factor = 2.0, max_positions = 16) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_dynamic_without_theta(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{dynamic_ntk rescales theta: it needs theta, not frequencies}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[1.0, 0.5]> : tensor<2xf64>) dynamic_ntk(factor = 2.0, max_positions = 16) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_long_without_short(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{long_frequencies switches from a frequencies table: it needs frequencies, not theta}}
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) long_frequencies(dense<[1.0, 0.5]> : tensor<2xf64>, after = 16) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_long_wrong_length(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{long_frequencies must be a tensor of rotary_dims / 2 = 2 elements, got 'tensor<3xf64>'}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[1.0, 0.5]> : tensor<2xf64>) long_frequencies(dense<[1.0, 0.5, 0.1]> : tensor<3xf64>, after = 16) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_long_negative(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{long_frequencies[1] must be finite and non-negative, got -0.5}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[1.0, 0.5]> : tensor<2xf64>) long_frequencies(dense<[1.0, -0.5]> : tensor<2xf64>, after = 16) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_long_after_zero(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{long_frequencies after must be positive, got 0}}
  %0 = attn.rope %x offset(%pos) head_dim(4) frequencies(dense<[1.0, 0.5]> : tensor<2xf64>) long_frequencies(dense<[1.0, 0.5]> : tensor<2xf64>, after = 0) rotate_half : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_long_after_alone(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{takes long_frequencies' after only with long_frequencies}}
  %0 = "attn.rope"(%x, %pos) <{head_dim = 4 : i64, pairing = 0 : i32, frequencies = dense<[1.0, 0.5]> : tensor<2xf64>, long_after = 16 : i64}> : (tensor<4x8xf32>, index) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @rope_dynamic_half_given(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{dynamic_ntk needs both factor and max_positions}}
  %0 = "attn.rope"(%x, %pos) <{head_dim = 8 : i64, pairing = 0 : i32, theta = 1.0e+04 : f32, ntk_factor = 2.0 : f64}> : (tensor<4x8xf32>, index) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @sinusoidal_pe_odd_features(%x: tensor<4x7xf32>, %pos: index) -> tensor<4x7xf32> {
  // expected-error @+1 {{requires an even feature dimension for sin/cos pairs, got 7}}
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) : tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

func.func @sinusoidal_pe_zero_base(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{base must be positive and finite, got 0}}
  %0 = attn.sinusoidal_pe %x offset(%pos) base(0.0) : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @sinusoidal_pe_dynamic_features(%x: tensor<4x?xf32>, %pos: index) -> tensor<4x?xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of input, got 'tensor<4x?xf32>'}}
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) : tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @relative_position_bias_one_bucket(%table: tensor<1x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{num_buckets must be at least 2, got 1}}
  %0 = attn.relative_position_bias %table num_buckets(1) max_distance(8) : tensor<1x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_bidirectional_odd(%table: tensor<33x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{num_buckets must be even and at least 4 with bidirectional (half for each direction), got 33}}
  %0 = attn.relative_position_bias %table num_buckets(33) bidirectional : tensor<33x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_bidirectional_two(%table: tensor<2x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{num_buckets must be even and at least 4 with bidirectional (half for each direction), got 2}}
  %0 = attn.relative_position_bias %table num_buckets(2) max_distance(8) bidirectional : tensor<2x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_short_max_distance(%table: tensor<32x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{max_distance must exceed the 16 exact distances (num_buckets / 2), got 16}}
  %0 = attn.relative_position_bias %table max_distance(16) : tensor<32x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_short_max_distance_bidirectional(%table: tensor<32x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{max_distance must exceed the 8 exact distances (num_buckets / 4), got 8}}
  %0 = attn.relative_position_bias %table max_distance(8) bidirectional : tensor<32x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_dynamic_table(%table: tensor<?x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{requires a static size for dimension 0 of table, got 'tensor<?x4xf32>'}}
  %0 = attn.relative_position_bias %table : tensor<?x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_dynamic_heads(%table: tensor<32x4xf32>, %h: index) -> tensor<?x3x3xf32> {
  // expected-error @+1 {{requires a static size for dimension 0 of result, got 'tensor<?x3x3xf32>'}}
  %0 = attn.relative_position_bias %table sizes(%h) : tensor<32x4xf32> -> tensor<?x3x3xf32>
  return %0 : tensor<?x3x3xf32>
}

// -----

func.func @relative_position_bias_table_rows(%table: tensor<16x4xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{table has 16 rows, expected one per bucket (num_buckets = 32)}}
  %0 = attn.relative_position_bias %table : tensor<16x4xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_table_heads(%table: tensor<32x8xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+1 {{result has 4 heads but the table has 8 columns, one per head}}
  %0 = attn.relative_position_bias %table : tensor<32x8xf32> -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

func.func @relative_position_bias_missing_size(%table: tensor<32x4xf32>, %s: index) -> tensor<4x?x?xf32> {
  // expected-error @+1 {{requires one size per dynamic dimension of the result (2), got 1}}
  %0 = attn.relative_position_bias %table sizes(%s) : tensor<32x4xf32> -> tensor<4x?x?xf32>
  return %0 : tensor<4x?x?xf32>
}

// -----

func.func @relative_position_bias_rank(%table: tensor<32x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{result #0 must be 3D tensor of 32-bit float values}}
  %0 = attn.relative_position_bias %table : tensor<32x4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @attention_zero_heads(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{heads must be positive, got 0}}
  %0 = attn.attention %q, %k, %v heads(0) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_negative_kv_heads(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{kv_heads must be positive, got -2}}
  %0 = attn.attention %q, %k, %v heads(2) kv_heads(-2) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_kv_heads_not_dividing(%q: tensor<3x12xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x12xf32> {
  // expected-error @+1 {{kv_heads 2 does not divide heads 3}}
  %0 = attn.attention %q, %k, %v heads(3) kv_heads(2) : tensor<3x12xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x12xf32>
  return %0 : tensor<3x12xf32>
}

// -----

func.func @attention_heads_not_dividing_hidden(%q: tensor<3x10xf32>, %k: tensor<3x10xf32>, %v: tensor<3x10xf32>) -> tensor<3x10xf32> {
  // expected-error @+1 {{heads 4 does not divide the query feature dimension 10}}
  %0 = attn.attention %q, %k, %v heads(4) : tensor<3x10xf32>, tensor<3x10xf32>, tensor<3x10xf32> -> tensor<3x10xf32>
  return %0 : tensor<3x10xf32>
}

// -----

func.func @attention_zero_scale(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{scale must be finite and non-zero, got 0}}
  %0 = attn.attention %q, %k, %v heads(2) scale(0.0) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_nan_scale(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{scale must be finite and non-zero, got NaN}}
  %0 = attn.attention %q, %k, %v heads(2) scale(0x7FC00000) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_dynamic_query_features(%q: tensor<3x?xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of query, got 'tensor<3x?xf32>'}}
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x?xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_key_features(%q: tensor<3x16xf32>, %k: tensor<3x16xf32>, %v: tensor<3x8xf32>) -> tensor<3x16xf32> {
  // expected-error @+1 {{key has 16 features, expected kv_heads * head_dim = 2 * 4 = 8}}
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) : tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x8xf32> -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// -----

func.func @attention_value_features(%q: tensor<3x16xf32>, %k: tensor<3x8xf32>, %v: tensor<3x16xf32>) -> tensor<3x16xf32> {
  // expected-error @+1 {{value has 16 features, expected kv_heads * head_dim = 2 * 4 = 8}}
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) : tensor<3x16xf32>, tensor<3x8xf32>, tensor<3x16xf32> -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// -----

func.func @attention_value_rows(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>, %v: tensor<4x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{dimension 0 of value (4) does not match dimension 0 of key (5)}}
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x8xf32>, tensor<5x8xf32>, tensor<4x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_result_rows(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<5x8xf32> {
  // expected-error @+1 {{dimension 0 of result (5) does not match dimension 0 of query (3)}}
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @attention_result_features(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{dimension 1 of result (4) does not match dimension 1 of query (8)}}
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @attention_bias_heads(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %b: tensor<3x3x3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{bias must have 1 or heads (2) rows in dimension 0, got 3}}
  %0 = attn.attention %q, %k, %v heads(2) bias(%b : tensor<3x3x3xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_bias_query_rows(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %b: tensor<2x4x3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{dimension 1 of bias (4) does not match dimension 0 of query (3)}}
  %0 = attn.attention %q, %k, %v heads(2) bias(%b : tensor<2x4x3xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_bias_key_rows(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %b: tensor<2x3x7xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{dimension 2 of bias (7) does not match dimension 0 of key (3)}}
  %0 = attn.attention %q, %k, %v heads(2) bias(%b : tensor<2x3x7xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_bias_rank(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %b: tensor<3x3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{operand #3 must be 3D tensor of 32-bit float values}}
  %0 = "attn.attention"(%q, %k, %v, %b) <{heads = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}> : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x3xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_causal_more_queries_than_keys(%q: tensor<4x8xf32>, %k: tensor<2x8xf32>, %v: tensor<2x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{causal attention with more queries (4) than keys (2) leaves rows with nothing to attend to}}
  %0 = attn.attention %q, %k, %v heads(2) causal : tensor<4x8xf32>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @kv_cache_append_features(%new: tensor<1x8xf32>, %cache: tensor<16x4xf32>, %pos: index) -> tensor<16x4xf32> {
  // expected-error @+1 {{dimension 1 of update (8) does not match dimension 1 of cache (4)}}
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<1x8xf32> into tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// -----

func.func @kv_cache_append_too_many_rows(%new: tensor<32x8xf32>, %cache: tensor<16x8xf32>, %pos: index) -> tensor<16x8xf32> {
  // expected-error @+1 {{update of 32 rows does not fit a cache of 16 rows}}
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<32x8xf32> into tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

func.func @kv_cache_append_dynamic_features(%new: tensor<1x8xf32>, %cache: tensor<16x?xf32>, %pos: index) -> tensor<16x?xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of cache, got 'tensor<16x?xf32>'}}
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<1x8xf32> into tensor<16x?xf32>
  return %0 : tensor<16x?xf32>
}

// -----

func.func @kv_cache_append_result_type(%new: tensor<1x8xf32>, %cache: tensor<16x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // expected-error @+1 {{failed to verify that all of {cache, result} have same type}}
  %0 = "attn.kv_cache_append"(%new, %cache, %pos) : (tensor<1x8xf32>, tensor<16x8xf32>, index) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @kv_cache_read_static_rows(%cache: tensor<16x8xf32>, %len: index) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires a dynamic row count in the result (its length is a run-time value), got 'tensor<4x8xf32>'}}
  %0 = attn.kv_cache_read %cache[%len] : tensor<16x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @kv_cache_read_features(%cache: tensor<16x8xf32>, %len: index) -> tensor<?x4xf32> {
  // expected-error @+1 {{dimension 1 of result (4) does not match dimension 1 of cache (8)}}
  %0 = attn.kv_cache_read %cache[%len] : tensor<16x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @kv_cache_read_dynamic_features(%cache: tensor<16x?xf32>, %len: index) -> tensor<?x4xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of cache, got 'tensor<16x?xf32>'}}
  %0 = attn.kv_cache_read %cache[%len] : tensor<16x?xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @gelu_unknown_approximation(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximation' [erf, tanh]}}
  %0 = attn.gelu %x sigmoid : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @silu_integer(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %0 = "attn.silu"(%x) : (tensor<4x8xi32>) -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

func.func @swiglu_shape_mismatch(%g: tensor<4x8xf32>, %u: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "attn.swiglu"(%g, %u) : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{requires an input of rank 1 or more}}
  %0 = attn.softmax %x : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %0 = "attn.softmax"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @embedding_scale_nan(%table: tensor<100x8xf32>, %ids: tensor<3xi32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'attn.embedding' op scale must be finite, got NaN}}
  %0 = attn.embedding %table[%ids] scale(0x7FC00000) : tensor<100x8xf32>, tensor<3xi32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @rms_norm_gain_offset_infinite(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.rms_norm' op gain_offset must be finite, got +Inf}}
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) gain_offset(0x7F800000) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @geglu_mismatched_operands(%g: tensor<4x8xf32>, %u: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'attn.geglu' op failed to verify that all of {gate, up, result} have same type}}
  %0 = "attn.geglu"(%g, %u) <{approximation = 0 : i32}> : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @relu_integer(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{'attn.relu' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<4x8xi32>'}}
  %0 = attn.relu %x : tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----

func.func @attention_window_zero(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.attention' op window must be at least 1, got 0}}
  %0 = attn.attention %q, %k, %v heads(2) causal window(0) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @attention_window_not_causal(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.attention' op window requires causal attention}}
  %0 = attn.attention %q, %k, %v heads(2) window(8) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @attention_alibi_slope_count(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.attention' op alibi has 3 slopes, expected one per head (2)}}
  %0 = attn.attention %q, %k, %v heads(2) causal alibi([0.5, 0.25, 0.125]) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @attention_alibi_slope_infinite(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'attn.attention' op alibi slope of head 1 must be finite, got +Inf}}
  %0 = "attn.attention"(%q, %k, %v) <{heads = 2 : i64, causal, alibi = array<f32: 0.5, 0x7F800000>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @sinusoidal_halves_too_narrow(%x: tensor<?x2xf32>, %pos: index) -> tensor<?x2xf32> {
  // expected-error @+1 {{'attn.sinusoidal_pe' op with halves requires at least 4 features (its frequencies divide by D/2 - 1), got 2}}
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) halves : tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

func.func @kv_cache_read_element_type(%cache: tensor<16x8xbf16>, %len: index) -> tensor<?x8xf32> {
  // expected-error @+1 {{result element type 'f32' differs from the cache's 'bf16'}}
  %0 = attn.kv_cache_read %cache[%len] : tensor<16x8xbf16> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @kv_cache_append_bf16_update(%new: tensor<1x8xbf16>, %cache: tensor<16x8xbf16>, %pos: index) -> tensor<16x8xbf16> {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float values}}
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<1x8xbf16> into tensor<16x8xbf16>
  return %0 : tensor<16x8xbf16>
}

// -----

func.func @kv_cache_i8(%new: tensor<1x8xf32>, %cache: tensor<16x8xi8>, %pos: index) -> tensor<16x8xi8> {
  // expected-error @+1 {{operand #1 must be 2D tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<1x8xf32> into tensor<16x8xi8>
  return %0 : tensor<16x8xi8>
}

// -----

func.func @attention_key_value_types(%q: tensor<?x8xf32>, %k: tensor<?x8xbf16>, %v: tensor<?x8xf16>) -> tensor<?x8xf32> {
  // expected-error @+1 {{requires key and value of one element type, got 'bf16' and 'f16'}}
  %0 = attn.attention %q, %k, %v heads(2) : tensor<?x8xf32>, tensor<?x8xbf16>, tensor<?x8xf16> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @attention_bf16_query(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>) -> tensor<?x8xf32> {
  // expected-error @+1 {{operand #0 must be 2D tensor of 32-bit float values}}
  %0 = attn.attention %q, %k, %k heads(2) : tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @attention_probabilities_wrong_heads(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>) -> tensor<4x3x5xf32> {
  // expected-error @+1 {{result dimension 0 is 4, expected the heads (2)}}
  %0 = attn.attention_probabilities %q, %k heads(2) : tensor<3x8xf32>, tensor<5x8xf32> -> tensor<4x3x5xf32>
  return %0 : tensor<4x3x5xf32>
}

// -----

func.func @attention_probabilities_wrong_keys(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{dimension 2 of result (4) does not match dimension 0 of key (5)}}
  %0 = attn.attention_probabilities %q, %k heads(2) : tensor<3x8xf32>, tensor<5x8xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @attention_probabilities_key_features(%q: tensor<3x8xf32>, %k: tensor<5x6xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{key has 6 features, expected kv_heads * head_dim = 2 * 4 = 8}}
  %0 = attn.attention_probabilities %q, %k heads(2) : tensor<3x8xf32>, tensor<5x6xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @attention_probabilities_window_without_causal(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{window requires causal attention}}
  %0 = attn.attention_probabilities %q, %k heads(2) window(2) : tensor<3x8xf32>, tensor<5x8xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @attention_probabilities_integer_keys(%q: tensor<3x8xf32>, %k: tensor<5x8xi8>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{operand #1 must be}}
  %0 = attn.attention_probabilities %q, %k heads(2) : tensor<3x8xf32>, tensor<5x8xi8> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @sinks_not_per_head(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %s: tensor<2xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.attention' op requires sinks of shape [4] (one f32 logit per query head), got 'tensor<2xf32>'}}
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal sinks(%s : tensor<2xf32>) : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @sinks_dynamic(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %s: tensor<?xf32>) -> tensor<4x?x?xf32> {
  // expected-error @+1 {{'attn.attention_probabilities' op requires sinks of shape [4] (one f32 logit per query head), got 'tensor<?xf32>'}}
  %0 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) causal sinks(%s : tensor<?xf32>) : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<4x?x?xf32>
  return %0 : tensor<4x?x?xf32>
}
