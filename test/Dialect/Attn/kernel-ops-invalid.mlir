// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @gemm_block_count(%x: tensor<4x64xf32>, %w: tensor<2x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{80 output features in blocks of 32 need 3 blocks, but the packed weight has 2}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<2x64x32xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_in_features(%x: tensor<4x48xf32>, %w: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{input has 48 features but the packed weight of shape 'tensor<3x64x32xf32>' expects 64}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x48xf32>, tensor<3x64x32xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_unpacked_weight(%x: tensor<4x64xf32>, %w: tensor<80x64xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{requires a static packed weight [blocks, in_features, NR] of f32 or bf16, or [blocks, in_features / 32, NR, 34 (q8_0) or 18 (q4_0)] of i8, got 'tensor<80x64xf32>'}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<80x64xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_rows(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<5x80xf32>) -> tensor<5x80xf32> {
  // expected-error @+1 {{dimension 0 of init (5) does not match dimension 0 of input (4)}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) outs(%init : tensor<5x80xf32>) -> tensor<5x80xf32>
  return %0 : tensor<5x80xf32>
}

// -----

func.func @gemm_swiglu_without_up(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{takes a second weight if and only if its epilogue is gated (swiglu, geglu_tanh, geglu_erf, clamped_swiglu)}}
  %0 = attn.gemm swiglu ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_second_weight_shape(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %w2: tensor<6x64x16xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{requires both weights of one type, got 'tensor<3x64x32xf32>' and 'tensor<6x64x16xf32>'}}
  %0 = attn.gemm swiglu ins(%x, %w, %w2 : tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<6x64x16xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_bias(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %b: tensor<96xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{dimension 0 of bias (96) does not match dimension 1 of init (80)}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) bias(%b : tensor<96xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_residual(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %r: tensor<4x64xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{dimension 1 of residual (64) does not match dimension 1 of init (80)}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) residual(%r : tensor<4x64xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_mixed(%x: memref<4x64xf32>, %w: tensor<3x64x32xf32>, %init: memref<4x80xf32>) {
  // expected-error @+1 {{requires all shaped operands to be tensors, or all to be memrefs}}
  attn.gemm none ins(%x, %w : memref<4x64xf32>, tensor<3x64x32xf32>) outs(%init : memref<4x80xf32>)
  return
}

// -----

func.func @gemm_tensor_without_result(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) {
  // expected-error @+1 {{has one result on tensors and none on memrefs}}
  attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) outs(%init : tensor<4x80xf32>)
  return
}

// -----

func.func @flash_group(%q: tensor<?x512xf32>, %k: tensor<?x192xf32>, %init: tensor<?x512xf32>) -> tensor<?x512xf32> {
  // expected-error @+1 {{requires kv_heads (3) to divide heads (8)}}
  %0 = attn.flash_attention heads(8) kv_heads(3) scale(0.125) ins(%q, %k, %k : tensor<?x512xf32>, tensor<?x192xf32>, tensor<?x192xf32>) outs(%init : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %0 : tensor<?x512xf32>
}

// -----

func.func @flash_kv_features(%q: tensor<?x512xf32>, %k: tensor<?x256xf32>, %init: tensor<?x512xf32>) -> tensor<?x512xf32> {
  // expected-error @+1 {{requires key and value of kv_heads * head_dim = 128 features}}
  %0 = attn.flash_attention heads(8) kv_heads(2) scale(0.125) ins(%q, %k, %k : tensor<?x512xf32>, tensor<?x256xf32>, tensor<?x256xf32>) outs(%init : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %0 : tensor<?x512xf32>
}

// -----

func.func @flash_heads(%q: tensor<?x100xf32>, %k: tensor<?x100xf32>, %init: tensor<?x100xf32>) -> tensor<?x100xf32> {
  // expected-error @+1 {{heads 8 does not divide the query features 100}}
  %0 = attn.flash_attention heads(8) kv_heads(8) scale(0.125) ins(%q, %k, %k : tensor<?x100xf32>, tensor<?x100xf32>, tensor<?x100xf32>) outs(%init : tensor<?x100xf32>) -> tensor<?x100xf32>
  return %0 : tensor<?x100xf32>
}

// -----

func.func @flash_key_value_rows(%q: tensor<?x64xf32>, %k: tensor<8x64xf32>, %v: tensor<9x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{dimension 0 of value (9) does not match dimension 0 of key (8)}}
  %0 = attn.flash_attention heads(1) kv_heads(1) scale(0.125) ins(%q, %k, %v : tensor<?x64xf32>, tensor<8x64xf32>, tensor<9x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @flash_dynamic_features(%q: tensor<?x?xf32>, %k: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{requires a static size for dimension 1 of query, got 'tensor<?x?xf32>'}}
  %0 = attn.flash_attention heads(1) kv_heads(1) scale(0.125) ins(%q, %k, %k : tensor<?x?xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @packed_linear_blocks(%x: tensor<?x64xf32>, %w: tensor<2x64x32xf32>) -> tensor<?x80xf32> {
  // expected-error @+1 {{80 output features in blocks of 32 need 3 blocks, but the packed weight has 2}}
  %0 = attn.linear %x, %w layout(packed) : tensor<?x64xf32>, tensor<2x64x32xf32> -> tensor<?x80xf32>
  return %0 : tensor<?x80xf32>
}

// -----

func.func @gemm_relu_with_second_weight(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{takes a second weight if and only if its epilogue is gated}}
  %0 = attn.gemm relu ins(%x, %w, %w : tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_geglu_without_up(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{takes a second weight if and only if its epilogue is gated}}
  %0 = attn.gemm geglu_erf ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @flash_attention_window_not_causal(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{window requires causal attention}}
  %0 = attn.flash_attention heads(2) kv_heads(2) scale(0.125) window(4) ins(%q, %k, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @gemm_mixed_weight_types(%x: tensor<4x64xf32>, %w: tensor<3x64x32xbf16>, %w2: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{requires both weights of one type, got 'tensor<3x64x32xbf16>' and 'tensor<3x64x32xf32>'}}
  %0 = attn.gemm swiglu ins(%x, %w, %w2 : tensor<4x64xf32>, tensor<3x64x32xbf16>, tensor<3x64x32xf32>) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

// i8 bytes are q8_0 (34 per feature and block of 32) or q4_0 (18).
func.func @quantized_block_bytes(%x: tensor<4x64xf32>, %w: tensor<2x2x32x20xi8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{requires a static packed weight [blocks, in_features, NR] of f32 or bf16, or [blocks, in_features / 32, NR, 34 (q8_0) or 18 (q4_0)] of i8, got 'tensor<2x2x32x20xi8>'}}
  %0 = attn.linear %x, %w layout(packed) : tensor<4x64xf32>, tensor<2x2x32x20xi8> -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @quantized_in_features(%x: tensor<4x96xf32>, %w: tensor<2x2x32x34xi8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{input has 96 features but the packed weight of shape 'tensor<2x2x32x34xi8>' expects 64}}
  %0 = attn.linear %x, %w layout(packed) : tensor<4x96xf32>, tensor<2x2x32x34xi8> -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @quantized_table_width(%table: tensor<4x2x32x18xi8>, %ids: tensor<3xi32>) -> tensor<3x96xf32> {
  // expected-error @+1 {{result has 96 features but the packed table 'tensor<4x2x32x18xi8>' holds rows of 64}}
  %0 = attn.embedding %table[%ids] : tensor<4x2x32x18xi8>, tensor<3xi32> -> tensor<3x96xf32>
  return %0 : tensor<3x96xf32>
}

// -----

func.func @quantized_unpacked(%x: tensor<4x64xf32>, %w: tensor<64x64xi8>) -> tensor<4x64xf32> {
  // expected-error @+1 {{requires an f32 weight for layout out_in (a bf16 or quantized weight must be packed), got 'tensor<64x64xi8>'}}
  %0 = attn.linear %x, %w layout(out_in) : tensor<4x64xf32>, tensor<64x64xi8> -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @flash_key_value_types(%q: tensor<?x64xf32>, %k: tensor<?x64xbf16>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{requires key and value of one element type, got 'bf16' and 'f32'}}
  %0 = attn.flash_attention heads(1) kv_heads(1) scale(0.125) ins(%q, %k, %v : tensor<?x64xf32>, tensor<?x64xbf16>, tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @gemm_norm_gamma_size(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<48xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{dimension 0 of norm_gamma (48) does not match dimension 1 of input (64)}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) rms_norm(%g : tensor<48xf32>) epsilon(1.0e-05) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_norm_beta_rank(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<64xf32>, %beta: tensor<1x64xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{requires norm_beta of rank 1, got 'tensor<1x64xf32>'}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) layer_norm(%g, %beta : tensor<64xf32>, tensor<1x64xf32>) epsilon(1.0e-05) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_norm_epsilon(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<64xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{norm_epsilon must be positive and finite, got 0}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) rms_norm(%g : tensor<64xf32>) epsilon(0.0) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_norm_gamma_type(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<64xbf16>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{operand #2 must be f32 tensor or memref, but got 'tensor<64xbf16>'}}
  %0 = attn.gemm none ins(%x, %w : tensor<4x64xf32>, tensor<3x64x32xf32>) rms_norm(%g : tensor<64xbf16>) epsilon(1.0e-05) outs(%init : tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

// The generic form can state what the custom form cannot: a gain offset on a
// layer norm, or norm attributes without a gamma.
func.func @gemm_layer_norm_gain_offset(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<64xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{takes a norm_gain_offset only with an RMS norm (no norm_beta)}}
  %0 = "attn.gemm"(%x, %w, %g, %g, %init) <{epilogue = 0 : i32, norm_epsilon = 1.0e-05 : f32, norm_gain_offset = 1.0 : f32, operandSegmentSizes = array<i32: 1, 1, 0, 1, 1, 0, 0, 0, 0, 1>}> : (tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_norm_without_gamma(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{takes norm_beta, norm_epsilon and norm_gain_offset only with a norm_gamma}}
  %0 = "attn.gemm"(%x, %w, %init) <{epilogue = 0 : i32, norm_epsilon = 1.0e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 1>}> : (tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @gemm_norm_no_epsilon(%x: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %g: tensor<64xf32>, %init: tensor<4x80xf32>) -> tensor<4x80xf32> {
  // expected-error @+1 {{requires norm_epsilon with an input norm}}
  %0 = "attn.gemm"(%x, %w, %g, %init) <{epilogue = 0 : i32, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0, 0, 0, 0, 1>}> : (tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<64xf32>, tensor<4x80xf32>) -> tensor<4x80xf32>
  return %0 : tensor<4x80xf32>
}

// -----

func.func @flash_attention_sinks_per_kv_head(%q: memref<?x128xf32>, %k: memref<?x64xf32>, %v: memref<?x64xf32>, %s: memref<2xf32>, %out: memref<?x128xf32>) {
  // expected-error @+1 {{'attn.flash_attention' op requires sinks of shape [4] (one f32 logit per query head), got 'memref<2xf32>'}}
  attn.flash_attention heads(4) kv_heads(2) scale(0.125) causal sinks(%s : memref<2xf32>) ins(%q, %k, %v : memref<?x128xf32>, memref<?x64xf32>, memref<?x64xf32>) outs(%out : memref<?x128xf32>)
  return
}

// -----

func.func @gemm_clamped_without_limit(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<?x80xf32>) -> tensor<?x80xf32> {
  // expected-error @+1 {{takes alpha and limit if and only if its epilogue is clamped_swiglu}}
  %0 = attn.gemm clamped_swiglu ins(%x, %w, %w : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) alpha(1.702) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  return %0 : tensor<?x80xf32>
}

// -----

func.func @gemm_bias2_without_weight2(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %b: tensor<80xf32>, %init: tensor<?x80xf32>) -> tensor<?x80xf32> {
  // expected-error @+1 {{takes a bias2 only with a second weight}}
  %0 = attn.gemm none ins(%x, %w : tensor<?x64xf32>, tensor<3x64x32xf32>) bias2(%b : tensor<80xf32>) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  return %0 : tensor<?x80xf32>
}

// -----

func.func @gemm_clamped_negative_limit(%x: tensor<?x64xf32>, %w: tensor<3x64x32xf32>, %init: tensor<?x80xf32>) -> tensor<?x80xf32> {
  // expected-error @+1 {{limit must be positive and finite, got -7}}
  %0 = attn.gemm clamped_swiglu ins(%x, %w, %w : tensor<?x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) alpha(1.702) limit(-7.0) outs(%init : tensor<?x80xf32>) -> tensor<?x80xf32>
  return %0 : tensor<?x80xf32>
}
