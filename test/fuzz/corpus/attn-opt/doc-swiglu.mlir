func.func @swiglu(%gate: tensor<?x172xf32>, %up: tensor<?x172xf32>) -> tensor<?x172xf32> {
  %0 = attn.swiglu %gate, %up : tensor<?x172xf32>
  return %0 : tensor<?x172xf32>
}
