//===- Qwen2.cpp - model_type "qwen2" -------------------------------------===//
//
// Qwen2 (modeling_qwen2.py): LLaMA with biases on q, k and v (never on o),
// and a sliding window only when use_sliding_window, on the layers
// layer_types calls "sliding_attention" (by default those from
// max_window_layers on).
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readQwen2(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"qwen2"};
  defaults.kvHeads = 32;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 32768;
  ModelConfig config = readLlamaStyle(reader, defaults);
  config.attention.qkvBias = true;

  if (!reader.boolean("use_sliding_window", false))
    return config;
  int64_t window = reader.positive("sliding_window", 4096, kMaxPositions);
  int64_t firstWindowed =
      reader.nonNegative("max_window_layers", 28, kMaxLayers);
  std::vector<int64_t> &windows = config.attention.windows;
  windows.assign(config.numLayers, 0);
  std::optional<std::vector<std::string>> layerTypes =
      reader.stringList("layer_types");
  if (layerTypes && static_cast<int64_t>(layerTypes->size()) != config.numLayers)
    reader.fail("key 'layer_types' has " + llvm::Twine(layerTypes->size()) +
                " entries, expected num_hidden_layers (" +
                llvm::Twine(config.numLayers) + ")");
  for (int64_t layer = 0; layer < config.numLayers; ++layer) {
    bool sliding = layer >= firstWindowed;
    if (layerTypes && layer < static_cast<int64_t>(layerTypes->size())) {
      const std::string &type = (*layerTypes)[layer];
      if (type != "sliding_attention" && type != "full_attention")
        reader.fail("key 'layer_types' entry " + llvm::Twine(layer) + " is " +
                    ConfigReader::quote(type) +
                    "; supported: full_attention, sliding_attention");
      sliding = type == "sliding_attention";
    }
    if (sliding)
      windows[layer] = window;
  }
  return config;
}
