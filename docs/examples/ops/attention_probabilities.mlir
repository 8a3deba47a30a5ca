// The softmax weights of a prompt's grouped-query attention (6 query heads
// on 2 KV heads, head_dim 32), as attn-inspect compiles them.
func.func @attention_probabilities(%q: tensor<?x192xf32>, %k: tensor<?x64xf32>) -> tensor<6x?x?xf32> {
  %0 = attn.attention_probabilities %q, %k heads(6) kv_heads(2) causal : tensor<?x192xf32>, tensor<?x64xf32> -> tensor<6x?x?xf32>
  return %0 : tensor<6x?x?xf32>
}
