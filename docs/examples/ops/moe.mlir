// A Mixtral-style mixture-of-experts MLP: 8 experts, 2 per token, the
// chosen weights renormalized; each token runs only its two experts.
func.func @mixtral_moe(%x: tensor<?x64xf32>, %router: tensor<8x64xf32>,
                       %gate: tensor<8x96x64xf32>, %up: tensor<8x96x64xf32>,
                       %down: tensor<8x64x96xf32>) -> tensor<?x64xf32> {
  %w, %e = attn.moe_router %x, %router top_k(2) softmax_top_k normalize
      : tensor<?x64xf32>, tensor<8x64xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %y = attn.moe_experts %x, %w, %e, %gate, %up, %down swiglu
      : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x96x64xf32>,
        tensor<8x96x64xf32>, tensor<8x64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// gpt-oss: top-k of the biased logits, softmax over those k, and biased
// experts with the clamped GLU.
func.func @gpt_oss_moe(%x: tensor<?x64xf32>, %router: tensor<32x64xf32>, %rb: tensor<32xf32>,
                       %gate: tensor<32x48x64xf32>, %up: tensor<32x48x64xf32>,
                       %down: tensor<32x64x48xf32>, %gb: tensor<32x48xf32>,
                       %ub: tensor<32x48xf32>, %db: tensor<32x64xf32>) -> tensor<?x64xf32> {
  %w, %e = attn.moe_router %x, %router, %rb top_k(4) top_k_softmax
      : tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  %y = attn.moe_experts %x, %w, %e, %gate, %up, %down
      biases(%gb, %ub, %db : tensor<32x48xf32>, tensor<32x48xf32>, tensor<32x64xf32>)
      clamped_swiglu alpha(1.702) limit(7.0)
      : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<32x48x64xf32>,
        tensor<32x48x64xf32>, tensor<32x64x48xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Qwen2-MoE: 60 experts of 24, 4 per token, not renormalized, and a shared
// expert (its output %s, computed by ordinary ops) scaled by the sigmoid of
// its gate's logit %g.
func.func @qwen2_moe(%x: tensor<?x64xf32>, %router: tensor<60x64xf32>,
                     %gate: tensor<60x24x64xf32>, %up: tensor<60x24x64xf32>,
                     %down: tensor<60x64x24xf32>, %s: tensor<?x64xf32>,
                     %g: tensor<?x1xf32>) -> tensor<?x64xf32> {
  %w, %e = attn.moe_router %x, %router top_k(4) softmax_top_k
      : tensor<?x64xf32>, tensor<60x64xf32> -> tensor<?x4xf32>, tensor<?x4xi32>
  %y = attn.moe_experts %x, %w, %e, %gate, %up, %down
      shared(%s : tensor<?x64xf32>) shared_gate(%g : tensor<?x1xf32>) swiglu
      : tensor<?x64xf32>, tensor<?x4xf32>, tensor<?x4xi32>, tensor<60x24x64xf32>,
        tensor<60x24x64xf32>, tensor<60x64x24xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
