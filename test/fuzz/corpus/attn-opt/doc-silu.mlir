func.func @silu(%x: tensor<?x172xf32>) -> tensor<?x172xf32> {
  %0 = attn.silu %x : tensor<?x172xf32>
  return %0 : tensor<?x172xf32>
}
