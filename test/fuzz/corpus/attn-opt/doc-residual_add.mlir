func.func @residual_add(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = attn.residual_add %x, %y : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
