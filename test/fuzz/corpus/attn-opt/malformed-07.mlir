func.func @operand_type_conflict(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %0 = attn.silu %x : tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
