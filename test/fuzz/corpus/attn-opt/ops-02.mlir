func.func @linear_out_in(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  %0 = attn.linear %x, %w layout(out_in) : tensor<?x8xf32>, tensor<16x8xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}
