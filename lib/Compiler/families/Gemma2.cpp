//===- Gemma2.cpp - model_type "gemma2" -----------------------------------===//
//
// Gemma 2 (modeling_gemma2.py): Gemma with
// - "sandwich" norms: each sublayer's output is normed before its residual
//   add (post_attention_layernorm, post_feedforward_layernorm), the MLP's
//   input by pre_feedforward_layernorm;
// - scores scaled by query_pre_attn_scalar^-1/2 (256), not head_dim's, and
//   capped at c tanh(s / c) (attn_logit_softcapping, 50; null: none);
// - the logits capped the same way (final_logit_softcapping, 30);
// - a sliding window (sliding_window, 4096) on the layers layer_types calls
//   "sliding_attention", by default the even ones (0, 2, ...);
// - its activation under hidden_activation (gelu_pytorch_tanh).
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

LlamaStyleDefaults mlir::attn::gemma2StyleDefaults(const char *family) {
  LlamaStyleDefaults defaults{family};
  defaults.kvHeads = 4;
  defaults.kvHeadsNullIsAllHeads = false;
  defaults.headDim = 256;
  defaults.maxPositions = 8192;
  defaults.tieEmbeddings = true;
  defaults.activation = "gelu_pytorch_tanh";
  defaults.activationKey = "hidden_activation";
  return defaults;
}

ModelConfig mlir::attn::readGemma2(ConfigReader &reader) {
  ModelConfig config = readLlamaStyle(reader, gemma2StyleDefaults("gemma2"));
  applyGemmaConventions(reader, config);
  readGemmaAttention(reader, config, /*everyNthFull=*/2, /*softcap=*/50.0);
  config.logitSoftcap = readSoftcap(reader, "final_logit_softcapping", 30.0);
  return config;
}

void mlir::attn::readGemmaAttention(ConfigReader &reader, ModelConfig &config,
                                    int64_t everyNthFull,
                                    std::optional<double> softcap) {
  // self.scaling = query_pre_attn_scalar ** -0.5, in Python doubles.
  double scalar = reader.positiveNumber("query_pre_attn_scalar", 256.0);
  config.attention.scale = 1.0 / std::sqrt(scalar);
  if (softcap)
    config.attention.softcap =
        readSoftcap(reader, "attn_logit_softcapping", *softcap);
  // Layer i slides unless (i + 1) is a multiple of everyNthFull.
  readLayerTypeWindows(
      reader, config,
      [&](int64_t layer) { return (layer + 1) % everyNthFull != 0; }, 4096);

  config.block.outputNorms = true;
  WeightNames &n = config.names;
  n.mlpNorm = "pre_feedforward_layernorm.";
  n.attentionOutputNorm = "post_attention_layernorm.";
  n.mlpOutputNorm = "post_feedforward_layernorm.";
}
