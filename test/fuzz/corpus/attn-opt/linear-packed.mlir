func.func @packed_linear(%x: tensor<?x64xf32>, %w: tensor<4x64x32xf32>) -> tensor<?x128xf32> {
  %0 = attn.linear %x, %w layout(packed) : tensor<?x64xf32>, tensor<4x64x32xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}
