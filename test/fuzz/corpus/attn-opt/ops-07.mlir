func.func @residual_add(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.residual_add %a, %b : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
