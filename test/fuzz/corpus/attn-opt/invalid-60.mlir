func.func @silu_integer(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %0 = "attn.silu"(%x) : (tensor<4x8xi32>) -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}
