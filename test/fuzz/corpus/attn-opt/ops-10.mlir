func.func @sinusoidal_pe(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04) : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
