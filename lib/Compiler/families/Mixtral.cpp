//===- Mixtral.cpp - model_type "mixtral" ---------------------------------===//
//
// Mixtral (modeling_mixtral.py): Mistral's attention (a sliding window when
// sliding_window is set, none by default) with a mixture of experts in
// every layer: the router (block_sparse_moe.gate) takes a softmax over all
// num_local_experts, then the top num_experts_per_tok, always renormalized;
// each expert (block_sparse_moe.experts.{e}) is a SwiGLU MLP of
// intermediate_size with w1 the gate, w3 the up and w2 the down projection.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readMixtral(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"mixtral"};
  defaults.kvHeads = 8;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 4096 * 32;
  defaults.epsilon = 1e-5;
  defaults.theta = 1e6;
  ModelConfig config = readLlamaStyle(reader, defaults);
  readSlidingWindow(reader, config, /*fallback=*/std::nullopt);
  // transformers v5 also reads num_experts (an attribute_map alias).
  const char *expertsKey = !reader.has("num_local_experts") && reader.has("num_experts")
                               ? "num_experts"
                               : "num_local_experts";
  readMixtureOfExperts(reader, config, expertsKey, "intermediate_size",
                       /*defaultExperts=*/8, /*defaultTopK=*/2,
                       /*defaultFfn=*/14336);
  config.moe.normalize = true;

  WeightNames &n = config.names;
  n.router = "block_sparse_moe.gate.";
  n.expert = "block_sparse_moe.experts.{}.";
  n.expertGate = "w1.";
  n.expertUp = "w3.";
  n.expertDown = "w2.";
  // transformers 5 saves the block as mlp: mlp.gate, mlp.experts.*_proj.
  n.stackedExperts = "mlp.experts.";
  n.stackedRouter = "mlp.gate.";
  return config;
}
