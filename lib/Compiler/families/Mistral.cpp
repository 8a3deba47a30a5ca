//===- Mistral.cpp - model_type "mistral" ---------------------------------===//
//
// Mistral (modeling_mistral.py): LLaMA with a sliding window on every layer
// (sliding_window, 4096 unless null) and a head_dim that may differ from
// hidden_size / heads. Its projections have no biases whatever the config
// says.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readMistral(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"mistral"};
  defaults.kvHeads = 8;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.maxPositions = 4096 * 32;
  ModelConfig config = readLlamaStyle(reader, defaults);
  readSlidingWindow(reader, config, /*fallback=*/4096);
  return config;
}
