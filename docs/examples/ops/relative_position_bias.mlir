// T5's relative position bias feeding attention. T5 does not scale scores
// (scale 1). An encoder over a prompt: both directions, 32 buckets, 128.
func.func @t5_encoder_attention(%q: tensor<?x256xf32>, %k: tensor<?x256xf32>, %v: tensor<?x256xf32>, %table: tensor<32x4xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %sq = tensor.dim %q, %c0 : tensor<?x256xf32>
  %skv = tensor.dim %k, %c0 : tensor<?x256xf32>
  %b = attn.relative_position_bias %table sizes(%sq, %skv) bidirectional : tensor<32x4xf32> -> tensor<4x?x?xf32>
  %0 = attn.attention %q, %k, %v heads(4) scale(1.0) bias(%b : tensor<4x?x?xf32>) : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}
// A decoder step over a static cache of which %n keys are valid: the bias and
// the attention take the same kv_len, so the query sits at %n - 1 for both.
func.func @t5_decoder_step(%q: tensor<1x256xf32>, %kc: tensor<512x256xf32>, %vc: tensor<512x256xf32>, %table: tensor<32x4xf32>, %n: index) -> tensor<1x256xf32> {
  %b = attn.relative_position_bias %table kv_len(%n) num_buckets(32) max_distance(128) : tensor<32x4xf32> -> tensor<4x1x512xf32>
  %0 = attn.attention %q, %kc, %vc heads(4) scale(1.0) causal bias(%b : tensor<4x1x512xf32>) kv_len(%n) : tensor<1x256xf32>, tensor<512x256xf32>, tensor<512x256xf32> -> tensor<1x256xf32>
  return %0 : tensor<1x256xf32>
}
