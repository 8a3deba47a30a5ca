func.func @gemm_swiglu(%h: tensor<4x64xf32>, %w: tensor<3x64x32xf32>, %w2: tensor<3x64x32xf32>, %b: tensor<96xf32>, %s: tensor<4xf32>, %init: tensor<4x96xf32>) -> tensor<4x96xf32> {
  %y = attn.gemm swiglu ins(%h, %w, %w2 : tensor<4x64xf32>, tensor<3x64x32xf32>, tensor<3x64x32xf32>) bias(%b : tensor<96xf32>) row_scale(%s : tensor<4xf32>) outs(%init : tensor<4x96xf32>) -> tensor<4x96xf32>
  return %y : tensor<4x96xf32>
}
