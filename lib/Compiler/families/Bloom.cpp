//===- Bloom.cpp - model_type "bloom" -------------------------------------===//
//
// BLOOM (modeling_bloom.py): ALiBi with Hugging Face's slopes (no position
// embedding, no position limit), a LayerNorm right after the token
// embedding, pre-LayerNorm blocks, q|k|v fused per head with biases, a
// 4 x hidden tanh-GELU MLP with biases, the head tied to the embedding.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

/// A size BLOOM's config accepts under two names (BloomConfig's
/// attribute_map); `preferred` wins when both are given and they differ
/// only if `preferredWins`, else the two must agree.
static int64_t aliased(ConfigReader &reader, llvm::StringRef preferred,
                       llvm::StringRef other, bool preferredWins,
                       int64_t limit) {
  if (!reader.has(preferred))
    return reader.positive(other, std::nullopt, limit);
  int64_t value = reader.positive(preferred, std::nullopt, limit);
  if (!preferredWins && reader.has(other)) {
    int64_t second = reader.positive(other, std::nullopt, limit);
    if (second != value)
      reader.fail("keys '" + preferred + "' (" + llvm::Twine(value) +
                  ") and '" + other + "' (" + llvm::Twine(second) +
                  ") disagree");
  }
  return value;
}

ModelConfig mlir::attn::readBloom(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "bloom";
  config.hiddenSize = aliased(reader, "n_embed", "hidden_size",
                              /*preferredWins=*/true, kMaxWidth);
  config.numLayers = aliased(reader, "n_layer", "num_hidden_layers",
                             /*preferredWins=*/false, kMaxLayers);
  config.numHeads = aliased(reader, "n_head", "num_attention_heads",
                            /*preferredWins=*/false, kMaxHeads);
  config.numKvHeads = config.numHeads;
  config.intermediateSize = 4 * config.hiddenSize;
  // ALiBi has no position limit; the default context is the compiler's.
  config.maxPositions = kMaxPositions;
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.tieEmbeddings = reader.boolean("tie_word_embeddings", true);
  checkDivides(reader, "hidden_size", config.hiddenSize, "n_head",
               config.numHeads);
  if (config.numHeads > 0)
    config.headDim = config.hiddenSize / config.numHeads;
  reader.unsupportedUnless("apply_residual_connection_post_layernorm", isFalse,
                           "residuals taken after the LayerNorms");

  config.norm.kind = NormKind::LayerNorm;
  config.norm.epsilon = reader.positiveNumber("layer_norm_epsilon", 1e-5);
  config.positions.kind = PositionKind::Alibi;
  config.embeddingNorm = true;
  config.attention.qkv = QkvStorage::FusedPerHead;
  config.attention.qkvBias = true;
  config.attention.outputBias = true;
  config.mlp.kind = MlpKind::Gelu;
  config.mlp.gelu = GeluApproximation::Tanh;
  config.mlp.bias = true;
  config.linearOutIn = true;

  // Hub checkpoints are saved from BloomModel (h.*) or BloomForCausalLM
  // (transformer.h.*).
  WeightNames &n = config.names;
  n.tokenEmbedding = "word_embeddings.";
  n.embeddingNorm = "word_embeddings_layernorm.";
  n.layer = "h.{}.";
  n.attentionNorm = "input_layernorm.";
  n.qkv = "self_attention.query_key_value.";
  n.output = "self_attention.dense.";
  n.mlpNorm = "post_attention_layernorm.";
  n.up = "mlp.dense_h_to_4h.";
  n.down = "mlp.dense_4h_to_h.";
  n.finalNorm = "ln_f.";
  n.head = "lm_head.";
  n.prefixes = {"transformer."};
  if (config.tieEmbeddings)
    n.ignoredSuffixes.push_back("lm_head.weight");
  return config;
}
