func.func @embedding(%table: tensor<1000x64xf32>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = attn.embedding %table[%ids] : tensor<1000x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
// Gemma and XGLM scale token embeddings by sqrt(width): sqrt(64) = 8.
func.func @embedding_scaled(%table: tensor<1000x64xf32>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = attn.embedding %table[%ids] scale(8.0) : tensor<1000x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
