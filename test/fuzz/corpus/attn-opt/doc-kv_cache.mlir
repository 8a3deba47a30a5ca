// New keys join a cache the caller owns (updated in place through the memref)
// and the valid prefix is read back.
func.func @kv_cache(%new: tensor<?x32xf32>, %cache_buffer: memref<128x32xf32>, %pos: index) -> tensor<?x32xf32> {
  %cache = bufferization.to_tensor %cache_buffer restrict writable : memref<128x32xf32> to tensor<128x32xf32>
  %0 = attn.kv_cache_append %new into %cache[%pos] : tensor<?x32xf32> into tensor<128x32xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %new, %c0 : tensor<?x32xf32>
  %len = arith.addi %pos, %n : index
  %1 = attn.kv_cache_read %0[%len] : tensor<128x32xf32> -> tensor<?x32xf32>
  bufferization.materialize_in_destination %0 in restrict writable %cache_buffer : (tensor<128x32xf32>, memref<128x32xf32>) -> ()
  return %1 : tensor<?x32xf32>
}
