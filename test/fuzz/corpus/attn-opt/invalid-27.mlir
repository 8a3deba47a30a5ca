func.func @rope_head_dim_not_dividing(%x: tensor<4x12xf32>, %pos: index) -> tensor<4x12xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(8) theta(1.0e+04) interleaved : tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}
