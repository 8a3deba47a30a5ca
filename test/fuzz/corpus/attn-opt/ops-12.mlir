func.func @attention_causal_gqa_decode(%q: tensor<1x16xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>, %n: index) -> tensor<1x16xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) scale(0.25) causal kv_len(%n) : tensor<1x16xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<1x16xf32>
  return %0 : tensor<1x16xf32>
}
