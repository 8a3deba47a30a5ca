// Causal grouped-query attention over a prompt of any length: 4 query heads
// of 16 share 2 KV heads.
func.func @attention(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>) -> tensor<?x64xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal
      : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
