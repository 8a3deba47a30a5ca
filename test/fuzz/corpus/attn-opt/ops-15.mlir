func.func @kv_cache(%new: tensor<?x8xf32>, %cache: tensor<16x8xf32>, %pos: index, %len: index) -> tensor<?x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xf32>
  %1 = attn.kv_cache_read %0[%len] : tensor<16x8xf32> -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}
