func.func @relu(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %0 = attn.relu %x : tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}
