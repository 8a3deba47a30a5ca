func.func @rms_norm(%x: tensor<?x64xf32>, %g: tensor<64xf32>) -> tensor<?x64xf32> {
  %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<?x64xf32>, tensor<64xf32>
  return %0 : tensor<?x64xf32>
}
// Gemma's norm scales by 1 + w.
func.func @rms_norm_gemma(%x: tensor<?x64xf32>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  %0 = attn.rms_norm %x, %w epsilon(1.0e-06) gain_offset(1.0) : tensor<?x64xf32>, tensor<64xf32>
  return %0 : tensor<?x64xf32>
}
