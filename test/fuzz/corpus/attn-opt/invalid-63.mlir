func.func @softmax_unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  %0 = "attn.softmax"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
