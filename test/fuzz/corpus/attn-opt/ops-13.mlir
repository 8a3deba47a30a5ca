func.func @attention_alibi_bias(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %bias: tensor<2x?x?xf32>) -> tensor<?x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) causal bias(%bias : tensor<2x?x?xf32>) : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
