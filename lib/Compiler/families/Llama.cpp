//===- Llama.cpp - model_type "llama" -------------------------------------===//
//
// LLaMA (modeling_llama.py): RoPE (rotate-half pairing, any rope_scaling but
// longrope), pre-RMSNorm blocks, grouped-query attention with separate
// nn.Linear q/k/v/o projections, a SwiGLU MLP, a final RMSNorm, an output
// projection tied or not.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readLlama(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "llama";
  config.hiddenSize = reader.positive("hidden_size", std::nullopt, kMaxWidth);
  config.intermediateSize =
      reader.positive("intermediate_size", std::nullopt, 4 * kMaxWidth);
  config.numLayers =
      reader.positive("num_hidden_layers", std::nullopt, kMaxLayers);
  config.numHeads =
      reader.positive("num_attention_heads", std::nullopt, kMaxHeads);
  config.numKvHeads =
      reader.positive("num_key_value_heads", config.numHeads, kMaxHeads);
  config.maxPositions =
      reader.positive("max_position_embeddings", 2048, kMaxPositions);
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.tieEmbeddings = reader.boolean("tie_word_embeddings", false);

  if (reader.has("head_dim")) {
    config.headDim = reader.positive("head_dim", std::nullopt, kMaxWidth);
  } else if (config.numHeads > 0 && config.hiddenSize % config.numHeads != 0) {
    reader.fail("num_attention_heads (" + llvm::Twine(config.numHeads) +
                ") does not divide hidden_size (" +
                llvm::Twine(config.hiddenSize) + ") and no head_dim is given");
  } else if (config.numHeads > 0) {
    config.headDim = config.hiddenSize / config.numHeads;
  }
  checkDivides(reader, "num_attention_heads", config.numHeads,
               "num_key_value_heads", config.numKvHeads);
  if (config.headDim % 2 != 0)
    reader.fail("head_dim (" + llvm::Twine(config.headDim) +
                ") must be even for rotary embeddings");

  config.norm.kind = NormKind::RmsNorm;
  config.norm.epsilon = reader.positiveNumber("rms_norm_eps", 1e-6);
  config.positions.kind = PositionKind::Rotary;
  config.positions.pairing = RopePairing::RotateHalf;
  readRopeParameters(reader, config);
  if (config.positions.rotaryDims != 0)
    reader.fail("partial_rotary_factor: llama rotates the whole head "
                "(apply_rotary_pos_emb has no pass-through part)");
  config.attention.qkv = QkvStorage::Separate;
  config.mlp.kind = MlpKind::SwiGlu;
  config.linearOutIn = true;

  std::string activation = reader.string("hidden_act", "silu");
  if (activation != "silu")
    reader.fail("key 'hidden_act' is " + ConfigReader::quote(activation) +
                "; supported: silu");
  reader.unsupportedUnless("attention_bias", isFalse,
                           "biases on the attention projections");
  reader.unsupportedUnless("mlp_bias", isFalse,
                           "biases on the MLP projections");

  WeightNames &n = config.names;
  n.tokenEmbedding = "model.embed_tokens.";
  n.layer = "model.layers.{}.";
  n.attentionNorm = "input_layernorm.";
  n.query = "self_attn.q_proj.";
  n.key = "self_attn.k_proj.";
  n.value = "self_attn.v_proj.";
  n.output = "self_attn.o_proj.";
  n.mlpNorm = "post_attention_layernorm.";
  n.gate = "mlp.gate_proj.";
  n.up = "mlp.up_proj.";
  n.down = "mlp.down_proj.";
  n.finalNorm = "model.norm.";
  n.head = "lm_head.";
  n.ignoredSuffixes = {".rotary_emb.inv_freq"};
  if (config.tieEmbeddings)
    n.ignoredSuffixes.push_back("lm_head.weight");
  return config;
}
