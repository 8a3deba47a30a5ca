//===- Gpt2.cpp - model_type "gpt2" ---------------------------------------===//
//
// GPT-2 (modeling_gpt2.py): learned positions, pre-LayerNorm blocks, one
// Conv1D [in, out] c_attn for q|k|v with biases, a GELU MLP with biases, a
// final LayerNorm, the output projection tied to the token embedding.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readGpt2(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "gpt2";
  readGpt2StyleSizes(reader, config, std::nullopt);

  config.norm.kind = NormKind::LayerNorm;
  config.norm.epsilon = reader.positiveNumber("layer_norm_epsilon", 1e-5);
  config.positions.kind = PositionKind::Learned;
  config.attention.qkv = QkvStorage::Fused;
  config.attention.qkvBias = true;
  config.attention.outputBias = true;
  config.mlp.bias = true;
  config.linearOutIn = false;
  config.tieEmbeddings = true;

  readMlpActivation(reader, "activation_function", "gelu_new", config.mlp);

  reader.unsupportedUnless("scale_attn_by_inverse_layer_idx", isFalse,
                           "per-layer attention scaling");
  reader.unsupportedUnless("add_cross_attention", isFalse,
                           "cross-attention (decoder-only models only)");
  reader.unsupportedUnless(
      "scale_attn_weights",
      [](const JsonValue &v) { return v.getAsBoolean() == true; },
      "unscaled attention scores");

  WeightNames &n = config.names;
  n.tokenEmbedding = "wte.";
  n.positionEmbedding = "wpe.";
  n.layer = "h.{}.";
  n.attentionNorm = "ln_1.";
  n.qkv = "attn.c_attn.";
  n.output = "attn.c_proj.";
  n.mlpNorm = "ln_2.";
  n.up = "mlp.c_fc.";
  n.down = "mlp.c_proj.";
  n.finalNorm = "ln_f.";
  n.prefixes = {"transformer."};
  n.ignoredSuffixes = {".attn.bias", ".attn.masked_bias", "lm_head.weight"};
  return config;
}
