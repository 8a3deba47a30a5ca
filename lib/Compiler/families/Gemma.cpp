//===- Gemma.cpp - model_type "gemma", and what Gemma 2 and 3 share -------===//
//
// Gemma (modeling_gemma.py): LLaMA with a GeGLU MLP (hidden_act, the tanh
// GELU by default), RMSNorms that scale by 1 + w, token embeddings times
// float32(sqrt(hidden_size)), a head_dim of its own (256 by default) and
// the output projection tied to the token embedding.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::applyGemmaConventions(ConfigReader &reader,
                                       ModelConfig &config) {
  config.norm.gainOffset = 1.0;
  // torch.tensor(hidden_size ** 0.5, dtype=float32).
  config.embeddingScale =
      static_cast<float>(std::sqrt(static_cast<double>(config.hiddenSize)));
  bool bias = reader.boolean("attention_bias", false);
  config.attention.qkvBias = bias;
  config.attention.outputBias = bias;
  reader.unsupportedUnless("use_bidirectional_attention", isFalse,
                           "bidirectional attention (decoder-only models only)");
}

ModelConfig mlir::attn::readGemma(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"gemma"};
  defaults.kvHeads = 16;
  defaults.headDim = 256;
  defaults.maxPositions = 8192;
  defaults.tieEmbeddings = true;
  defaults.activation = "gelu_pytorch_tanh";
  ModelConfig config = readLlamaStyle(reader, defaults);
  applyGemmaConventions(reader, config);
  return config;
}
