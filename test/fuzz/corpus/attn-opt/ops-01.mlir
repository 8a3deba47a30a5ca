func.func @embedding_i64_static(%table: tensor<100x8xf32>, %ids: tensor<3xi64>) -> tensor<3x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<3xi64> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
