func.func @negative_residual_add_partly_zero(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = attn.residual_add %x, %c : tensor<2xf32>
  return %0 : tensor<2xf32>
}
