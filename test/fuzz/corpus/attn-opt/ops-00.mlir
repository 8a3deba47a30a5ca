func.func @embedding_dynamic_seq(%table: tensor<100x8xf32>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = attn.embedding %table[%ids] : tensor<100x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
