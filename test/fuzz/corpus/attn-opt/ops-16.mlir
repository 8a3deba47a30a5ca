func.func @activations(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.gelu %x tanh : tensor<?x8xf32>
  %1 = attn.gelu %0 erf : tensor<?x8xf32>
  %2 = attn.silu %1 : tensor<?x8xf32>
  %3 = attn.swiglu %2, %y : tensor<?x8xf32>
  %4 = attn.softmax %3 : tensor<?x8xf32>
  return %4 : tensor<?x8xf32>
}
