//===- GptNeox.cpp - model_type "gpt_neox" --------------------------------===//
//
// GPT-NeoX and Pythia (modeling_gpt_neox.py): pre-LayerNorm blocks whose
// attention and MLP both read the block input (use_parallel_residual, each
// through its own norm), RoPE (rotate-half) on the first rotary_pct of each
// head, q|k|v fused per head in query_key_value, a GELU MLP, biases on every
// projection, a separate embed_out head.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readGptNeox(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "gpt_neox";
  config.hiddenSize = reader.positive("hidden_size", std::nullopt, kMaxWidth);
  config.intermediateSize =
      reader.positive("intermediate_size", std::nullopt, 4 * kMaxWidth);
  config.numLayers =
      reader.positive("num_hidden_layers", std::nullopt, kMaxLayers);
  config.numHeads =
      reader.positive("num_attention_heads", std::nullopt, kMaxHeads);
  config.numKvHeads = config.numHeads;
  config.maxPositions =
      reader.positive("max_position_embeddings", 2048, kMaxPositions);
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.tieEmbeddings = reader.boolean("tie_word_embeddings", false);
  checkDivides(reader, "hidden_size", config.hiddenSize, "num_attention_heads",
               config.numHeads);
  if (config.numHeads > 0)
    config.headDim = config.hiddenSize / config.numHeads;

  config.norm.kind = NormKind::LayerNorm;
  config.norm.epsilon = reader.positiveNumber("layer_norm_eps", 1e-5);
  config.positions.kind = PositionKind::Rotary;
  config.positions.pairing = RopePairing::RotateHalf;
  config.positions.theta = reader.positiveNumber("rotary_emb_base", 10000.0);
  double pct = reader.positiveNumber("rotary_pct", 0.25);
  auto rotaryDims = static_cast<int64_t>(static_cast<double>(config.headDim) * pct);
  if (pct > 1.0 || rotaryDims <= 0 || rotaryDims % 2 != 0)
    reader.fail("key 'rotary_pct' (" + ConfigReader::render(JsonValue(pct)) +
                ") gives " + llvm::Twine(rotaryDims) + " rotary features of " +
                llvm::Twine(config.headDim) +
                "; need an even count in (0, head_dim]");
  else if (rotaryDims != config.headDim)
    config.positions.rotaryDims = rotaryDims;
  reader.unsupportedUnless(
      "rope_scaling", [](const JsonValue &) { return false; },
      "scaled RoPE on gpt_neox");

  config.attention.qkv = QkvStorage::FusedPerHead;
  bool bias = reader.boolean("attention_bias", true);
  config.attention.qkvBias = bias;
  config.attention.outputBias = bias;
  config.mlp.bias = true;
  readMlpActivation(reader, "hidden_act", "gelu", config.mlp);
  config.block.parallel = reader.boolean("use_parallel_residual", true);
  config.linearOutIn = true;

  WeightNames &n = config.names;
  n.tokenEmbedding = "gpt_neox.embed_in.";
  n.layer = "gpt_neox.layers.{}.";
  n.attentionNorm = "input_layernorm.";
  n.qkv = "attention.query_key_value.";
  n.output = "attention.dense.";
  n.mlpNorm = "post_attention_layernorm.";
  n.up = "mlp.dense_h_to_4h.";
  n.down = "mlp.dense_4h_to_h.";
  n.finalNorm = "gpt_neox.final_layer_norm.";
  n.head = "embed_out.";
  n.ignoredSuffixes = {".attention.bias", ".attention.masked_bias",
                       ".rotary_emb.inv_freq"};
  if (config.tieEmbeddings)
    n.ignoredSuffixes.push_back("embed_out.weight");
  return config;
}
