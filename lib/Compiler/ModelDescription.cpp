//===- ModelDescription.cpp - a ModelConfig as a hand-written file -------===//
//
// The user-facing form of ModelConfig (docs/model-description.md): a JSON
// object marked by "attn_model_description": 1 whose members are the
// description's fields, so a decoder that no Hugging Face family describes
// compiles from a file, with its weights named as the file says. Unlike a
// config.json, nothing has a family's default: every key is checked,
// unknown keys are errors, and the combinations the block builder cannot
// build are rejected here, naming the keys. describeModel writes the same
// form from any ModelConfig (`attn-compile --emit=description`), so an HF
// model is a starting point to edit.
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/ModelConfig.h"

#include "ConfigReader.h"

#include "llvm/ADT/StringSet.h"

#include <utility>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The spelling of each value of an enum in the file.
template <typename T> using Choices = std::initializer_list<std::pair<const char *, T>>;

const Choices<NormKind> normKinds = {{"layer_norm", NormKind::LayerNorm},
                                     {"rms_norm", NormKind::RmsNorm}};
const Choices<PositionKind> positionKinds = {
    {"none", PositionKind::None},
    {"learned", PositionKind::Learned},
    {"sinusoidal", PositionKind::Sinusoidal},
    {"rotary", PositionKind::Rotary},
    {"alibi", PositionKind::Alibi}};
const Choices<SinusoidalLayout> sinusoidalLayouts = {
    {"interleaved", SinusoidalLayout::Interleaved},
    {"halves", SinusoidalLayout::Halves}};
const Choices<RopePairing> ropePairings = {
    {"rotate_half", RopePairing::RotateHalf},
    {"interleaved", RopePairing::Interleaved}};
const Choices<RopeScalingKind> scalingKinds = {
    {"default", RopeScalingKind::None},
    {"linear", RopeScalingKind::Linear},
    {"dynamic", RopeScalingKind::Dynamic},
    {"yarn", RopeScalingKind::Yarn},
    {"llama3", RopeScalingKind::Llama3},
    {"longrope", RopeScalingKind::LongRope}};
const Choices<MlpKind> mlpKinds = {{"gelu", MlpKind::Gelu},
                                   {"relu", MlpKind::Relu},
                                   {"swiglu", MlpKind::SwiGlu},
                                   {"geglu", MlpKind::GeGlu}};
const Choices<MoeScoring> moeScorings = {
    {"softmax_top_k", MoeScoring::SoftmaxTopK},
    {"top_k_softmax", MoeScoring::TopKSoftmax}};

const Choices<MoeActivation> moeActivations = {
    {"swiglu", MoeActivation::Swiglu},
    {"clamped_swiglu", MoeActivation::ClampedSwiglu}};
const Choices<GeluApproximation> geluForms = {{"tanh", GeluApproximation::Tanh},
                                              {"erf", GeluApproximation::Erf}};
const Choices<QkvStorage> qkvStorages = {
    {"separate", QkvStorage::Separate},
    {"fused", QkvStorage::Fused},
    {"fused_per_head", QkvStorage::FusedPerHead}};

template <typename T> const char *spell(const Choices<T> &choices, T value) {
  for (const auto &[name, candidate] : choices)
    if (candidate == value)
      return name;
  return "?";
}

/// The value spelt at `key` (`fallback` when absent), or an error listing
/// the spellings.
template <typename T>
T choose(ConfigReader &reader, llvm::StringRef key, const Choices<T> &choices,
         std::optional<T> fallback) {
  if (!reader.has(key)) {
    if (!fallback)
      reader.fail("missing key '" + reader.name(key) + "'");
    return fallback.value_or(choices.begin()->second);
  }
  std::string text = reader.string(key, "");
  std::string known;
  for (const auto &[name, value] : choices) {
    if (text == name)
      return value;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  reader.fail("key '" + reader.name(key) + "' is " + ConfigReader::quote(text) +
                "; one of: " + known);
  return fallback.value_or(choices.begin()->second);
}

/// A number (any sign) with a fallback.
double finite(ConfigReader &reader, llvm::StringRef key, double fallback) {
  return reader.number(key).value_or(fallback);
}

/// The members of the object at `key` as a nested reader, checked against
/// `known`; nullopt when absent.
std::optional<ConfigReader> section(ConfigReader &reader, llvm::StringRef key,
                                    llvm::ArrayRef<llvm::StringRef> known) {
  const llvm::json::Object *object = reader.objectAt(key);
  if (!object)
    return std::nullopt;
  ConfigReader inner = reader.nested(*object, key);
  inner.onlyKeys(known);
  return inner;
}

void readPositions(ConfigReader &reader, ModelConfig &config) {
  std::optional<ConfigReader> section_ =
      section(reader, "positions",
              {"kind", "offset", "layout", "base", "local_base", "pairing",
               "rotary_dims", "unrotated_layers", "scaling", "bounded"});
  if (!section_)
    return reader.fail("missing key 'positions'");
  ConfigReader &r = *section_;
  PositionSpec &p = config.positions;
  p.kind = choose<PositionKind>(r, "kind", positionKinds, std::nullopt);
  auto only = [&](llvm::StringRef key, bool allowed, llvm::StringRef kinds) {
    if (r.has(key) && !allowed)
      r.fail("key '" + r.name(key) + "' applies to " + kinds + " positions only");
  };
  bool learned = p.kind == PositionKind::Learned,
       sinusoidal = p.kind == PositionKind::Sinusoidal,
       rotary = p.kind == PositionKind::Rotary;
  only("offset", learned || sinusoidal, "learned and sinusoidal");
  only("layout", sinusoidal, "sinusoidal");
  only("base", sinusoidal || rotary, "sinusoidal and rotary");
  only("pairing", rotary, "rotary");
  only("local_base", rotary, "rotary");
  only("unrotated_layers", rotary, "rotary");
  only("rotary_dims", rotary, "rotary");
  only("scaling", rotary, "rotary");
  p.offset = r.nonNegative("offset", 0, kMaxPositions);
  p.sinusoidal = choose<SinusoidalLayout>(r, "layout", sinusoidalLayouts,
                                          SinusoidalLayout::Interleaved);
  p.theta = r.positiveNumber("base", 10000.0);
  p.localTheta = r.positiveNumber("local_base", 0.0);
  p.pairing = choose<RopePairing>(r, "pairing", ropePairings, RopePairing::RotateHalf);
  config.positionsBounded = r.boolean("bounded", learned);
  if (learned && !config.positionsBounded)
    r.fail("key '" + r.name("bounded") +
           "' must be true with learned positions (the table ends)");

  if (sinusoidal) {
    int64_t d = config.hiddenSize;
    if (d % 2 != 0 || (p.sinusoidal == SinusoidalLayout::Halves && d < 4))
      r.fail("sinusoidal positions need an even hidden_size (at least 4 with "
             "layout 'halves'), got " + llvm::Twine(d));
  }
  if (!rotary)
    return;
  int64_t headDim = config.headDim;
  int64_t dims = r.positive("rotary_dims", headDim, kMaxWidth);
  if (dims % 2 != 0 || dims > headDim)
    return r.fail("key '" + r.name("rotary_dims") + "' (" + llvm::Twine(dims) +
                  ") must be even and at most head_dim (" + llvm::Twine(headDim) +
                  ")");
  p.rotaryDims = dims == headDim ? 0 : dims;
  if (const JsonValue *layers = r.entries().get("unrotated_layers")) {
    const llvm::json::Array *list = layers->getAsArray();
    for (size_t i = 0; list && i < list->size(); ++i) {
      std::optional<int64_t> layer = (*list)[i].getAsInteger();
      if (!layer || *layer < 0 || *layer >= config.numLayers ||
          llvm::is_contained(p.unrotatedLayers, *layer))
        return r.fail("key '" + r.name("unrotated_layers") + "' entry " +
                      llvm::Twine(i) + " must be a distinct layer index below " +
                      llvm::Twine(config.numLayers));
      p.unrotatedLayers.push_back(*layer);
    }
    if (!list)
      return r.fail("key '" + r.name("unrotated_layers") +
                    "' must be a list of layer indices");
  }

  const llvm::json::Object *scaling = r.objectAt("scaling");
  if (!scaling)
    return;
  ConfigReader s = r.nested(*scaling, "scaling");
  s.onlyKeys({"kind", "factor", "original_max_positions", "beta_fast",
              "beta_slow", "truncate", "attention_factor", "mscale",
              "mscale_all_dim", "low_freq_factor", "high_freq_factor",
              "short_factor", "long_factor"});
  RopeScaling &k = p.scaling;
  k.kind = choose<RopeScalingKind>(s, "kind", scalingKinds, std::nullopt);
  llvm::StringRef kind = spell(scalingKinds, k.kind);
  bool yarn = k.kind == RopeScalingKind::Yarn,
       llama3 = k.kind == RopeScalingKind::Llama3,
       longRope = k.kind == RopeScalingKind::LongRope;
  for (llvm::StringRef key :
       {"beta_fast", "beta_slow", "truncate", "mscale", "mscale_all_dim"})
    if (s.has(key) && !yarn)
      s.fail("key '" + s.name(key) + "' applies to kind 'yarn' only");
  if (s.has("attention_factor") && !yarn && !longRope)
    s.fail("key '" + s.name("attention_factor") +
           "' applies to kinds 'yarn' and 'longrope' only");
  for (llvm::StringRef key : {"low_freq_factor", "high_freq_factor"})
    if (s.has(key) && !llama3)
      s.fail("key '" + s.name(key) + "' applies to kind 'llama3' only");
  for (llvm::StringRef key : {"short_factor", "long_factor"})
    if (s.has(key) && !longRope)
      s.fail("key '" + s.name(key) + "' applies to kind 'longrope' only");
  if (s.has("original_max_positions") && !yarn && !llama3 && !longRope)
    s.fail("key '" + s.name("original_max_positions") +
           "' applies to kinds 'yarn', 'llama3' and 'longrope' only");
  if (k.kind == RopeScalingKind::None) {
    if (s.has("factor"))
      s.fail("key '" + s.name("factor") + "' does not apply to kind 'default'");
    return;
  }
  if (!s.has("factor"))
    s.fail("missing key '" + s.name("factor") + "' (kind '" + kind + "' needs it)");
  k.factor = s.positiveNumber("factor", 1.0);
  if (k.kind == RopeScalingKind::Dynamic) {
    // Measured against the model's positions, as transformers does.
    k.originalMaxPositions = config.maxPositions;
    if (p.rotaryDimsOf(headDim) <= 2)
      s.fail("kind 'dynamic' needs more than 2 rotary features");
    return;
  }
  if (!yarn && !llama3 && !longRope)
    return;
  k.originalMaxPositions =
      s.positive("original_max_positions", std::nullopt, kMaxPositions);
  if (longRope) {
    int64_t pairs = p.rotaryDimsOf(headDim) / 2;
    k.shortFactor = readLongRopeFactors(s, "short_factor", pairs);
    k.longFactor = readLongRopeFactors(s, "long_factor", pairs);
    if (s.has("attention_factor"))
      k.attentionFactor = s.positiveNumber("attention_factor", 1.0);
  } else if (yarn) {
    k.betaFast = s.positiveNumber("beta_fast", 32.0);
    k.betaSlow = s.positiveNumber("beta_slow", 1.0);
    if (k.betaFast < k.betaSlow)
      s.fail("key '" + s.name("beta_fast") + "' must be at least '" +
             s.name("beta_slow") + "'");
    k.truncate = s.boolean("truncate", true);
    if (s.has("attention_factor"))
      k.attentionFactor = s.positiveNumber("attention_factor", 1.0);
    k.mscale = finite(s, "mscale", 0.0);
    k.mscaleAllDim = finite(s, "mscale_all_dim", 0.0);
    if (k.mscale < 0 || k.mscaleAllDim < 0)
      s.fail("keys '" + s.name("mscale") + "' and '" + s.name("mscale_all_dim") +
             "' must not be negative");
    if (!(p.theta > 1.0))
      r.fail("key '" + r.name("base") + "' must be greater than 1 for yarn");
  } else {
    for (auto [key, value] : {std::pair{"low_freq_factor", &k.lowFreqFactor},
                              std::pair{"high_freq_factor", &k.highFreqFactor}}) {
      if (!s.has(key))
        s.fail("missing key '" + s.name(key) + "' (kind 'llama3' needs it)");
      *value = s.positiveNumber(key, *value);
    }
    if (k.highFreqFactor <= k.lowFreqFactor)
      s.fail("key '" + s.name("high_freq_factor") + "' must be greater than '" +
             s.name("low_freq_factor") + "'");
  }
}

void readAttention(ConfigReader &reader, ModelConfig &config) {
  std::optional<ConfigReader> section_ = section(
      reader, "attention",
      {"qkv", "qkv_bias", "output_bias", "qk_norm", "sinks", "scale", "softcap",
       "window", "windows"});
  if (!section_)
    return reader.fail("missing key 'attention'");
  ConfigReader &r = *section_;
  AttentionSpec &a = config.attention;
  a.qkv = choose<QkvStorage>(r, "qkv", qkvStorages, std::nullopt);
  if (a.qkv == QkvStorage::FusedPerHead && config.numKvHeads != config.numHeads)
    r.fail("key '" + r.name("qkv") +
           "' 'fused_per_head' needs kv_heads equal to heads (got " +
           llvm::Twine(config.numKvHeads) + " of " + llvm::Twine(config.numHeads) +
           ")");
  a.qkvBias = r.boolean("qkv_bias", false);
  a.outputBias = r.boolean("output_bias", false);
  a.qkNorm = r.boolean("qk_norm", false);
  if (a.qkNorm && config.norm.kind != NormKind::RmsNorm)
    r.fail("key '" + r.name("qk_norm") +
           "' needs an rms_norm model: the qk-norm is the model's RMSNorm per "
           "head");
  a.sinks = r.boolean("sinks", false);
  a.scale = r.positiveNumber("scale", 0.0);
  a.softcap = r.positiveNumber("softcap", 0.0);
  if (r.has("window") && r.has("windows"))
    return r.fail("keys '" + r.name("window") + "' and '" + r.name("windows") +
                  "' are exclusive: one window for every layer, or one per layer");
  if (r.has("window")) {
    int64_t window = r.positive("window", 0, kMaxPositions);
    a.windows.assign(config.numLayers, window);
    return;
  }
  const JsonValue *windows = r.entries().get("windows");
  if (!windows || windows->getAsNull())
    return;
  const llvm::json::Array *list = windows->getAsArray();
  if (!list || static_cast<int64_t>(list->size()) != config.numLayers)
    return r.fail("key '" + r.name("windows") + "' must be a list of " +
                  llvm::Twine(config.numLayers) +
                  " integers (0: full attention), one per layer");
  for (size_t i = 0; i < list->size(); ++i) {
    std::optional<int64_t> window = (*list)[i].getAsInteger();
    if (!window || (*list)[i].kind() == JsonValue::Boolean || *window < 0 ||
        *window > kMaxPositions)
      return r.fail("key '" + r.name("windows") + "' entry " + llvm::Twine(i) +
                    " must be an integer in [0, " + llvm::Twine(kMaxPositions) +
                    "], got " + ConfigReader::render((*list)[i]));
    a.windows.push_back(*window);
  }
  if (llvm::all_of(a.windows, [](int64_t w) { return w == 0; }))
    a.windows.clear();
}

void readMlp(ConfigReader &reader, ModelConfig &config) {
  std::optional<ConfigReader> section_ =
      section(reader, "mlp", {"kind", "gelu", "bias", "fused_gate_up"});
  if (!section_)
    return reader.fail("missing key 'mlp'");
  ConfigReader &r = *section_;
  MlpSpec &m = config.mlp;
  m.kind = choose<MlpKind>(r, "kind", mlpKinds, std::nullopt);
  bool usesGelu = m.kind == MlpKind::Gelu || m.kind == MlpKind::GeGlu;
  if (r.has("gelu") && !usesGelu)
    r.fail("key '" + r.name("gelu") + "' applies to kinds 'gelu' and 'geglu' only");
  if (usesGelu)
    m.gelu = choose<GeluApproximation>(r, "gelu", geluForms, std::nullopt);
  m.bias = r.boolean("bias", false);
  m.fusedGateUp = r.boolean("fused_gate_up", false);
  if (m.fusedGateUp && !m.gated())
    r.fail("key '" + r.name("fused_gate_up") +
           "' needs a gated kind ('swiglu' or 'geglu')");
}

/// The optional mixture of experts: its size and routing, the layers that
/// keep the dense MLP.
void readMoe(ConfigReader &reader, ModelConfig &config) {
  std::optional<ConfigReader> section_ =
      section(reader, "moe", {"experts", "top_k", "ffn", "scoring",
                              "normalize", "dense_layers", "router_bias",
                              "expert_bias", "activation", "alpha", "limit",
                              "stacked", "shared_ffn", "shared_gate"});
  if (!section_)
    return;
  ConfigReader &r = *section_;
  MoeSpec &m = config.moe;
  m.numExperts = r.positive("experts", std::nullopt, kMaxExperts);
  m.topK = r.positive("top_k", std::nullopt, kMaxExperts);
  m.expertFfn = r.positive("ffn", std::nullopt, 4 * kMaxWidth);
  if (m.topK > m.numExperts)
    r.fail("key '" + r.name("top_k") + "' (" + llvm::Twine(m.topK) +
           ") exceeds '" + r.name("experts") + "' (" +
           llvm::Twine(m.numExperts) + ")");
  m.scoring = choose<MoeScoring>(r, "scoring", moeScorings,
                                 MoeScoring::SoftmaxTopK);
  m.normalize = r.boolean("normalize", false);
  if (m.normalize && m.scoring == MoeScoring::TopKSoftmax)
    r.fail("key '" + r.name("normalize") +
           "' applies to scoring 'softmax_top_k' only");
  if (config.mlp.kind != MlpKind::SwiGlu)
    r.fail("experts are SwiGLU MLPs: key 'mlp.kind' must be 'swiglu'");
  m.denseLayers = r.layerList("dense_layers", config.numLayers);
  m.routerBias = r.boolean("router_bias", false);
  m.expertBias = r.boolean("expert_bias", false);
  m.activation = choose<MoeActivation>(r, "activation", moeActivations,
                                       MoeActivation::Swiglu);
  bool clamped = m.activation == MoeActivation::ClampedSwiglu;
  for (const char *key : {"alpha", "limit"}) {
    if (!clamped && r.has(key))
      r.fail("key '" + r.name(key) + "' applies to activation 'clamped_swiglu' only");
    else if (clamped && !r.has(key))
      r.fail("missing key '" + r.name(key) + "' (activation 'clamped_swiglu')");
  }
  if (clamped) {
    m.alpha = r.positiveNumber("alpha", 1.0);
    m.limit = r.positiveNumber("limit", 1.0);
  }
  m.stacked = r.boolean("stacked", false);
  if (r.has("shared_ffn"))
    m.sharedFfn = r.positive("shared_ffn", std::nullopt, 4 * kMaxWidth);
  m.sharedGate = r.boolean("shared_gate", false);
  if (m.sharedGate && m.sharedFfn == 0)
    r.fail("key '" + r.name("shared_gate") + "' needs a shared expert ('" +
           r.name("shared_ffn") + "')");
}

void readBlock(ConfigReader &reader, ModelConfig &config) {
  BlockSpec &b = config.block;
  std::optional<ConfigReader> section_ = section(
      reader, "block", {"pre_norm", "parallel", "shared_norm", "final_norm", "output_norms"});
  if (!section_)
    return;
  ConfigReader &r = *section_;
  b.preNorm = r.boolean("pre_norm", true);
  b.parallel = r.boolean("parallel", false);
  b.sharedNorm = r.boolean("shared_norm", false);
  b.finalNorm = r.boolean("final_norm", b.preNorm);
  b.outputNorms = r.boolean("output_norms", false);
  if (b.outputNorms && (!b.preNorm || b.parallel))
    r.fail("key '" + r.name("output_norms") +
           "' needs pre_norm, sequential blocks (the norms sit between a "
           "sublayer and its residual add)");
  if (b.parallel && !b.preNorm)
    r.fail("key '" + r.name("parallel") +
           "' needs pre_norm: post-norm blocks are sequential");
  if (b.sharedNorm && !b.parallel)
    r.fail("key '" + r.name("shared_norm") +
           "' needs parallel (one norm feeding attention and MLP)");
}

/// The weight names: every module the description uses must be named.
void readWeights(ConfigReader &reader, ModelConfig &config) {
  static const std::pair<const char *, std::string WeightNames::*> modules[] = {
      {"token_embedding", &WeightNames::tokenEmbedding},
      {"position_embedding", &WeightNames::positionEmbedding},
      {"embedding_norm", &WeightNames::embeddingNorm},
      {"layer", &WeightNames::layer},
      {"attention_norm", &WeightNames::attentionNorm},
      {"mlp_norm", &WeightNames::mlpNorm},
      {"query", &WeightNames::query},
      {"key", &WeightNames::key},
      {"value", &WeightNames::value},
      {"qkv", &WeightNames::qkv},
      {"query_norm", &WeightNames::queryNorm},
      {"key_norm", &WeightNames::keyNorm},
      {"output", &WeightNames::output},
      {"gate", &WeightNames::gate},
      {"up", &WeightNames::up},
      {"down", &WeightNames::down},
      {"gate_up", &WeightNames::gateUp},
      {"final_norm", &WeightNames::finalNorm},
      {"attention_output_norm", &WeightNames::attentionOutputNorm},
      {"mlp_output_norm", &WeightNames::mlpOutputNorm},
      {"head", &WeightNames::head},
      {"router", &WeightNames::router},
      {"expert", &WeightNames::expert},
      {"expert_gate", &WeightNames::expertGate},
      {"expert_up", &WeightNames::expertUp},
      {"expert_down", &WeightNames::expertDown},
      {"expert_gate_up", &WeightNames::expertGateUp},
      {"sinks", &WeightNames::sinks},
      {"shared_expert", &WeightNames::sharedExpert},
      {"shared_expert_gate", &WeightNames::sharedExpertGate},
  };
  llvm::SmallVector<llvm::StringRef> known = {"layout", "weight_suffix",
                                              "bias_suffix", "prefixes",
                                              "ignored_suffixes",
                                              "ignored_prefixes",
                                              "stacked_experts",
                                              "stacked_router"};
  for (const auto &[key, member] : modules)
    known.push_back(key);
  std::optional<ConfigReader> section_ = section(reader, "weights", known);
  if (!section_)
    return reader.fail("missing key 'weights'");
  ConfigReader &r = *section_;
  std::string layout = r.string("layout", "");
  if (layout == "out_in" || layout == "in_out")
    config.linearOutIn = layout == "out_in";
  else
    r.fail("key '" + r.name("layout") + "' must be 'out_in' (nn.Linear) or "
           "'in_out' (Conv1D), got " + ConfigReader::quote(layout));
  WeightNames &n = config.names;
  n.weightSuffix = r.string("weight_suffix", "weight");
  n.biasSuffix = r.string("bias_suffix", "bias");
  n.prefixes = r.stringList("prefixes").value_or(std::vector<std::string>{});
  n.ignoredPrefixes =
      r.stringList("ignored_prefixes").value_or(std::vector<std::string>{});
  n.ignoredSuffixes =
      r.stringList("ignored_suffixes").value_or(std::vector<std::string>{});

  const ModelConfig &c = config;
  bool separate = c.attention.qkv == QkvStorage::Separate;
  bool gateUp = c.mlp.fusedGateUp;
  auto used = [&](llvm::StringRef key) {
    if (key == "position_embedding")
      return c.positions.kind == PositionKind::Learned;
    if (key == "embedding_norm")
      return c.embeddingNorm;
    if (key == "mlp_norm")
      return !(c.block.parallel && c.block.sharedNorm);
    if (key == "query" || key == "key" || key == "value")
      return separate;
    if (key == "qkv")
      return !separate;
    if (key == "query_norm" || key == "key_norm")
      return c.attention.qkNorm;
    if (key == "attention_output_norm" || key == "mlp_output_norm")
      return c.block.outputNorms;
    bool dense = c.hasDenseMlp();
    if (key == "gate")
      return dense && c.mlp.gated() && !gateUp;
    if (key == "up")
      return dense && !gateUp;
    if (key == "gate_up")
      return dense && gateUp;
    if (key == "down")
      return dense;
    bool moe = c.moe.numExperts > 0;
    if (key == "router" || key == "expert" || key == "expert_down")
      return moe;
    // A shared expert's projections are named as an expert's.
    if (key == "expert_gate" || key == "expert_up")
      return moe && (!c.moe.stacked || c.moe.sharedFfn > 0);
    if (key == "shared_expert")
      return moe && c.moe.sharedFfn > 0;
    if (key == "shared_expert_gate")
      return moe && c.moe.sharedGate;
    if (key == "expert_gate_up")
      return moe && c.moe.stacked;
    if (key == "sinks")
      return c.attention.sinks;
    if (key == "final_norm")
      return c.block.finalNorm;
    if (key == "head")
      return !c.tieEmbeddings || c.headBias;
    return true;
  };
  for (const auto &[key, member] : modules) {
    if (!used(key)) {
      if (r.has(key))
        r.fail("key '" + r.name(key) + "' names a module this model does not have");
      continue;
    }
    if (!r.has(key))
      return r.fail("missing key '" + r.name(key) + "'");
    config.names.*member = r.string(key, "");
  }
  // Optional: where a checkpoint without per-expert tensors holds them
  // stacked, as transformers 5 saves Mixtral's and Qwen3-MoE's experts.
  for (auto [key, member] : {std::pair{"stacked_experts", &WeightNames::stackedExperts},
                             std::pair{"stacked_router", &WeightNames::stackedRouter}}) {
    if (!r.has(key))
      continue;
    if (c.moe.numExperts == 0 || c.moe.stacked)
      r.fail("key '" + r.name(key) + "' names transformers 5's stacked experts, read in "
             "place of a module per expert: this model has " +
             (c.moe.stacked ? "stacked experts of its own (moe.stacked)" : "no experts"));
    else
      config.names.*member = r.string(key, "");
  }
  if (!n.stackedRouter.empty() && n.stackedExperts.empty())
    r.fail("key '" + r.name("stacked_router") + "' needs '" + r.name("stacked_experts") +
           "': the router is renamed only where the experts are stacked");
  if (c.numLayers > 1 && n.layer.find("{}") == std::string::npos)
    r.fail("key '" + r.name("layer") + "' (" + ConfigReader::quote(n.layer) +
           ") must hold '{}' for the layer index");
  if (c.moe.numExperts > 1 && !c.moe.stacked &&
      n.expert.find("{}") == std::string::npos)
    r.fail("key '" + r.name("expert") + "' (" + ConfigReader::quote(n.expert) +
           ") must hold '{}' for the expert index");
  if (c.moe.stacked && n.expert.find("{}") != std::string::npos)
    r.fail("key '" + r.name("expert") + "' (" + ConfigReader::quote(n.expert) +
           ") names the stacked experts' module: no '{}' (moe.stacked)");
}

/// No two weights may share a name: the checkpoint could not tell them apart.
void checkDistinctNames(ConfigReader &reader, const ModelConfig &config) {
  llvm::StringSet<> seen;
  for (const WeightSpec &weight : modelWeights(config))
    if (!seen.insert(weight.name).second)
      return reader.fail("weights: two tensors are both named " +
                         ConfigReader::quote(weight.name));
}

} // namespace

bool mlir::attn::isModelDescription(const llvm::json::Object &object) {
  return object.get("attn_model_description") != nullptr;
}

ModelConfig mlir::attn::readModelDescription(ConfigReader &reader) {
  ModelConfig config;
  reader.onlyKeys({"attn_model_description", "name", "vocab_size",
                   "hidden_size", "layers", "heads", "kv_heads", "head_dim",
                   "intermediate_size", "max_positions", "norm", "positions",
                   "attention", "mlp", "moe", "block", "embedding", "head",
                   "weights"});
  const JsonValue *version = reader.entries().get("attn_model_description");
  if (!version || version->getAsInteger() != std::optional<int64_t>(1) ||
      version->kind() == JsonValue::Boolean) {
    reader.fail("key 'attn_model_description' must be 1 (the schema version "
                "this attn-compile reads), got " +
                (version ? ConfigReader::render(*version) : std::string("none")));
    return config;
  }
  config.architecture = reader.string("name", "description");
  if (config.architecture.empty())
    reader.fail("key 'name' must not be empty");
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.hiddenSize = reader.positive("hidden_size", std::nullopt, kMaxWidth);
  config.numLayers = reader.positive("layers", std::nullopt, kMaxLayers);
  config.numHeads = reader.positive("heads", std::nullopt, kMaxHeads);
  config.numKvHeads = reader.positive("kv_heads", config.numHeads, kMaxHeads);
  checkDivides(reader, "heads", config.numHeads, "kv_heads", config.numKvHeads);
  if (!reader.has("head_dim"))
    checkDivides(reader, "hidden_size", config.hiddenSize, "heads",
                 config.numHeads);
  config.headDim = reader.positive(
      "head_dim", config.numHeads ? config.hiddenSize / config.numHeads : 0,
      kMaxWidth);
  config.intermediateSize =
      reader.positive("intermediate_size", std::nullopt, 4 * kMaxWidth);
  config.maxPositions = reader.positive("max_positions", std::nullopt, kMaxPositions);
  config.maxPositionsKey = "max_positions";

  if (std::optional<ConfigReader> norm =
          section(reader, "norm", {"kind", "epsilon", "gain_offset"})) {
    config.norm.kind = choose<NormKind>(*norm, "kind", normKinds, std::nullopt);
    config.norm.epsilon = norm->positiveNumber("epsilon", 1e-5);
    config.norm.gainOffset = finite(*norm, "gain_offset", 0.0);
  } else {
    reader.fail("missing key 'norm'");
  }
  readPositions(reader, config);
  readAttention(reader, config);
  readMlp(reader, config);
  readMoe(reader, config);
  readBlock(reader, config);
  if (std::optional<ConfigReader> embedding =
          section(reader, "embedding", {"scale", "norm"})) {
    config.embeddingScale = embedding->positiveNumber("scale", 1.0);
    config.embeddingNorm = embedding->boolean("norm", false);
  }
  if (std::optional<ConfigReader> head =
          section(reader, "head", {"tied", "bias", "softcap"})) {
    config.tieEmbeddings = head->boolean("tied", true);
    config.headBias = head->boolean("bias", false);
    config.logitSoftcap = head->positiveNumber("softcap", 0.0);
  }
  readWeights(reader, config);
  checkDistinctNames(reader, config);
  return config;
}

std::string mlir::attn::describeModel(const ModelConfig &c) {
  // In the order docs/model-description.md explains the fields, members a
  // model does not use left out.
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream j(os, 2);
  const PositionSpec &p = c.positions;
  const WeightNames &n = c.names;
  bool learned = p.kind == PositionKind::Learned,
       sinusoidal = p.kind == PositionKind::Sinusoidal,
       rotary = p.kind == PositionKind::Rotary;
  bool separate = c.attention.qkv == QkvStorage::Separate;
  bool gateUp = c.mlp.fusedGateUp;
  j.object([&] {
    j.attribute("attn_model_description", 1);
    j.attribute("name", c.architecture);
    j.attribute("vocab_size", c.vocabSize);
    j.attribute("hidden_size", c.hiddenSize);
    j.attribute("layers", c.numLayers);
    j.attribute("heads", c.numHeads);
    j.attribute("kv_heads", c.numKvHeads);
    j.attribute("head_dim", c.headDim);
    j.attribute("intermediate_size", c.intermediateSize);
    j.attribute("max_positions", c.maxPositions);
    j.attributeObject("norm", [&] {
      j.attribute("kind", spell(normKinds, c.norm.kind));
      j.attribute("epsilon", c.norm.epsilon);
      if (c.norm.gainOffset)
        j.attribute("gain_offset", c.norm.gainOffset);
    });
    j.attributeObject("positions", [&] {
      j.attribute("kind", spell(positionKinds, p.kind));
      if (learned || sinusoidal)
        j.attribute("offset", p.offset);
      if (sinusoidal)
        j.attribute("layout", spell(sinusoidalLayouts, p.sinusoidal));
      if (sinusoidal || rotary)
        j.attribute("base", p.theta);
      if (rotary) {
        j.attribute("pairing", spell(ropePairings, p.pairing));
        j.attribute("rotary_dims", p.rotaryDimsOf(c.headDim));
        if (p.localTheta)
          j.attribute("local_base", p.localTheta);
        if (!p.unrotatedLayers.empty())
          j.attributeArray("unrotated_layers", [&] {
            for (int64_t layer : p.unrotatedLayers)
              j.value(layer);
          });
      }
      if (c.positionsBounded != learned)
        j.attribute("bounded", c.positionsBounded);
      const RopeScaling &k = p.scaling;
      if (!rotary || k.kind == RopeScalingKind::None)
        return;
      j.attributeObject("scaling", [&] {
        j.attribute("kind", spell(scalingKinds, k.kind));
        j.attribute("factor", k.factor);
        if (k.kind == RopeScalingKind::Yarn) {
          j.attribute("original_max_positions", k.originalMaxPositions);
          j.attribute("beta_fast", k.betaFast);
          j.attribute("beta_slow", k.betaSlow);
          j.attribute("truncate", k.truncate);
          if (k.attentionFactor)
            j.attribute("attention_factor", *k.attentionFactor);
          j.attribute("mscale", k.mscale);
          j.attribute("mscale_all_dim", k.mscaleAllDim);
        } else if (k.kind == RopeScalingKind::Llama3) {
          j.attribute("original_max_positions", k.originalMaxPositions);
          j.attribute("low_freq_factor", k.lowFreqFactor);
          j.attribute("high_freq_factor", k.highFreqFactor);
        } else if (k.kind == RopeScalingKind::LongRope) {
          j.attribute("original_max_positions", k.originalMaxPositions);
          if (k.attentionFactor)
            j.attribute("attention_factor", *k.attentionFactor);
          for (const auto &entry :
               {std::pair{"short_factor", &k.shortFactor},
                std::pair{"long_factor", &k.longFactor}})
            j.attributeArray(entry.first, [&] {
              for (double value : *entry.second)
                j.value(value);
            });
        }
      });
    });
    j.attributeObject("attention", [&] {
      j.attribute("qkv", spell(qkvStorages, c.attention.qkv));
      j.attribute("qkv_bias", c.attention.qkvBias);
      j.attribute("output_bias", c.attention.outputBias);
      if (c.attention.qkNorm)
        j.attribute("qk_norm", true);
      if (c.attention.sinks)
        j.attribute("sinks", true);
      if (c.attention.scale)
        j.attribute("scale", c.attention.scale);
      if (c.attention.softcap)
        j.attribute("softcap", c.attention.softcap);
      const std::vector<int64_t> &windows = c.attention.windows;
      if (windows.empty())
        return;
      if (llvm::all_equal(windows))
        j.attribute("window", windows.front());
      else
        j.attributeArray("windows", [&] {
          for (int64_t window : windows)
            j.value(window);
        });
    });
    j.attributeObject("mlp", [&] {
      j.attribute("kind", spell(mlpKinds, c.mlp.kind));
      if (c.mlp.kind == MlpKind::Gelu || c.mlp.kind == MlpKind::GeGlu)
        j.attribute("gelu", spell(geluForms, c.mlp.gelu));
      j.attribute("bias", c.mlp.bias);
      if (gateUp)
        j.attribute("fused_gate_up", true);
    });
    if (c.moe.numExperts > 0)
      j.attributeObject("moe", [&] {
        j.attribute("experts", c.moe.numExperts);
        j.attribute("top_k", c.moe.topK);
        j.attribute("ffn", c.moe.expertFfn);
        j.attribute("scoring", spell(moeScorings, c.moe.scoring));
        j.attribute("normalize", c.moe.normalize);
        if (!c.moe.denseLayers.empty())
          j.attributeArray("dense_layers", [&] {
            for (int64_t layer : c.moe.denseLayers)
              j.value(layer);
          });
        if (c.moe.routerBias)
          j.attribute("router_bias", true);
        if (c.moe.expertBias)
          j.attribute("expert_bias", true);
        if (c.moe.activation != MoeActivation::Swiglu) {
          j.attribute("activation", spell(moeActivations, c.moe.activation));
          j.attribute("alpha", c.moe.alpha);
          j.attribute("limit", c.moe.limit);
        }
        if (c.moe.stacked)
          j.attribute("stacked", true);
        if (c.moe.sharedFfn > 0)
          j.attribute("shared_ffn", c.moe.sharedFfn);
        if (c.moe.sharedGate)
          j.attribute("shared_gate", true);
      });
    j.attributeObject("block", [&] {
      j.attribute("pre_norm", c.block.preNorm);
      j.attribute("parallel", c.block.parallel);
      j.attribute("shared_norm", c.block.sharedNorm);
      j.attribute("final_norm", c.block.finalNorm);
      if (c.block.outputNorms)
        j.attribute("output_norms", true);
    });
    j.attributeObject("embedding", [&] {
      j.attribute("scale", c.embeddingScale);
      j.attribute("norm", c.embeddingNorm);
    });
    j.attributeObject("head", [&] {
      j.attribute("tied", c.tieEmbeddings);
      j.attribute("bias", c.headBias);
      if (c.logitSoftcap)
        j.attribute("softcap", c.logitSoftcap);
    });
    j.attributeObject("weights", [&] {
      j.attribute("layout", c.linearOutIn ? "out_in" : "in_out");
      if (n.weightSuffix != "weight")
        j.attribute("weight_suffix", n.weightSuffix);
      if (n.biasSuffix != "bias")
        j.attribute("bias_suffix", n.biasSuffix);
      auto list = [&](const char *key, const std::vector<std::string> &items) {
        if (!items.empty())
          j.attributeArray(key, [&] {
            for (const std::string &item : items)
              j.value(item);
          });
      };
      list("prefixes", n.prefixes);
      list("ignored_suffixes", n.ignoredSuffixes);
      list("ignored_prefixes", n.ignoredPrefixes);
      auto name = [&](const char *key, const std::string &value, bool used) {
        if (used)
          j.attribute(key, value);
      };
      name("token_embedding", n.tokenEmbedding, true);
      name("position_embedding", n.positionEmbedding, learned);
      name("embedding_norm", n.embeddingNorm, c.embeddingNorm);
      name("layer", n.layer, true);
      name("attention_norm", n.attentionNorm, true);
      name("query", n.query, separate);
      name("key", n.key, separate);
      name("value", n.value, separate);
      name("qkv", n.qkv, !separate);
      name("query_norm", n.queryNorm, c.attention.qkNorm);
      name("key_norm", n.keyNorm, c.attention.qkNorm);
      name("output", n.output, true);
      name("mlp_norm", n.mlpNorm, !(c.block.parallel && c.block.sharedNorm));
      bool dense = c.hasDenseMlp(), moe = c.moe.numExperts > 0;
      name("gate", n.gate, dense && c.mlp.gated() && !gateUp);
      name("up", n.up, dense && !gateUp);
      name("gate_up", n.gateUp, dense && gateUp);
      name("down", n.down, dense);
      name("router", n.router, moe);
      name("expert", n.expert, moe);
      bool shared = moe && c.moe.sharedFfn > 0;
      name("expert_gate", n.expertGate, moe && (!c.moe.stacked || shared));
      name("expert_up", n.expertUp, moe && (!c.moe.stacked || shared));
      name("expert_gate_up", n.expertGateUp, moe && c.moe.stacked);
      name("expert_down", n.expertDown, moe);
      name("sinks", n.sinks, c.attention.sinks);
      name("shared_expert", n.sharedExpert, shared);
      name("shared_expert_gate", n.sharedExpertGate, moe && c.moe.sharedGate);
      name("stacked_experts", n.stackedExperts, !n.stackedExperts.empty());
      name("stacked_router", n.stackedRouter, !n.stackedRouter.empty());
      name("final_norm", n.finalNorm, c.block.finalNorm);
      name("attention_output_norm", n.attentionOutputNorm, c.block.outputNorms);
      name("mlp_output_norm", n.mlpOutputNorm, c.block.outputNorms);
      name("head", n.head, !c.tieEmbeddings || c.headBias);
    });
  });
  os << "\n";
  return text;
}
