func.func @residual_add_negative_zero_lhs(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant dense<-0.0> : tensor<4x8xf32>
  %0 = attn.residual_add %zero, %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
