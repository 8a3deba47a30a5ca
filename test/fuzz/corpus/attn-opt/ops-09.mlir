func.func @rope_interleaved(%x: tensor<3x16xf32>, %pos: index) -> tensor<3x16xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(5.0e+05) interleaved : tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}
