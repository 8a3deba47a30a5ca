func.func @rope_offset_not_index(%x: tensor<4x8xf32>, %pos: i32) -> tensor<4x8xf32> {
  %0 = "attn.rope"(%x, %pos) <{head_dim = 8 : i64, pairing = 0 : i32, theta = 1.0e+04 : f32}> : (tensor<4x8xf32>, i32) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
