func.func @layer_norm_rank3(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-03) : tensor<2x3x8xf32>, tensor<8xf32>
  return %0 : tensor<2x3x8xf32>
}
