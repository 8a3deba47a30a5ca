//===- AttnEnums.td - attn dialect enums -----------------------------------===//

#ifndef ATTN_ENUMS_TD
#define ATTN_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// How rope pairs the features of one head for rotation.
def Attn_RopePairing : I32EnumAttr<"RopePairing", "feature pairing of a rotary embedding", [
  // (x[i], x[i + d/2]): Hugging Face LLaMA / GPT-NeoX ("rotate_half").
  I32EnumAttrCase<"RotateHalf", 0, "rotate_half">,
  // (x[2i], x[2i + 1]): the original RoFormer / Meta LLaMA layout.
  I32EnumAttrCase<"Interleaved", 1, "interleaved">
]> {
  let cppNamespace = "::mlir::attn";
}

// Where a sinusoidal encoding puts the sine and cosine of each frequency.
def Attn_SinusoidalLayout : I32EnumAttr<"SinusoidalLayout", "layout of a sinusoidal encoding", [
  // sin at column 2i, cos at 2i + 1, frequency base^(-2i/D) ("Attention Is
  // All You Need").
  I32EnumAttrCase<"Interleaved", 0, "interleaved">,
  // sin in the first half, cos in the second, frequency base^(-k/(D/2 - 1))
  // (fairseq, tensor2tensor; XGLM).
  I32EnumAttrCase<"Halves", 1, "halves">
]> {
  let cppNamespace = "::mlir::attn";
}

// How a linear layer's weight matrix is stored.
def Attn_WeightLayout : I32EnumAttr<"WeightLayout", "storage layout of a linear weight", [
  // [out_features, in_features]: torch nn.Linear; y = x W^T.
  I32EnumAttrCase<"OutIn", 0, "out_in">,
  // [in_features, out_features]: GPT-2 Conv1D; y = x W.
  I32EnumAttrCase<"InOut", 1, "in_out">,
  // [ceil(out/NR), in_features, NR]: blocks of NR output features, each
  // stored k-major so a register tile streams one contiguous block; the
  // last block is zero-padded. What the CPU kernels read.
  I32EnumAttrCase<"Packed", 2, "packed">
]> {
  let cppNamespace = "::mlir::attn";
}

// Which formula gelu evaluates.
def Attn_GeluApproximation : I32EnumAttr<"GeluApproximation", "form of the GELU activation", [
  // 0.5 x (1 + erf(x / sqrt(2))): the exact form (BERT, torch default).
  I32EnumAttrCase<"Erf", 0, "erf">,
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's gelu_new.
  I32EnumAttrCase<"Tanh", 1, "tanh">
]> {
  let cppNamespace = "::mlir::attn";
}

// What attn.gemm applies to its accumulators before storing them.
def Attn_GemmEpilogue : I32EnumAttr<"GemmEpilogue", "fused epilogue of a gemm", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">,
  I32EnumAttrCase<"GeluErf", 2, "gelu_erf">,
  I32EnumAttrCase<"Silu", 3, "silu">,
  // silu(x W1) * (x W2): the gate and up projections of a LLaMA MLP.
  I32EnumAttrCase<"Swiglu", 4, "swiglu">,
  I32EnumAttrCase<"Relu", 5, "relu">,
  // gelu(x W1) * (x W2): Gemma's gate and up projections.
  I32EnumAttrCase<"GegluTanh", 6, "geglu_tanh">,
  I32EnumAttrCase<"GegluErf", 7, "geglu_erf">,
  // g' sigmoid(alpha g') (u' + 1) with g' = min(x W1, limit) and
  // u' = clamp(x W2, -limit, limit): gpt-oss's experts.
  I32EnumAttrCase<"ClampedSwiglu", 8, "clamped_swiglu">
]> {
  let cppNamespace = "::mlir::attn";
}

// How attn.moe_router turns a token's router logits into expert weights.
def Attn_MoeScoring : I32EnumAttr<"MoeScoring", "scoring of a mixture-of-experts router", [
  // softmax over every expert, then the top k probabilities (Mixtral,
  // Qwen3-MoE; optionally renormalized to sum to 1).
  I32EnumAttrCase<"SoftmaxTopK", 0, "softmax_top_k">,
  // the top k logits, then a softmax over those k (gpt-oss).
  I32EnumAttrCase<"TopKSoftmax", 1, "top_k_softmax">
]> {
  let cppNamespace = "::mlir::attn";
}

// The gated activation of each expert's MLP in attn.moe_experts.
def Attn_MoeActivation : I32EnumAttr<"MoeActivation", "activation of a mixture-of-experts MLP", [
  // silu(gate) * up (Mixtral, Qwen3-MoE).
  I32EnumAttrCase<"Swiglu", 0, "swiglu">,
  // gpt-oss: g = min(gate, limit), u = clamp(up, -limit, limit),
  // g * sigmoid(alpha * g) * (u + 1).
  I32EnumAttrCase<"ClampedSwiglu", 1, "clamped_swiglu">
]> {
  let cppNamespace = "::mlir::attn";
}

#endif // ATTN_ENUMS_TD
