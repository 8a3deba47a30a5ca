func.func @layer_norm(%x: tensor<?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}
