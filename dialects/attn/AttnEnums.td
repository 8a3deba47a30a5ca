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

// How a linear layer's weight matrix is stored.
def Attn_WeightLayout : I32EnumAttr<"WeightLayout", "storage layout of a linear weight", [
  // [out_features, in_features]: torch nn.Linear; y = x W^T.
  I32EnumAttrCase<"OutIn", 0, "out_in">,
  // [in_features, out_features]: GPT-2 Conv1D; y = x W.
  I32EnumAttrCase<"InOut", 1, "in_out">
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

#endif // ATTN_ENUMS_TD
