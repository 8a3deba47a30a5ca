func.func @negative_rope_zero_offset(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %c0 = arith.constant 0 : index
  %0 = attn.rope %x offset(%c0) head_dim(8) theta(1.0e+04) rotate_half : tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
