func.func @attention_bias_query_rows(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %b: tensor<2x4x3xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) bias(%b : tensor<2x4x3xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
