func.func @attention_key_features(%q: tensor<3x16xf32>, %k: tensor<3x16xf32>, %v: tensor<3x8xf32>) -> tensor<3x16xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) : tensor<3x16xf32>, tensor<3x16xf32>, tensor<3x8xf32> -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}
