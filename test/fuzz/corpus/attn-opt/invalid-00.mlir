func.func @embedding_ids_float(%table: tensor<100x8xf32>, %ids: tensor<3xf32>) -> tensor<3x8xf32> {
  %0 = "attn.embedding"(%table, %ids) : (tensor<100x8xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
