func.func @gemm(%h: tensor<?x64xf32>, %w: tensor<2x64x32xf32>, %x: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.gemm none ins(%h, %w : tensor<?x64xf32>, tensor<2x64x32xf32>) residual(%x : tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
