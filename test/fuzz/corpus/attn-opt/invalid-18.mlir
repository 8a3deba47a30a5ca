func.func @layer_norm_dynamic_features(%x: tensor<4x?xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x?xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<4x?xf32>, tensor<8xf32>
  return %0 : tensor<4x?xf32>
}
