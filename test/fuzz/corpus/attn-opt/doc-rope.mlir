// Rotary embedding of 4 heads of 16 (Hugging Face pairing) and of 2 heads
// (Meta's interleaved pairing), starting at position %pos.
func.func @rope(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %pos: index) -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  %0 = attn.rope %q offset(%pos) head_dim(16) theta(1.0e+04) rotate_half : tensor<?x64xf32>
  %1 = attn.rope %k offset(%pos) head_dim(16) theta(1.0e+04) interleaved : tensor<?x32xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x32xf32>
}
