func.func @missing_heads(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = attn.attention %q, %q, %q causal : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
