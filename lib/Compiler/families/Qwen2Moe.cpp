//===- Qwen2Moe.cpp - model_type "qwen2_moe" ------------------------------===//
//
// Qwen2-MoE (modeling_qwen2_moe.py; Qwen1.5-MoE-A2.7B): Qwen2's attention
// (q, k and v biases when qkv_bias, as by default; o never), windows with
// use_sliding_window on the layers layer_types names (by default the even
// layers below max_window_layers), and a mixture of experts in layer i
// unless i is in mlp_only_layers or (i + 1) is not a multiple of
// decoder_sparse_step. The router (mlp.gate) and experts (mlp.experts.{e},
// SwiGLU of moe_intermediate_size) are Qwen3-MoE's; beside them a shared
// expert (mlp.shared_expert, SwiGLU of shared_expert_intermediate_size)
// runs on every token, scaled by sigmoid(x . mlp.shared_expert_gate) and
// added to the routed sum.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readQwen2Moe(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"qwen2_moe"};
  defaults.kvHeads = 16;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 32768;
  ModelConfig config = readLlamaStyle(reader, defaults);
  config.attention.qkvBias = reader.boolean("qkv_bias", true);
  readQwenSlidingWindows(reader, config, /*alternating=*/true);

  readQwenExperts(reader, config, /*defaultExperts=*/60, /*defaultTopK=*/4,
                  /*defaultFfn=*/1408);
  MoeSpec &moe = config.moe;
  if (moe.numExperts == 0)
    return config;
  moe.sharedFfn =
      reader.positive("shared_expert_intermediate_size", 5632, 4 * kMaxWidth);
  moe.sharedGate = true;
  config.names.sharedExpert = "mlp.shared_expert.";
  config.names.sharedExpertGate = "mlp.shared_expert_gate.";
  return config;
}
