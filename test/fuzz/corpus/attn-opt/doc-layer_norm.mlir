func.func @layer_norm(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  return %0 : tensor<?x64xf32>
}
