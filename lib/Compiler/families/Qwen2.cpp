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

void mlir::attn::readQwenSlidingWindows(ConfigReader &reader,
                                        ModelConfig &config, bool alternating) {
  // layer_types is read even where no window applies: a misspelled type
  // would otherwise pass unnoticed.
  int64_t maxWindowLayers =
      reader.nonNegative("max_window_layers", 28, kMaxLayers);
  std::vector<bool> sliding =
      readLayerTypes(reader, config.numLayers, [&](int64_t layer) {
        return alternating ? (layer + 1) % 2 != 0 && layer < maxWindowLayers
                           : layer >= maxWindowLayers;
      });
  if (!reader.boolean("use_sliding_window", false))
    return;
  int64_t window = reader.positive("sliding_window", 4096, kMaxPositions);
  std::vector<int64_t> &windows = config.attention.windows;
  windows.assign(config.numLayers, 0);
  for (int64_t layer = 0; layer < config.numLayers; ++layer)
    if (sliding[layer])
      windows[layer] = window;
}

ModelConfig mlir::attn::readQwen2(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"qwen2"};
  defaults.kvHeads = 32;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 32768;
  ModelConfig config = readLlamaStyle(reader, defaults);
  config.attention.qkvBias = true;

  readQwenSlidingWindows(reader, config);
  return config;
}
