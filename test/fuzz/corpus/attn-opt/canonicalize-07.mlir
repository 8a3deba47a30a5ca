func.func @negative_attention_partial_kv_len(%q: tensor<1x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>) -> tensor<1x8xf32> {
  %n = arith.constant 3 : index
  %0 = attn.attention %q, %k, %v heads(2) causal kv_len(%n) : tensor<1x8xf32>, tensor<5x8xf32>, tensor<5x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}
