func.func @undefined_value(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.residual_add %x, %nothing : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
