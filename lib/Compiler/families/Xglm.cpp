//===- Xglm.cpp - model_type "xglm" ---------------------------------------===//
//
// XGLM (modeling_xglm.py): fairseq's sinusoidal positions (sines then
// cosines, encoded at position + 2), token embeddings times sqrt(d_model)
// (scale_embedding), pre-LayerNorm blocks with separate q/k/v/out
// projections and a GELU MLP, biases throughout, a final LayerNorm, the head
// tied to the embedding.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readXglm(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "xglm";
  // XGLMConfig's attribute_map: the generic names are aliases.
  auto size = [&](llvm::StringRef key, llvm::StringRef alias, int64_t limit) {
    return reader.positive(reader.has(key) ? key : alias, std::nullopt, limit);
  };
  config.hiddenSize = size("d_model", "hidden_size", kMaxWidth);
  config.numLayers = size("num_layers", "num_hidden_layers", kMaxLayers);
  config.numHeads = size("attention_heads", "num_attention_heads", kMaxHeads);
  config.numKvHeads = config.numHeads;
  config.intermediateSize =
      reader.positive("ffn_dim", std::nullopt, 4 * kMaxWidth);
  config.maxPositions =
      reader.positive("max_position_embeddings", 2048, kMaxPositions);
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.tieEmbeddings = reader.boolean("tie_word_embeddings", true);
  checkDivides(reader, "d_model", config.hiddenSize, "attention_heads",
               config.numHeads);
  if (config.numHeads > 0)
    config.headDim = config.hiddenSize / config.numHeads;
  if (config.hiddenSize % 2 != 0 || (config.hiddenSize > 0 && config.hiddenSize < 4))
    reader.fail("d_model (" + llvm::Twine(config.hiddenSize) +
                ") must be even and at least 4 for sinusoidal positions");
  reader.unsupportedUnless("add_cross_attention", isFalse,
                           "cross-attention (decoder-only models only)");

  config.norm.kind = NormKind::LayerNorm;
  config.norm.epsilon = 1e-5;
  config.positions.kind = PositionKind::Sinusoidal;
  config.positions.sinusoidal = SinusoidalLayout::Halves;
  config.positions.offset = 2;
  config.positions.theta = 10000.0;
  if (reader.boolean("scale_embedding", true))
    config.embeddingScale =
        static_cast<float>(std::sqrt(static_cast<double>(config.hiddenSize)));
  config.attention.qkvBias = true;
  config.attention.outputBias = true;
  config.mlp.bias = true;
  readMlpActivation(reader, "activation_function", "gelu", config.mlp);
  config.linearOutIn = true;

  WeightNames &n = config.names;
  n.tokenEmbedding = "model.embed_tokens.";
  n.layer = "model.layers.{}.";
  setFairseqLayerNames(n);
  n.finalNorm = "model.layer_norm.";
  n.head = "lm_head.";
  n.ignoredSuffixes = {".embed_positions._float_tensor", ".embed_positions.weights"};
  if (config.tieEmbeddings)
    n.ignoredSuffixes.push_back("lm_head.weight");
  return config;
}
