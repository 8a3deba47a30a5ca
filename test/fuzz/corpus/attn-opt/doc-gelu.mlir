func.func @gelu(%x: tensor<?x256xf32>) -> (tensor<?x256xf32>, tensor<?x256xf32>) {
  %0 = attn.gelu %x tanh : tensor<?x256xf32>
  %1 = attn.gelu %x erf : tensor<?x256xf32>
  return %0, %1 : tensor<?x256xf32>, tensor<?x256xf32>
}
