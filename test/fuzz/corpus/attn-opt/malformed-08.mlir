func.func @epsilon_string(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = attn.rms_norm %x, %g epsilon("small") : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}
