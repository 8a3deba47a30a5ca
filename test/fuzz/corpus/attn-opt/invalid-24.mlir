func.func @residual_add_type_mismatch(%a: tensor<4x8xf32>, %b: tensor<4x9xf32>) -> tensor<4x8xf32> {
  %0 = "attn.residual_add"(%a, %b) : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
