func.func @kv_cache_append_empty(%new: tensor<0x8xf32>, %cache: tensor<16x8xf32>, %pos: index) -> tensor<16x8xf32> {
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<0x8xf32> into tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}
