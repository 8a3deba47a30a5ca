func.func @attention_shared_bias(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %v: tensor<3x8xf32>, %bias: tensor<1x3x3xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) bias(%bias : tensor<1x3x3xf32>) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
