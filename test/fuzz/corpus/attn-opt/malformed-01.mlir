func.func @missing_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.silu %x
  return %0 : tensor<4x8xf32>
}
