func.func @heads_not_integer(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %q, %q heads("two") : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
