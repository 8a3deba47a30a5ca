//===- Qwen3Moe.cpp - model_type "qwen3_moe" ------------------------------===//
//
// Qwen3-MoE (modeling_qwen3_moe.py): Qwen3's attention (qk-norm, head_dim,
// attention_bias) with a window on every layer when use_sliding_window
// (Qwen3MoeAttention reads neither max_window_layers nor layer_types, unlike
// Qwen3's), and a mixture of experts in layer i unless i is
// in mlp_only_layers or (i + 1) is not a multiple of decoder_sparse_step;
// those layers keep a dense MLP of intermediate_size. The router
// (mlp.gate) takes a softmax over all num_experts, then the top
// num_experts_per_tok, renormalized when norm_topk_prob; each expert
// (mlp.experts.{e}) is a SwiGLU MLP of moe_intermediate_size.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::readQwenExperts(ConfigReader &reader, ModelConfig &config,
                                 int64_t defaultExperts, int64_t defaultTopK,
                                 int64_t defaultFfn) {
  // num_experts 0: every layer dense, as the decoder layers build it.
  if (reader.entries().get("num_experts") &&
      reader.nonNegative("num_experts", defaultExperts, kMaxExperts) == 0)
    return;
  readMixtureOfExperts(reader, config, "num_experts", "moe_intermediate_size",
                       defaultExperts, defaultTopK, defaultFfn);
  MoeSpec &moe = config.moe;
  moe.normalize = reader.boolean("norm_topk_prob", false);
  WeightNames &n = config.names;
  n.router = "mlp.gate.";
  n.expert = "mlp.experts.{}.";
  n.expertGate = "gate_proj.";
  n.expertUp = "up_proj.";
  n.expertDown = "down_proj.";
  n.stackedExperts = "mlp.experts.";
  int64_t step = reader.positive("decoder_sparse_step", 1, kMaxLayers);
  // The decoder layers only ask whether a layer is in the list: entries
  // that are no layer change nothing (a note says so).
  std::vector<int64_t> mlpOnly;
  if (const JsonValue *list = reader.entries().get("mlp_only_layers");
      list && !list->getAsNull()) {
    const llvm::json::Array *array = list->getAsArray();
    for (size_t i = 0; array && i < array->size(); ++i) {
      std::optional<int64_t> layer = (*array)[i].getAsInteger();
      if (!layer || (*array)[i].kind() == JsonValue::Boolean) {
        reader.fail("key 'mlp_only_layers' entry " + llvm::Twine(i) +
                    " must be a layer index, got " +
                    ConfigReader::render((*array)[i]));
        break;
      }
      if (*layer < 0 || *layer >= config.numLayers)
        config.notes.push_back("mlp_only_layers entry " + std::to_string(*layer) +
                               " is no layer of the " +
                               std::to_string(config.numLayers) +
                               " and changes nothing");
      mlpOnly.push_back(*layer);
    }
    if (!array)
      reader.fail("key 'mlp_only_layers' must be a list of layer indices, got " +
                  ConfigReader::render(*list));
  }
  for (int64_t layer = 0; layer < config.numLayers; ++layer)
    if (llvm::is_contained(mlpOnly, layer) || (layer + 1) % step != 0)
      moe.denseLayers.push_back(layer);
  if (static_cast<int64_t>(moe.denseLayers.size()) == config.numLayers)
    moe = MoeSpec();
}

ModelConfig mlir::attn::readQwen3Moe(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"qwen3_moe"};
  defaults.kvHeads = 4;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 32768;
  ModelConfig config = readLlamaStyle(reader, defaults);
  readQwen3Attention(reader, config);
  if (reader.boolean("use_sliding_window", false)) {
    int64_t window = reader.positive("sliding_window", 4096, kMaxPositions);
    config.attention.windows.assign(config.numLayers, window);
    for (const char *key : {"max_window_layers", "layer_types"})
      if (reader.has(key))
        config.notes.push_back(std::string("qwen3_moe slides every layer when "
                                           "use_sliding_window is set, as "
                                           "transformers does: '") +
                               key + "' is not used");
  }

  readQwenExperts(reader, config, /*defaultExperts=*/128, /*defaultTopK=*/8,
                  /*defaultFfn=*/768);
  return config;
}
