// A GPT-2 Conv1D projection with bias ([in, out] weight) and an nn.Linear one.
func.func @linear(%x: tensor<?x64xf32>, %w: tensor<64x192xf32>, %b: tensor<192xf32>,
                  %w2: tensor<64x192xf32>) -> tensor<?x64xf32> {
  %0 = attn.linear %x, %w, %b layout(in_out)
      : tensor<?x64xf32>, tensor<64x192xf32>, tensor<192xf32> -> tensor<?x192xf32>
  %1 = attn.linear %0, %w2 layout(out_in) : tensor<?x192xf32>, tensor<64x192xf32> -> tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}
