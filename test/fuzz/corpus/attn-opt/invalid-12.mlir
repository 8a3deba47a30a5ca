func.func @linear_input_rank(%x: tensor<8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %0 = "attn.linear"(%x, %w) <{layout = 0 : i32}> : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
