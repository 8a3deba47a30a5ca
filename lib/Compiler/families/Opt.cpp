//===- Opt.cpp - model_type "opt" -----------------------------------------===//
//
// OPT (modeling_opt.py): learned positions whose table row is position + 2,
// LayerNorm blocks before the sublayers (or after the residual add with
// do_layer_norm_before false, opt-350m, which also drops the final norm),
// separate q/k/v/out projections and a ReLU MLP, biases throughout
// (enable_bias), the head tied to the token embedding.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readOpt(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "opt";
  config.hiddenSize = reader.positive("hidden_size", std::nullopt, kMaxWidth);
  config.numLayers =
      reader.positive("num_hidden_layers", std::nullopt, kMaxLayers);
  config.numHeads =
      reader.positive("num_attention_heads", std::nullopt, kMaxHeads);
  config.numKvHeads = config.numHeads;
  config.intermediateSize =
      reader.positive("ffn_dim", std::nullopt, 4 * kMaxWidth);
  config.maxPositions =
      reader.positive("max_position_embeddings", 2048, kMaxPositions);
  config.positionsBounded = true;
  config.maxPositionsKey = "max_position_embeddings";
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.tieEmbeddings = reader.boolean("tie_word_embeddings", true);
  checkDivides(reader, "hidden_size", config.hiddenSize, "num_attention_heads",
               config.numHeads);
  if (config.numHeads > 0)
    config.headDim = config.hiddenSize / config.numHeads;
  int64_t projected = reader.positive("word_embed_proj_dim", config.hiddenSize,
                                      kMaxWidth);
  if (projected != config.hiddenSize)
    reader.fail("key 'word_embed_proj_dim' is not supported: embeddings "
                "projected in and out of the model width (project_in, "
                "project_out) (got " +
                llvm::Twine(projected) + ", hidden_size " +
                llvm::Twine(config.hiddenSize) + ")");
  reader.unsupportedUnless(
      "layer_norm_elementwise_affine",
      [](const JsonValue &v) { return v.getAsBoolean() == true; },
      "LayerNorms without gain and bias");

  // torch's nn.LayerNorm default; OPT's config has no epsilon key.
  config.norm.kind = NormKind::LayerNorm;
  config.norm.epsilon = 1e-5;
  config.positions.kind = PositionKind::Learned;
  config.positions.offset = 2;
  config.block.preNorm = reader.boolean("do_layer_norm_before", true);
  config.block.finalNorm = config.block.preNorm &&
                           !reader.boolean("_remove_final_layer_norm", false);
  bool bias = reader.boolean("enable_bias", true);
  config.attention.qkvBias = bias;
  config.attention.outputBias = bias;
  config.mlp.bias = bias;
  readMlpActivation(reader, "activation_function", "relu", config.mlp);
  config.linearOutIn = true;

  // Hub checkpoints are saved from OPTModel (decoder.*) or OPTForCausalLM
  // (model.decoder.*).
  WeightNames &n = config.names;
  n.tokenEmbedding = "decoder.embed_tokens.";
  n.positionEmbedding = "decoder.embed_positions.";
  n.layer = "decoder.layers.{}.";
  setFairseqLayerNames(n);
  n.finalNorm = "decoder.final_layer_norm.";
  n.head = "lm_head.";
  n.prefixes = {"model."};
  if (config.tieEmbeddings)
    n.ignoredSuffixes.push_back("lm_head.weight");
  return config;
}
