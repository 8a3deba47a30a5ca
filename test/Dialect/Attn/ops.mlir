// Round trip of every attn op: the custom form parses, prints and re-parses
// to the same text; the generic form does too.
// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file -mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s
// Printing is a fixed point: printed text re-parses and prints identically,
// from the custom and from the generic form.
// RUN: attn-opt %s -split-input-file > %t.custom
// RUN: attn-opt %t.custom -split-input-file | diff %t.custom -
// RUN: attn-opt %s -split-input-file -mlir-print-op-generic | attn-opt -split-input-file | diff %t.custom -

// CHECK-LABEL: func.func @embedding_dynamic_seq
// CHECK: attn.embedding %{{.*}}[%{{.*}}] : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
func.func @embedding_dynamic_seq(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @embedding_scaled
// CHECK: attn.embedding %{{.*}}[%{{.*}}] scale(4.800000e+01) : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
func.func @embedding_scaled(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = attn.embedding %table[%ids] scale(48.0) : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @embedding_i64_static
// CHECK: attn.embedding %{{.*}}[%{{.*}}] : tensor<100x8xf32>, tensor<3xi64> -> tensor<3x8xf32>
func.func @embedding_i64_static(%table: tensor<100x8xf32>, %ids: tensor<3xi64>) -> tensor<3x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<3xi64> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func.func @linear_out_in
// CHECK: attn.linear %{{.*}}, %{{.*}} layout(out_in) : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
func.func @linear_out_in(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  %0 = attn.linear %x, %w layout(out_in) : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// CHECK-LABEL: func.func @linear_in_out_bias
// CHECK: attn.linear %{{.*}}, %{{.*}}, %{{.*}} layout(in_out) : tensor<4x8xf32>, tensor<8x24xf32>, tensor<24xf32> -> tensor<4x24xf32>
func.func @linear_in_out_bias(%x: tensor<4x8xf32>, %w: tensor<8x24xf32>, %b: tensor<24xf32>) -> tensor<4x24xf32> {
  %0 = attn.linear %x, %w, %b layout(in_out) : tensor<4x8xf32>, tensor<8x24xf32>, tensor<24xf32> -> tensor<4x24xf32>
  return %0 : tensor<4x24xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK: attn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} epsilon(9.99999974E-6) : tensor<?x8xf32>, tensor<8xf32>
func.func @layer_norm(%x: tensor<?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_rank3
// CHECK: attn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} epsilon(1.000000e-03) : tensor<2x3x8xf32>, tensor<8xf32>
func.func @layer_norm_rank3(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-03) : tensor<2x3x8xf32>, tensor<8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK: attn.rms_norm %{{.*}}, %{{.*}} epsilon(9.99999997E-7) : tensor<?x8xf32>, tensor<8xf32>
func.func @rms_norm(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm_gain_offset
// CHECK: attn.rms_norm %{{.*}}, %{{.*}} epsilon(9.99999997E-7) gain_offset(1.000000e+00) : tensor<?x8xf32>, tensor<8xf32>
func.func @rms_norm_gain_offset(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) gain_offset(1.0) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @residual_add
// CHECK: attn.residual_add %{{.*}}, %{{.*}} : tensor<?x8xf32>
func.func @residual_add(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.residual_add %a, %b : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @rope_rotate_half
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(4) theta(1.000000e+04) rotate_half : tensor<?x8xf32>
func.func @rope_rotate_half(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) rotate_half : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// The qk-norm: each head of 4 features normalized with the same 4 gains,
// on its own and as rope's input norm (with Gemma's gain offset too).
// CHECK-LABEL: func.func @qk_norm
// CHECK: attn.rms_norm %{{.*}}, %{{.*}} epsilon(9.99999997E-7) head_dim(4) : tensor<?x8xf32>, tensor<4xf32>
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(4) theta(1.000000e+06) rms_norm(%{{.*}} : tensor<4xf32>) epsilon(9.99999997E-7) rotate_half : tensor<?x8xf32>
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(4) rotary_dims(2) theta(1.000000e+04) rms_norm(%{{.*}} : tensor<4xf32>) epsilon(9.99999997E-7) gain_offset(1.000000e+00) interleaved : tensor<?x8xf32>
func.func @qk_norm(%x: tensor<?x8xf32>, %g: tensor<4xf32>, %pos: index) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) head_dim(4) : tensor<?x8xf32>, tensor<4xf32>
  %1 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+06) rms_norm(%g : tensor<4xf32>) epsilon(1.0e-06) rotate_half : tensor<?x8xf32>
  %2 = attn.rope %x offset(%pos) head_dim(4) rotary_dims(2) theta(1.0e+04) rms_norm(%g : tensor<4xf32>) epsilon(1.0e-06) gain_offset(1.0) interleaved : tensor<?x8xf32>
  return %0, %1, %2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Gemma 2: capped scores (and their probabilities), capped logits.
// CHECK-LABEL: func.func @softcaps
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) kv_heads(2) scale(6.250000e-02) softcap(5.000000e+01) causal window(8) : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
// CHECK: attn.attention_probabilities %{{.*}}, %{{.*}} heads(4) kv_heads(2) softcap(5.000000e+01) causal : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<4x?x?xf32>
// CHECK: attn.softcap %{{.*}} cap(3.000000e+01) : tensor<1x100xf32>
func.func @softcaps(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %l: tensor<1x100xf32>) -> (tensor<?x64xf32>, tensor<4x?x?xf32>, tensor<1x100xf32>) {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) scale(0.0625) softcap(50.0) causal window(8) : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  %1 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) softcap(50.0) causal : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<4x?x?xf32>
  %2 = attn.softcap %l cap(30.0) : tensor<1x100xf32>
  return %0, %1, %2 : tensor<?x64xf32>, tensor<4x?x?xf32>, tensor<1x100xf32>
}

// -----

// CHECK-LABEL: func.func @sinusoidal_layouts
// CHECK: attn.sinusoidal_pe %{{.*}} offset(%{{.*}}) base(1.000000e+04) : tensor<?x8xf32>
// CHECK: attn.sinusoidal_pe %{{.*}} offset(%{{.*}}) base(1.000000e+04) halves : tensor<?x8xf32>
func.func @sinusoidal_layouts(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) interleaved : tensor<?x8xf32>
  %1 = attn.sinusoidal_pe %0 offset(%pos) base(1.0e+04) halves : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @rope_interleaved
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(8) theta(5.000000e+05) interleaved : tensor<3x16xf32>
func.func @rope_interleaved(%x: tensor<3x16xf32>, %pos: index) -> tensor<3x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(5.0e+05) interleaved : tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// -----

// Partial rotary (GPT-NeoX, GPT-J): the first 4 features of each head of 8.
// CHECK-LABEL: func.func @rope_partial
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(8) rotary_dims(4) theta(1.000000e+04) rotate_half : tensor<?x16xf32>
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(8) rotary_dims(2) theta(1.000000e+04) interleaved : tensor<?x16xf32>
func.func @rope_partial(%x: tensor<?x16xf32>, %pos: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(4) theta(1.0e+04) rotate_half : tensor<?x16xf32>
  %1 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(2) theta(1.0e+04) interleaved : tensor<?x16xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// A resolved scaling: an f64 table, one entry per pair, and yarn's attention
// factor. Both print exactly (17 significant digits where needed), so the
// text round trip loses nothing.
// CHECK-LABEL: func.func @rope_frequencies
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(8) rotary_dims(4) frequencies(dense<[5.000000e-01, 0.0012345678901234567]> : tensor<2xf64>) rotate_half : tensor<?x16xf32>
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(4) frequencies(dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf64>) attention_factor(1.1386294361119891) interleaved : tensor<?x8xf32>
func.func @rope_frequencies(%x: tensor<?x16xf32>, %y: tensor<?x8xf32>, %pos: index) -> (tensor<?x16xf32>, tensor<?x8xf32>) {
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[0.5, 0.0012345678901234567]> : tensor<2xf64>) rotate_half : tensor<?x16xf32>
  %1 = attn.rope %y offset(%pos) head_dim(4) frequencies(dense<[1.0, 0.0]> : tensor<2xf64>) attention_factor(1.1386294361119891) interleaved : tensor<?x8xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x8xf32>
}

// -----

// Dynamic NTK: theta rescaled at run time from the call's positions.
// CHECK-LABEL: func.func @rope_dynamic_ntk
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(8) theta(1.000000e+04) dynamic_ntk(factor = 2.000000e+00, max_positions = 2048) rotate_half : tensor<?x16xf32>
func.func @rope_dynamic_ntk(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) dynamic_ntk(factor = 2.0, max_positions = 2048) rotate_half : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// LongRoPE: the short table, or the long one for a call past 4096.
// CHECK-LABEL: func.func @rope_longrope
// CHECK: attn.rope %{{.*}} offset(%{{.*}}) head_dim(8) rotary_dims(4) frequencies(dense<[1.000000e+00, 5.000000e-02]> : tensor<2xf64>) long_frequencies(dense<[5.000000e-01, 5.000000e-03]> : tensor<2xf64>, after = 4096) attention_factor(1.190000e+00) rotate_half : tensor<?x16xf32>
func.func @rope_longrope(%x: tensor<?x16xf32>, %pos: index) -> tensor<?x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) rotary_dims(4) frequencies(dense<[1.0, 0.05]> : tensor<2xf64>) long_frequencies(dense<[0.5, 0.005]> : tensor<2xf64>, after = 4096) attention_factor(1.19) rotate_half : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// CHECK-LABEL: func.func @sinusoidal_pe
// CHECK: attn.sinusoidal_pe %{{.*}} offset(%{{.*}}) base(1.000000e+04) : tensor<?x8xf32>
func.func @sinusoidal_pe(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// T5's defaults (32 buckets, 128) print as nothing.
// CHECK-LABEL: func.func @relative_position_bias_encoder
// CHECK-SAME: (%[[TABLE:.*]]: tensor<32x8xf32>, %[[S:.*]]: index)
// CHECK: attn.relative_position_bias %[[TABLE]] sizes(%[[S]], %[[S]]) bidirectional : tensor<32x8xf32> -> tensor<8x?x?xf32>
func.func @relative_position_bias_encoder(%table: tensor<32x8xf32>, %s: index) -> tensor<8x?x?xf32> {
  %0 = attn.relative_position_bias %table sizes(%s, %s) num_buckets(32) max_distance(128) bidirectional : tensor<32x8xf32> -> tensor<8x?x?xf32>
  return %0 : tensor<8x?x?xf32>
}

// -----

// A decoder step over a static cache of which %n keys are valid.
// CHECK-LABEL: func.func @relative_position_bias_decode
// CHECK-SAME: (%[[TABLE:.*]]: tensor<16x4xf32>, %[[N:.*]]: index)
// CHECK: attn.relative_position_bias %[[TABLE]] kv_len(%[[N]]) num_buckets(16) max_distance(64) : tensor<16x4xf32> -> tensor<4x1x256xf32>
func.func @relative_position_bias_decode(%table: tensor<16x4xf32>, %n: index) -> tensor<4x1x256xf32> {
  %0 = attn.relative_position_bias %table kv_len(%n) num_buckets(16) max_distance(64) : tensor<16x4xf32> -> tensor<4x1x256xf32>
  return %0 : tensor<4x1x256xf32>
}

// -----

// One dynamic dimension, one size; the bias feeds attention.
// CHECK-LABEL: func.func @relative_position_bias_into_attention
// CHECK: %[[B:.*]] = attn.relative_position_bias %{{.*}} sizes(%{{.*}}) kv_len(%{{.*}}) max_distance(20) : tensor<32x2xf32> -> tensor<2x3x?xf32>
// CHECK: attn.attention {{.*}} bias(%[[B]] : tensor<2x3x?xf32>) kv_len(%{{.*}})
func.func @relative_position_bias_into_attention(%table: tensor<32x2xf32>, %q: tensor<3x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %n: index) -> tensor<3x8xf32> {
  %c0 = arith.constant 0 : index
  %skv = tensor.dim %k, %c0 : tensor<?x8xf32>
  %b = attn.relative_position_bias %table sizes(%skv) kv_len(%n) max_distance(20) : tensor<32x2xf32> -> tensor<2x3x?xf32>
  %0 = attn.attention %q, %k, %v heads(2) scale(1.0) causal bias(%b : tensor<2x3x?xf32>) kv_len(%n) : tensor<3x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func.func @attention_plain
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(2) : tensor<3x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<3x8xf32>
func.func @attention_plain(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func.func @attention_causal_gqa_decode
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) kv_heads(2) scale(2.500000e-01) causal kv_len(%{{.*}}) : tensor<1x16xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<1x16xf32>
func.func @attention_causal_gqa_decode(%q: tensor<1x16xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %n: index) -> tensor<1x16xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) scale(0.25) causal kv_len(%n) : tensor<1x16xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}

// -----

// CHECK-LABEL: func.func @attention_alibi_bias
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(2) causal bias(%{{.*}} : tensor<2x?x?xf32>) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
func.func @attention_alibi_bias(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %bias: tensor<2x?x?xf32>) -> tensor<?x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) causal bias(%bias : tensor<2x?x?xf32>) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A sliding window, and ALiBi from per-head slopes.
// CHECK-LABEL: func.func @attention_window_alibi
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(2) causal window(4096) : tensor<?x8xf32>
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(2) causal window(16) alibi([2.500000e-01, 6.250000e-02]) kv_len(%{{.*}}) : tensor<1x8xf32>
func.func @attention_window_alibi(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>,
                                  %q1: tensor<1x8xf32>, %n: index) -> (tensor<?x8xf32>, tensor<1x8xf32>) {
  %0 = attn.attention %q, %k, %v heads(2) causal window(4096) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %1 = attn.attention %q1, %k, %v heads(2) causal window(16) alibi([0.25, 0.0625]) kv_len(%n) : tensor<1x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<1x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<1x8xf32>
}

// -----

// A bias shared by all heads has one row in dimension 0.
// CHECK-LABEL: func.func @attention_shared_bias
// CHECK: bias(%{{.*}} : tensor<1x3x3xf32>)
func.func @attention_shared_bias(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %bias: tensor<1x3x3xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) bias(%bias : tensor<1x3x3xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

// CHECK-LABEL: func.func @kv_cache
// CHECK: %[[C:.*]] = attn.kv_cache_append %{{.*}} into %{{.*}}[%{{.*}}] : tensor<?x8xf32> into tensor<16x8xf32>
// CHECK: attn.kv_cache_read %[[C]][%{{.*}}] : tensor<16x8xf32> -> tensor<?x8xf32>
func.func @kv_cache(%new: tensor<?x8xf32>, %cache: tensor<16x8xf32>, %pos: index, %len: index) -> tensor<?x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xf32>
  %1 = attn.kv_cache_read %0[%len] : tensor<16x8xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @activations
// CHECK: attn.gelu %{{.*}} tanh : tensor<?x8xf32>
// CHECK: attn.gelu %{{.*}} erf : tensor<?x8xf32>
// CHECK: attn.silu %{{.*}} : tensor<?x8xf32>
// CHECK: attn.swiglu %{{.*}}, %{{.*}} : tensor<?x8xf32>
// CHECK: attn.softmax %{{.*}} : tensor<?x8xf32>
// CHECK: attn.relu %{{.*}} : tensor<?x8xf32>
// CHECK: attn.geglu %{{.*}}, %{{.*}} tanh : tensor<?x8xf32>
// CHECK: attn.geglu %{{.*}}, %{{.*}} erf : tensor<?x8xf32>
func.func @activations(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.gelu %x tanh : tensor<?x8xf32>
  %1 = attn.gelu %0 erf : tensor<?x8xf32>
  %2 = attn.silu %1 : tensor<?x8xf32>
  %3 = attn.swiglu %2, %y : tensor<?x8xf32>
  %4 = attn.softmax %3 : tensor<?x8xf32>
  %5 = attn.relu %4 : tensor<?x8xf32>
  %6 = attn.geglu %5, %y tanh : tensor<?x8xf32>
  %7 = attn.geglu %6, %y erf : tensor<?x8xf32>
  return %7 : tensor<?x8xf32>
}

// -----

// A packed weight in bf16 (half the bytes of f32; accumulation stays f32).
// CHECK-LABEL: func.func @linear_packed_bf16
// CHECK: attn.linear %{{.*}}, %{{.*}} layout(packed) : tensor<?x64xf32>, tensor<3x64x32xbf16> -> tensor<?x80xf32>
func.func @linear_packed_bf16(%x: tensor<?x64xf32>, %w: tensor<3x64x32xbf16>) -> tensor<?x80xf32> {
  %0 = attn.linear %x, %w layout(packed) : tensor<?x64xf32>, tensor<3x64x32xbf16> -> tensor<?x80xf32>
  return %0 : tensor<?x80xf32>
}

// -----

// A bf16 cache: f32 rows in, bf16 rows out, attention over them.
// CHECK-LABEL: func.func @kv_cache_bf16
// CHECK: %[[C:.*]] = attn.kv_cache_append %{{.*}} into %{{.*}}[%{{.*}}] : tensor<?x8xf32> into tensor<16x8xbf16>
// CHECK: %[[K:.*]] = attn.kv_cache_read %[[C]][%{{.*}}] : tensor<16x8xbf16> -> tensor<?x8xbf16>
// CHECK: attn.attention %{{.*}}, %[[K]], %[[K]] heads(2) causal kv_len(%{{.*}}) : tensor<?x8xf32>, tensor<?x8xbf16>, tensor<?x8xbf16> -> tensor<?x8xf32>
func.func @kv_cache_bf16(%new: tensor<?x8xf32>, %cache: tensor<16x8xbf16>, %pos: index, %len: index) -> tensor<?x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xbf16>
  %1 = attn.kv_cache_read %0[%len] : tensor<16x8xbf16> -> tensor<?x8xbf16>
  %2 = attn.attention %new, %1, %1 heads(2) causal kv_len(%len) : tensor<?x8xf32>, tensor<?x8xbf16>, tensor<?x8xbf16> -> tensor<?x8xf32>
  return %2 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @kv_cache_f16_ring
// CHECK: attn.kv_cache_append %{{.*}} into %{{.*}}[%{{.*}}] ring : tensor<1x8xf32> into tensor<4x8xf16>
// CHECK: attn.kv_cache_read %{{.*}}[%{{.*}}] ring(%{{.*}}) : tensor<4x8xf16> -> tensor<?x8xf16>
func.func @kv_cache_f16_ring(%new: tensor<1x8xf32>, %cache: tensor<4x8xf16>, %pos: index, %len: index) -> tensor<?x8xf16> {
  %0 = attn.kv_cache_append %new into %cache[%pos] ring : tensor<1x8xf32> into tensor<4x8xf16>
  %1 = attn.kv_cache_read %0[%len] ring(%pos) : tensor<4x8xf16> -> tensor<?x8xf16>
  return %1 : tensor<?x8xf16>
}

// -----

// CHECK-LABEL: func.func @attention_probabilities
// CHECK: attn.attention_probabilities %{{.*}}, %{{.*}} heads(6) kv_heads(2) causal window(4) : tensor<?x192xf32>, tensor<?x64xf32> -> tensor<6x?x?xf32>
// CHECK: attn.attention_probabilities %{{.*}}, %{{.*}} heads(2) scale(5.000000e-01) causal alibi([5.000000e-01, 2.500000e-01]) kv_len(%{{.*}}) : tensor<3x8xf32>, tensor<?x8xbf16> -> tensor<2x3x?xf32>
func.func @attention_probabilities(%q: tensor<?x192xf32>, %k: tensor<?x64xf32>, %q2: tensor<3x8xf32>, %k2: tensor<?x8xbf16>, %n: index) -> (tensor<6x?x?xf32>, tensor<2x3x?xf32>) {
  %0 = attn.attention_probabilities %q, %k heads(6) kv_heads(2) causal window(4) : tensor<?x192xf32>, tensor<?x64xf32> -> tensor<6x?x?xf32>
  %1 = attn.attention_probabilities %q2, %k2 heads(2) scale(0.5) causal alibi([0.5, 0.25]) kv_len(%n) : tensor<3x8xf32>, tensor<?x8xbf16> -> tensor<2x3x?xf32>
  return %0, %1 : tensor<6x?x?xf32>, tensor<2x3x?xf32>
}

// -----

// gpt-oss's attention sinks: one logit per query head, in the attention and
// in its probabilities.
// CHECK-LABEL: func.func @sinks
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) kv_heads(2) causal window(8) sinks(%{{.*}} : tensor<4xf32>) kv_len(%{{.*}}) : tensor<1x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<1x64xf32>
// CHECK: attn.attention_probabilities %{{.*}}, %{{.*}} heads(4) kv_heads(2) causal sinks(%{{.*}} : tensor<4xf32>) : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<4x?x?xf32>
func.func @sinks(%q1: tensor<1x64xf32>, %q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>, %s: tensor<4xf32>, %n: index) -> (tensor<1x64xf32>, tensor<4x?x?xf32>) {
  %0 = attn.attention %q1, %k, %v heads(4) kv_heads(2) causal window(8) sinks(%s : tensor<4xf32>) kv_len(%n) : tensor<1x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<1x64xf32>
  %1 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) causal sinks(%s : tensor<4xf32>) : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<4x?x?xf32>
  return %0, %1 : tensor<1x64xf32>, tensor<4x?x?xf32>
}
