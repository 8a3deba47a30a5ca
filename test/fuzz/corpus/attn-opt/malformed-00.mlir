func.func @unknown_op(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.attend %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
