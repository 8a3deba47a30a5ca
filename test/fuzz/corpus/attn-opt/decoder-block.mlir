// One GPT-2 style decoder block in the attn dialect (hidden 64, 4 heads of
// 16, MLP 256), run over a prompt of any length: the sequence dimension is
// dynamic, weights are static; keys and values go through the KV cache.
func.func @gpt2_block(%x: tensor<?x64xf32>,
                      %ln1_g: tensor<64xf32>, %ln1_b: tensor<64xf32>,
                      %w_qkv: tensor<64x192xf32>, %b_qkv: tensor<192xf32>,
                      %w_o: tensor<64x64xf32>, %b_o: tensor<64xf32>,
                      %ln2_g: tensor<64xf32>, %ln2_b: tensor<64xf32>,
                      %w_fc: tensor<64x256xf32>, %b_fc: tensor<256xf32>,
                      %w_proj: tensor<256x64xf32>, %b_proj: tensor<64xf32>,
                      %k_cache: tensor<128x64xf32>, %v_cache: tensor<128x64xf32>,
                      %pos: index)
    -> (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>

  // Attention sublayer: pre-norm, fused QKV projection (Conv1D layout).
  %h = attn.layer_norm %x, %ln1_g, %ln1_b epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %qkv = attn.linear %h, %w_qkv, %b_qkv layout(in_out)
      : tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32> -> tensor<?x192xf32>
  %q = tensor.extract_slice %qkv[0, 0] [%n, 64] [1, 1] : tensor<?x192xf32> to tensor<?x64xf32>
  %k = tensor.extract_slice %qkv[0, 64] [%n, 64] [1, 1] : tensor<?x192xf32> to tensor<?x64xf32>
  %v = tensor.extract_slice %qkv[0, 128] [%n, 64] [1, 1] : tensor<?x192xf32> to tensor<?x64xf32>

  // The new keys and values join the cache; attention reads its valid prefix.
  %kc = attn.kv_cache_append %k into %k_cache[%pos] : tensor<?x64xf32> into tensor<128x64xf32>
  %vc = attn.kv_cache_append %v into %v_cache[%pos] : tensor<?x64xf32> into tensor<128x64xf32>
  %len = arith.addi %pos, %n : index
  %keys = attn.kv_cache_read %kc[%len] : tensor<128x64xf32> -> tensor<?x64xf32>
  %values = attn.kv_cache_read %vc[%len] : tensor<128x64xf32> -> tensor<?x64xf32>
  %a = attn.attention %q, %keys, %values heads(4) causal
      : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %o = attn.linear %a, %w_o, %b_o layout(in_out)
      : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %x1 = attn.residual_add %x, %o : tensor<?x64xf32>

  // MLP sublayer.
  %h2 = attn.layer_norm %x1, %ln2_g, %ln2_b epsilon(1.0e-05) : tensor<?x64xf32>, tensor<64xf32>
  %f = attn.linear %h2, %w_fc, %b_fc layout(in_out)
      : tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  %g = attn.gelu %f tanh : tensor<?x256xf32>
  %p = attn.linear %g, %w_proj, %b_proj layout(in_out)
      : tensor<?x256xf32>, tensor<256x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %x2 = attn.residual_add %x1, %p : tensor<?x64xf32>
  return %x2, %kc, %vc : tensor<?x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>
}
