func.func @negative_kv_cache_append_dynamic_rows(%new: tensor<?x8xf32>, %cache: tensor<16x8xf32>, %pos: index) -> tensor<16x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x8xf32> into tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}
