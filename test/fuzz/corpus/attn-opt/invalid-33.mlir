func.func @sinusoidal_pe_zero_base(%x: tensor<4x8xf32>, %pos: index) -> tensor<4x8xf32> {
  %0 = attn.sinusoidal_pe %x offset(%pos) base(0.0) : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
