func.func @wrong_result_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0, %1 = attn.silu %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
