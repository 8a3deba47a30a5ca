// One decode step: a query against the valid prefix of a static cache, with
// an ALiBi-style additive bias.
func.func @attention_decode(%q: tensor<1x64xf32>, %k: tensor<256x64xf32>, %v: tensor<256x64xf32>,
                            %bias: tensor<4x1x256xf32>, %len: index) -> tensor<1x64xf32> {
  %0 = attn.attention %q, %k, %v heads(4) causal bias(%bias : tensor<4x1x256xf32>) kv_len(%len)
      : tensor<1x64xf32>, tensor<256x64xf32>, tensor<256x64xf32> -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}
