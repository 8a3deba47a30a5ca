//===- Gptj.cpp - model_type "gptj" ---------------------------------------===//
//
// GPT-J (modeling_gptj.py): one LayerNorm per block feeding attention and
// MLP in parallel, interleaved RoPE (rotate_every_two) on the first
// rotary_dim features of each head with base 10000, bias-free q/k/v/out
// projections, a GELU MLP with biases, an lm_head with a bias. Its sin/cos
// table ends at n_positions.
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"

using namespace mlir;
using namespace mlir::attn;

ModelConfig mlir::attn::readGptj(ConfigReader &reader) {
  ModelConfig config;
  config.architecture = "gptj";
  readGpt2StyleSizes(reader, config, 2048);
  config.tieEmbeddings = reader.boolean("tie_word_embeddings", false);

  config.norm.kind = NormKind::LayerNorm;
  config.norm.epsilon = reader.positiveNumber("layer_norm_epsilon", 1e-5);
  config.positions.kind = PositionKind::Rotary;
  config.positions.pairing = RopePairing::Interleaved;
  if (reader.isNull("rotary_dim"))
    reader.fail("key 'rotary_dim' must be an integer, got null");
  int64_t rotaryDims = reader.positive("rotary_dim", 64, kMaxWidth);
  if (rotaryDims % 2 != 0 || rotaryDims > config.headDim)
    reader.fail("key 'rotary_dim' (" + llvm::Twine(rotaryDims) +
                ") must be even and at most the head size (" +
                llvm::Twine(config.headDim) + ")");
  else if (rotaryDims != config.headDim)
    config.positions.rotaryDims = rotaryDims;

  config.attention.qkv = QkvStorage::Separate;
  config.mlp.bias = true;
  readMlpActivation(reader, "activation_function", "gelu_new", config.mlp);
  config.block.parallel = true;
  config.block.sharedNorm = true;
  config.headBias = true;
  config.linearOutIn = true;

  WeightNames &n = config.names;
  n.tokenEmbedding = "transformer.wte.";
  n.layer = "transformer.h.{}.";
  n.attentionNorm = "ln_1.";
  n.query = "attn.q_proj.";
  n.key = "attn.k_proj.";
  n.value = "attn.v_proj.";
  n.output = "attn.out_proj.";
  n.up = "mlp.fc_in.";
  n.down = "mlp.fc_out.";
  n.finalNorm = "transformer.ln_f.";
  n.head = "lm_head.";
  n.ignoredSuffixes = {".attn.bias", ".attn.masked_bias", ".attn.embed_positions"};
  if (config.tieEmbeddings)
    n.ignoredSuffixes.push_back("lm_head.weight");
  return config;
}
