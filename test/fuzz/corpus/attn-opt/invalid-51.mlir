func.func @attention_causal_more_queries_than_keys(%q: tensor<4x8xf32>, %k: tensor<2x8xf32>, %v: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) causal : tensor<4x8xf32>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
