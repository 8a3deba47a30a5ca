func.func @linear_in_out_bias(%x: tensor<4x8xf32>, %w: tensor<8x24xf32>, %b: tensor<24xf32>) -> tensor<4x24xf32> {
  %0 = attn.linear %x, %w, %b layout(in_out) : tensor<4x8xf32>, tensor<8x24xf32>, tensor<24xf32> -> tensor<4x24xf32>
  return %0 : tensor<4x24xf32>
}
