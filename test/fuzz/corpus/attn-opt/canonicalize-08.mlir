func.func @negative_attention_dynamic_keys(%q: tensor<1x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x8xf32>) -> tensor<1x8xf32> {
  %n = arith.constant 5 : index
  %0 = attn.attention %q, %k, %v heads(2) kv_len(%n) : tensor<1x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}
