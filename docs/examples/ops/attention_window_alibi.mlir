// Mistral's sliding window (each query sees its 64 latest keys) and BLOOM's
// ALiBi (HF's slopes for 4 heads), both computed inside the flash kernel.
func.func @attention_window(%q: tensor<?x256xf32>, %k: tensor<?x128xf32>, %v: tensor<?x128xf32>) -> tensor<?x256xf32> {
  %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal window(64) : tensor<?x256xf32>, tensor<?x128xf32>, tensor<?x128xf32> -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}
func.func @attention_alibi(%q: tensor<?x256xf32>, %k: tensor<?x256xf32>, %v: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %0 = attn.attention %q, %k, %v heads(4) causal alibi([0.25, 0.0625, 0.015625, 0.00390625]) : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}
