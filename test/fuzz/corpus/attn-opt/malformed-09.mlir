func.func @bias_without_type(%q: tensor<3x8xf32>, %b: tensor<2x3x3xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %q, %q heads(2) bias(%b) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
