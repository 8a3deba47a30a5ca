func.func @kv_cache_append_dynamic_features(%new: tensor<1x8xf32>, %cache: tensor<16x?xf32>, %pos: index) -> tensor<16x?xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<1x8xf32> into tensor<16x?xf32>
  return %0 : tensor<16x?xf32>
}
