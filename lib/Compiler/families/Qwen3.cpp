//===- Qwen3.cpp - model_type "qwen3" -------------------------------------===//
//
// Qwen3 (modeling_qwen3.py): Qwen2 without the q/k/v biases (attention_bias,
// false by default, puts them on q, k, v and o) and with the qk-norm: an
// RMSNorm over each head of q and k (q_norm, k_norm: [head_dim] gains,
// rms_norm_eps) after the projection and before RoPE. head_dim is its own
// key (128 by default), not hidden_size / heads. Windows as Qwen2's.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readQwen3(ConfigReader &reader) {
  LlamaStyleDefaults defaults{"qwen3"};
  defaults.kvHeads = 32;
  defaults.kvHeadsNullIsAllHeads = true;
  defaults.headDim = 128;
  defaults.maxPositions = 32768;
  ModelConfig config = readLlamaStyle(reader, defaults);
  readQwen3Attention(reader, config);
  readQwenSlidingWindows(reader, config);
  return config;
}

void mlir::attn::readQwen3Attention(ConfigReader &reader, ModelConfig &config) {
  bool bias = reader.boolean("attention_bias", false);
  config.attention.qkvBias = bias;
  config.attention.outputBias = bias;
  config.attention.qkNorm = true;
  config.names.queryNorm = "self_attn.q_norm.";
  config.names.keyNorm = "self_attn.k_norm.";
}
