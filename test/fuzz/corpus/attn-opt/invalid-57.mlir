func.func @kv_cache_read_features(%cache: tensor<16x8xf32>, %len: index) -> tensor<?x4xf32> {
  %0 = attn.kv_cache_read %cache[%len] : tensor<16x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
