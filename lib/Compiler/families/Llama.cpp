//===- Llama.cpp - model_type "llama", and what its descendants share -----===//
//
// LLaMA (modeling_llama.py): RoPE (rotate-half pairing, any rope_scaling but
// longrope), pre-RMSNorm blocks, grouped-query attention with separate
// nn.Linear q/k/v/o projections, a gated MLP (SwiGLU), a final RMSNorm, an
// output projection tied or not. Mistral, Qwen2, Gemma and Phi-3 are this
// with other defaults and a few changes (readLlamaStyle).
//
//===----------------------------------------------------------------------===//

#include "../ConfigReader.h"


using namespace mlir;
using namespace mlir::attn;

/// A gated MLP's activation: silu is SwiGLU, a GELU form GeGLU.
static void readGatedActivation(ConfigReader &reader, llvm::StringRef key,
                                llvm::StringRef fallback, MlpSpec &mlp) {
  std::string activation = reader.string(key, fallback);
  if (activation == "silu" || activation == "swish") {
    mlp.kind = MlpKind::SwiGlu;
    return;
  }
  mlp.kind = MlpKind::GeGlu;
  if (std::optional<GeluApproximation> gelu = parseGelu(activation)) {
    mlp.gelu = *gelu;
    return;
  }
  reader.fail("key '" + key + "' is " + ConfigReader::quote(activation) +
              "; supported: silu, swish, " + kGeluNames);
}

/// The top-level partial_rotary_factor: RoPE on the first
/// int(head_dim * factor) features of each head.
static void readPartialRotary(ConfigReader &reader, ModelConfig &config) {
  double factor = reader.positiveNumber("partial_rotary_factor", 1.0);
  auto rotaryDims =
      static_cast<int64_t>(static_cast<double>(config.headDim) * factor);
  if (factor > 1.0 || rotaryDims <= 0 || rotaryDims % 2 != 0)
    reader.fail("key 'partial_rotary_factor' (" +
                ConfigReader::render(JsonValue(factor)) + ") gives " +
                llvm::Twine(rotaryDims) + " rotary features of " +
                llvm::Twine(config.headDim) +
                "; need an even count in (0, head_dim]");
  else if (rotaryDims != config.headDim)
    config.positions.rotaryDims = rotaryDims;
}

ModelConfig mlir::attn::readLlamaStyle(ConfigReader &reader,
                                       const LlamaStyleDefaults &defaults) {
  ModelConfig config;
  config.architecture = defaults.family;
  config.hiddenSize = reader.positive("hidden_size", std::nullopt, kMaxWidth);
  config.intermediateSize =
      reader.positive("intermediate_size", std::nullopt, 4 * kMaxWidth);
  config.numLayers =
      reader.positive("num_hidden_layers", std::nullopt, kMaxLayers);
  config.numHeads =
      reader.positive("num_attention_heads", std::nullopt, kMaxHeads);
  // HF's config classes: an absent key takes the class default, an explicit
  // null means "as many as the query heads".
  int64_t kvDefault = defaults.kvHeads ? defaults.kvHeads : config.numHeads;
  if (reader.isNull("num_key_value_heads") && defaults.kvHeadsNullIsAllHeads)
    kvDefault = config.numHeads;
  else if (reader.isNull("num_key_value_heads"))
    reader.fail("key 'num_key_value_heads' must be an integer, got null");
  config.numKvHeads = reader.positive("num_key_value_heads", kvDefault, kMaxHeads);
  config.maxPositions = reader.positive(
      "max_position_embeddings", defaults.maxPositions, kMaxPositions);
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.tieEmbeddings =
      reader.boolean("tie_word_embeddings", defaults.tieEmbeddings);

  if (defaults.headDim && reader.isNull("head_dim")) {
    reader.fail("key 'head_dim' must be an integer, got null");
  } else if (reader.has("head_dim")) {
    config.headDim = reader.positive("head_dim", std::nullopt, kMaxWidth);
  } else if (defaults.headDim) {
    config.headDim = defaults.headDim;
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
  config.norm.epsilon = reader.positiveNumber("rms_norm_eps", defaults.epsilon);
  config.positions.kind = PositionKind::Rotary;
  config.positions.pairing = RopePairing::RotateHalf;
  config.positions.theta = defaults.theta;
  if (defaults.partialRotary)
    readPartialRotary(reader, config);
  else
    reader.unsupportedUnless(
        "partial_rotary_factor",
        [](const JsonValue &v) { return v.getAsNumber() == 1.0; },
        "rotary embeddings on part of each head (this family rotates all of "
        "it)");
  readRopeParameters(reader, config, defaults.perLayerTypeRope);
  if (!defaults.partialRotary && config.positions.rotaryDims != 0)
    reader.fail("partial_rotary_factor: " + llvm::Twine(defaults.family) +
                " rotates the whole head (apply_rotary_pos_emb has no "
                "pass-through part)");
  config.attention.qkv = QkvStorage::Separate;
  config.linearOutIn = true;
  readGatedActivation(reader, defaults.activationKey, defaults.activation,
                      config.mlp);

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

void mlir::attn::readSlidingWindow(ConfigReader &reader, ModelConfig &config,
                                   std::optional<int64_t> fallback) {
  int64_t window = 0;
  if (reader.has("sliding_window"))
    window = reader.positive("sliding_window", std::nullopt, kMaxPositions);
  else if (!reader.isNull("sliding_window") && fallback)
    window = *fallback;
  if (window > 0)
    config.attention.windows.assign(config.numLayers, window);
}

ModelConfig mlir::attn::readLlama(ConfigReader &reader) {
  ModelConfig config = readLlamaStyle(reader, {"llama"});
  reader.unsupportedUnless("attention_bias", isFalse,
                           "biases on the attention projections");
  reader.unsupportedUnless("mlp_bias", isFalse,
                           "biases on the MLP projections");
  return config;
}

std::vector<bool>
mlir::attn::readLayerTypes(ConfigReader &reader, int64_t layers,
                           llvm::function_ref<bool(int64_t)> defaultSliding) {
  std::vector<bool> sliding(layers);
  for (int64_t layer = 0; layer < layers; ++layer)
    sliding[layer] = defaultSliding(layer);
  std::optional<std::vector<std::string>> types = reader.stringList("layer_types");
  if (!types)
    return sliding;
  if (static_cast<int64_t>(types->size()) != layers) {
    reader.fail("key 'layer_types' has " + llvm::Twine(types->size()) +
                " entries, expected num_hidden_layers (" + llvm::Twine(layers) +
                ")");
    return sliding;
  }
  for (int64_t layer = 0; layer < layers; ++layer) {
    const std::string &type = (*types)[layer];
    if (type != "sliding_attention" && type != "full_attention")
      reader.fail("key 'layer_types' entry " + llvm::Twine(layer) + " is " +
                  ConfigReader::quote(type) +
                  "; supported: full_attention, sliding_attention");
    sliding[layer] = type == "sliding_attention";
  }
  return sliding;
}

void mlir::attn::readLayerTypeWindows(
    ConfigReader &reader, ModelConfig &config,
    llvm::function_ref<bool(int64_t)> defaultSliding, int64_t fallback) {
  std::vector<bool> sliding =
      readLayerTypes(reader, config.numLayers, defaultSliding);
  int64_t window = 0;
  if (reader.has("sliding_window"))
    window = reader.positive("sliding_window", std::nullopt, kMaxPositions);
  else if (!reader.isNull("sliding_window"))
    window = fallback;
  if (window > 0 && llvm::is_contained(sliding, true)) {
    config.attention.windows.assign(config.numLayers, 0);
    for (int64_t layer = 0; layer < config.numLayers; ++layer)
      if (sliding[layer])
        config.attention.windows[layer] = window;
  }
}

double mlir::attn::readSoftcap(ConfigReader &reader, llvm::StringRef key,
                               double fallback) {
  if (reader.isNull(key))
    return 0.0;
  return reader.positiveNumber(key, fallback);
}
