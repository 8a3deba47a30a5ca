func.func @gemm_memref(%h: memref<4x64xf32>, %w: memref<2x64x32xf32>, %init: memref<4x64xf32>) {
  attn.gemm gelu_tanh ins(%h, %w : memref<4x64xf32>, memref<2x64x32xf32>) outs(%init : memref<4x64xf32>)
  return
}
