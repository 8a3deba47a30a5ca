func.func @embedding_rows_mismatch(%table: tensor<100x8xf32>, %ids: tensor<3xi32>) -> tensor<4x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<3xi32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
