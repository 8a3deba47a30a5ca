func.func @heads_float(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %q, %q heads(2.5) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
