// Rotary embedding of 4 heads of 16 (Hugging Face pairing) and of 2 heads
// (Meta's interleaved pairing), starting at position %pos; then the first 8
// features of each head only (GPT-NeoX, GPT-J), a resolved scaling (an f64
// table of inverse frequencies and yarn's attention factor) and dynamic NTK.
func.func @rope(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %pos: index) -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  %0 = attn.rope %q offset(%pos) head_dim(16) theta(1.0e+04) rotate_half : tensor<?x64xf32>
  %1 = attn.rope %k offset(%pos) head_dim(16) theta(1.0e+04) interleaved : tensor<?x32xf32>
  return %0, %1 : tensor<?x64xf32>, tensor<?x32xf32>
}

func.func @rope_scaled(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %pos: index) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x64xf32>) {
  %0 = attn.rope %q offset(%pos) head_dim(16) rotary_dims(8) theta(1.0e+04) rotate_half : tensor<?x64xf32>
  %1 = attn.rope %k offset(%pos) head_dim(16) rotary_dims(8) frequencies(dense<[1.0, 0.1, 0.0025, 0.00025]> : tensor<4xf64>) attention_factor(1.1386294361119891) interleaved : tensor<?x32xf32>
  %2 = attn.rope %q offset(%pos) head_dim(16) theta(1.0e+04) dynamic_ntk(factor = 2.0, max_positions = 2048) rotate_half : tensor<?x64xf32>
  return %0, %1, %2 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x64xf32>
}
