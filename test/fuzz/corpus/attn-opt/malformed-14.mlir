func.func @truncated(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.layer_norm %x,
