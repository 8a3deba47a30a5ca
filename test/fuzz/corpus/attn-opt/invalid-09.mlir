func.func @linear_bias_mismatch(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  %0 = attn.linear %x, %w, %b layout(out_in) : tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32> -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
