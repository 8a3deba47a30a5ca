func.func @embedding(%table: tensor<1000x64xf32>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = attn.embedding %table[%ids] : tensor<1000x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
