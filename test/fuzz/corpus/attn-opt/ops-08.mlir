func.func @rope_rotate_half(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %0 = attn.rope %x offset(%pos) head_dim(4) theta(1.0e+04) rotate_half : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
