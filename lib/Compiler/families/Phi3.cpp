//===- Phi3.cpp - model_type "phi3" ---------------------------------------===//
//
// Phi-3 (modeling_phi3.py): LLaMA with q|k|v in one qkv_proj weight and
// gate|up in one gate_up_proj, RoPE on the first partial_rotary_factor of
// each head, and an optional sliding window on every layer. Its long-context
// RoPE is longrope (Phi-3.5-mini, Phi-4-mini): short and long factor tables,
// the long one for a call past original_max_position_embeddings.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readPhi3(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"phi3"};
  defaults.maxPositions = 4096;
  defaults.epsilon = 1e-5;
  defaults.partialRotary = true;
  ModelConfig config = readLlamaStyle(reader, defaults);
  config.attention.qkv = QkvStorage::Fused;
  config.mlp.fusedGateUp = true;
  readSlidingWindow(reader, config, /*fallback=*/std::nullopt);

  // Phi3Config accepts no other scaled RoPE.
  RopeScalingKind scaling = config.positions.scaling.kind;
  if (scaling != RopeScalingKind::None && scaling != RopeScalingKind::LongRope)
    reader.fail("key 'rope_scaling': phi3 scales RoPE only with longrope");
  WeightNames &n = config.names;
  n.qkv = "self_attn.qkv_proj.";
  n.gateUp = "mlp.gate_up_proj.";
  return config;
}
