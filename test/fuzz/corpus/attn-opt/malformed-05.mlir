func.func @missing_value_operand(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %q heads(2) : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
