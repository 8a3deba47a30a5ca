//===- SmolLM3.cpp - model_type "smollm3" ---------------------------------===//
//
// SmolLM3 (modeling_smollm3.py): LLaMA with NoPE layers, which do not rotate
// q and k at all: no_rope_layers holds one 0 (NoPE) or 1 (RoPE) per layer,
// by default every no_rope_layer_interval-th layer (4) is NoPE. rope_theta
// defaults to 2e6, the head is tied, attention_bias puts biases on q, k, v
// and o, mlp_bias on the MLP. With use_sliding_window, the NoPE layers
// slide sliding_window (unless layer_types says otherwise).
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readSmolLM3(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"smollm3"};
  defaults.kvHeads = 4;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 32768;
  defaults.tieEmbeddings = true;
  defaults.theta = 2000000.0;
  ModelConfig config = readLlamaStyle(reader, defaults);
  bool bias = reader.boolean("attention_bias", false);
  config.attention.qkvBias = bias;
  config.attention.outputBias = bias;
  config.mlp.bias = reader.boolean("mlp_bias", false);

  // Which layers rotate: the list, or the interval's pattern.
  int64_t layers = config.numLayers;
  std::vector<bool> rotates(layers);
  const JsonValue *list = reader.entries().get("no_rope_layers");
  if (list && !list->getAsNull()) {
    const llvm::json::Array *flags = list->getAsArray();
    if (!flags || static_cast<int64_t>(flags->size()) < layers)
      reader.fail("key 'no_rope_layers' must list a 0 (NoPE) or 1 (RoPE) for "
                  "each of the " + llvm::Twine(layers) + " layers");
    for (int64_t layer = 0; flags && layer < layers &&
                            layer < static_cast<int64_t>(flags->size());
         ++layer) {
      std::optional<int64_t> flag = (*flags)[layer].getAsInteger();
      if (!flag || (*flag != 0 && *flag != 1))
        reader.fail("key 'no_rope_layers' entry " + llvm::Twine(layer) +
                    " must be 0 (NoPE) or 1 (RoPE), got " +
                    ConfigReader::render((*flags)[layer]));
      rotates[layer] = flag == 1;
    }
  } else {
    int64_t interval = reader.positive("no_rope_layer_interval", 4, kMaxLayers);
    for (int64_t layer = 0; layer < layers; ++layer)
      rotates[layer] = (layer + 1) % interval != 0;
  }
  for (int64_t layer = 0; layer < layers; ++layer)
    if (!rotates[layer])
      config.positions.unrotatedLayers.push_back(layer);

  bool slide = reader.boolean("use_sliding_window", false) &&
               reader.has("sliding_window");
  std::vector<bool> sliding = readLayerTypes(
      reader, layers, [&](int64_t layer) { return slide && !rotates[layer]; });
  if (slide) {
    int64_t window = reader.positive("sliding_window", std::nullopt, kMaxPositions);
    config.attention.windows.assign(layers, 0);
    for (int64_t layer = 0; layer < layers; ++layer)
      if (sliding[layer])
        config.attention.windows[layer] = window;
  }
  return config;
}
