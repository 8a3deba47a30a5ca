func.func @layer_norm_infinite_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = attn.layer_norm %x, %g, %b epsilon(0x7F800000) : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}
