func.func @geglu(%gate: tensor<?x172xf32>, %up: tensor<?x172xf32>) -> tensor<?x172xf32> {
  %0 = attn.geglu %gate, %up tanh : tensor<?x172xf32>
  return %0 : tensor<?x172xf32>
}
