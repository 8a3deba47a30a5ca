func.func @negative_dimension(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = attn.silu %x : tensor<-4x8xf32>
  return %0 : tensor<4x8xf32>
}
