func.func @generic_wrong_segment_sizes(%q: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = "attn.attention"(%q, %q, %q) <{heads = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
