func.func @attention_result_rows(%q: tensor<3x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<5x8xf32> {
  %0 = attn.attention %q, %k, %v heads(2) : tensor<3x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}
