func.func @negative_residual_add_nonzero(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = arith.constant dense<1.0> : tensor<4x8xf32>
  %0 = attn.residual_add %one, %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
