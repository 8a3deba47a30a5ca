//===- ConfigReader.h - typed keys of a config.json -------------*- C++ -*-===//
//
// What every family reader (families/*.cpp) uses to read config.json: typed
// keys with defaults and limits, every error naming the file and the key
// (the first error wins), and the rejection of keys that select what the
// model description cannot express.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_COMPILER_CONFIGREADER_H
#define ATTN_LIB_COMPILER_CONFIGREADER_H

#include "attn/Compiler/ModelConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace attn {

using JsonValue = llvm::json::Value;

/// Reads typed keys of one config object; every error names the file and
/// the key, and the first one wins.
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &object, llvm::StringRef fileName)
      : object(object), fileName(fileName) {}

  /// A positive integer no larger than `limit`; `fallback` when the key is
  /// absent or null (nullopt: the key is required); 0 once rejected.
  int64_t positive(llvm::StringRef key, std::optional<int64_t> fallback,
                   int64_t limit) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull()) {
      if (!fallback)
        fail("missing key '" + name(key) + "'");
      return fallback.value_or(0);
    }
    std::optional<int64_t> integer = value->getAsInteger();
    if (!integer || value->kind() == JsonValue::Boolean) {
      fail("key '" + name(key) + "' must be an integer, got " +
           render(*value));
      return 0;
    }
    if (*integer <= 0) {
      fail("key '" + name(key) + "' must be positive, got " +
           std::to_string(*integer));
      return 0;
    }
    if (*integer > limit) {
      fail("key '" + name(key) + "' is " + std::to_string(*integer) +
           ", larger than the supported " + std::to_string(limit));
      // Not the value: later defaults multiply it (n_inner = 4 n_embd).
      return 0;
    }
    return *integer;
  }

  /// A positive number that stays positive and finite as an f32 (the attn
  /// IR holds epsilons and RoPE theta as f32 attributes); `fallback` when
  /// absent or null.
  double positiveNumber(llvm::StringRef key, double fallback) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number) || *number <= 0) {
      fail("key '" + name(key) + "' must be a positive number, got " +
           render(*value));
      return fallback;
    }
    if (*number < std::numeric_limits<float>::min() ||
        *number > std::numeric_limits<float>::max()) {
      fail("key '" + name(key) + "' is " + render(*value) +
           ", outside the f32 range the model computes in");
      return fallback;
    }
    return *number;
  }

  /// A non-negative integer no larger than `limit`, `fallback` when absent
  /// or null.
  int64_t nonNegative(llvm::StringRef key, int64_t fallback, int64_t limit) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    std::optional<int64_t> integer = value->getAsInteger();
    if (!integer || value->kind() == JsonValue::Boolean || *integer < 0 ||
        *integer > limit) {
      fail("key '" + name(key) + "' must be an integer in [0, " +
           std::to_string(limit) + "], got " + render(*value));
      return fallback;
    }
    return *integer;
  }

  /// A finite number; nullopt when absent or null (or once rejected).
  std::optional<double> number(llvm::StringRef key) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return std::nullopt;
    std::optional<double> number = value->getAsNumber();
    if (!number || !std::isfinite(*number)) {
      fail("key '" + name(key) + "' must be a number, got " + render(*value));
      return std::nullopt;
    }
    return *number;
  }

  /// The object at `key`; null when absent or null (or once rejected).
  const llvm::json::Object *objectAt(llvm::StringRef key) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return nullptr;
    const llvm::json::Object *inner = value->getAsObject();
    if (!inner)
      fail("key '" + name(key) + "' must be an object, got " + render(*value));
    return inner;
  }

  /// A reader of `inner`, the object at `key`: its messages name keys as
  /// `key.inner_key`, and its first error is this reader's.
  ConfigReader nested(const llvm::json::Object &inner, llvm::StringRef key) {
    ConfigReader reader(inner, fileName);
    reader.prefix = name(key) + ".";
    reader.parent = this;
    return reader;
  }

  /// `key` as messages name it (with the path of a nested reader).
  std::string name(llvm::StringRef key) const { return prefix + key.str(); }

  /// The keys and values this reader reads.
  const llvm::json::Object &entries() const { return object; }

  /// Whether the key is present and not null.
  bool has(llvm::StringRef key) const {
    const JsonValue *value = object.get(key);
    return value && !value->getAsNull();
  }

  /// Whether the key is present with the value null.
  bool isNull(llvm::StringRef key) const {
    const JsonValue *value = object.get(key);
    return value && value->getAsNull();
  }

  /// A list of strings, or nullopt when absent or null.
  std::optional<std::vector<std::string>> stringList(llvm::StringRef key) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return std::nullopt;
    const llvm::json::Array *array = value->getAsArray();
    std::vector<std::string> strings;
    for (size_t i = 0; array && i < array->size(); ++i) {
      std::optional<llvm::StringRef> text = (*array)[i].getAsString();
      if (!text) {
        fail("key '" + name(key) + "' entry " + std::to_string(i) +
             " must be a string, got " + render((*array)[i]));
        return std::nullopt;
      }
      strings.push_back(text->str());
    }
    if (!array) {
      fail("key '" + name(key) + "' must be a list of strings, got " +
           render(*value));
      return std::nullopt;
    }
    return strings;
  }

  /// A list of distinct layer indices below `layers`; empty when absent or
  /// null.
  std::vector<int64_t> layerList(llvm::StringRef key, int64_t layers) {
    const JsonValue *value = object.get(key);
    std::vector<int64_t> list;
    if (!value || value->getAsNull())
      return list;
    const llvm::json::Array *array = value->getAsArray();
    if (!array) {
      fail("key '" + name(key) + "' must be a list of layer indices, got " +
           render(*value));
      return list;
    }
    for (size_t i = 0; i < array->size(); ++i) {
      std::optional<int64_t> layer = (*array)[i].getAsInteger();
      if (!layer || (*array)[i].kind() == JsonValue::Boolean || *layer < 0 ||
          *layer >= layers || llvm::is_contained(list, *layer)) {
        fail("key '" + name(key) + "' entry " + std::to_string(i) +
             " must be a distinct layer index below " + std::to_string(layers) +
             ", got " + render((*array)[i]));
        return {};
      }
      list.push_back(*layer);
    }
    return list;
  }

  bool boolean(llvm::StringRef key, bool fallback) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    std::optional<bool> flag = value->getAsBoolean();
    if (!flag) {
      fail("key '" + name(key) + "' must be true or false, got " +
           render(*value));
      return fallback;
    }
    return *flag;
  }

  std::string string(llvm::StringRef key, llvm::StringRef fallback) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback.str();
    std::optional<llvm::StringRef> text = value->getAsString();
    if (!text) {
      fail("key '" + name(key) + "' must be a string, got " + render(*value));
      return fallback.str();
    }
    return text->str();
  }

  /// Rejects a key that selects an option we do not implement unless it is
  /// absent, null, or equal to its harmless default.
  void unsupportedUnless(llvm::StringRef key,
                         llvm::function_ref<bool(const JsonValue &)> harmless,
                         llvm::StringRef what) {
    const JsonValue *value = object.get(key);
    if (value && !value->getAsNull() && !harmless(*value))
      fail("key '" + name(key) + "' is not supported: " + what + " (got " +
           render(*value) + ")");
  }

  /// Rejects every key not in `known`, naming it and what is known (for
  /// hand-written files, where a misspelt key must not pass as a default).
  void onlyKeys(llvm::ArrayRef<llvm::StringRef> known) {
    for (const auto &entry : object) {
      if (llvm::is_contained(known, entry.first.str()))
        continue;
      std::string list;
      for (llvm::StringRef key : known)
        list += (list.empty() ? "" : ", ") + key.str();
      return fail("unknown key " + quote(name(entry.first)) + " (known: " +
                  list + ")");
    }
  }

  void fail(const llvm::Twine &message) {
    if (parent)
      return parent->fail(message);
    if (!error)
      error = (fileName + ": " + message).str();
  }

  llvm::Error takeError() {
    if (!error)
      return llvm::Error::success();
    return llvm::createStringError(*error);
  }

  /// `'text'` with the escapes of a JSON string (control bytes as \n,
  /// \u001b, ...), shortened: a hostile value cannot break the one-line
  /// message.
  static std::string quote(llvm::StringRef text) {
    std::string json = render(JsonValue(text.str()));
    if (json.size() >= 2 && json.front() == '"' && json.back() == '"')
      json = json.substr(1, json.size() - 2);
    else if (!json.empty() && json.front() == '"')
      json = json.substr(1);
    return "'" + json + "'";
  }

  static std::string render(const JsonValue &value) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << value;
    if (text.size() > 60)
      text = text.substr(0, 57) + "...";
    return text;
  }

private:
  const llvm::json::Object &object;
  llvm::StringRef fileName;
  std::optional<std::string> error;
  /// Set in a nested reader: the path before its keys, and the reader its
  /// errors go to.
  std::string prefix;
  ConfigReader *parent = nullptr;
};

// Sanity limits: far above any model this compiler is meant for, low enough
// that sizes stay far from int64 overflow.
inline constexpr int64_t kMaxWidth = 1 << 16;
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxVocab = 1 << 24;
inline constexpr int64_t kMaxPositions = 1 << 20;
inline constexpr int64_t kMaxHeads = 4096;
inline constexpr int64_t kMaxExperts = 4096;

/// A family's config.json reader: fills a ModelConfig (description and
/// weight names) from the keys, reporting through the reader.
using FamilyReader = ModelConfig (*)(ConfigReader &reader);

/// Fails unless `small` divides `big` (names both keys).
void checkDivides(ConfigReader &reader, llvm::StringRef bigKey, int64_t big,
                  llvm::StringRef smallKey, int64_t small);

/// Whether a JSON value is `false` (the harmless value of many flags).
inline bool isFalse(const JsonValue &value) {
  return value.getAsBoolean() == false;
}

/// The tanh and erf forms of GELU by their ACT2FN names, nullopt for
/// another name; kGeluNames lists them for messages.
inline std::optional<GeluApproximation> parseGelu(llvm::StringRef name) {
  // gelu_fast computes the same tanh formula as gelu_new.
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return GeluApproximation::Tanh;
  if (name == "gelu")
    return GeluApproximation::Erf;
  return std::nullopt;
}
inline constexpr const char *kGeluNames =
    "gelu_new, gelu_pytorch_tanh, gelu_fast, gelu";

/// The names within a layer of fairseq's decoder layer (OPT, XGLM):
/// self_attn_layer_norm, self_attn.{q,k,v,out}_proj, final_layer_norm (the
/// MLP's), fc1, fc2.
void setFairseqLayerNames(WeightNames &names);

/// GPT-2's size keys, which GPT-J keeps: n_embd, n_layer, n_head (all heads
/// hold keys and values), n_inner (default 4 * n_embd), n_positions
/// (`positionsDefault` when absent, required when nullopt), vocab_size.
void readGpt2StyleSizes(ConfigReader &reader, ModelConfig &config,
                        std::optional<int64_t> positionsDefault);

/// An ungated MLP's activation at `key`: relu, or a GELU form.
void readMlpActivation(ConfigReader &reader, llvm::StringRef key,
                       llvm::StringRef fallback, MlpSpec &mlp);

/// Where the LLaMA-style families' config classes differ in their defaults.
struct LlamaStyleDefaults {
  const char *family;
  /// num_key_value_heads when absent; 0: num_attention_heads. With
  /// kvHeadsNullIsAllHeads an explicit null means num_attention_heads, else
  /// it is an error.
  int64_t kvHeads = 0;
  bool kvHeadsNullIsAllHeads = true;
  /// head_dim when absent (null is then an error); 0: hidden / heads.
  int64_t headDim = 0;
  int64_t maxPositions = 2048;
  double epsilon = 1e-6;
  bool tieEmbeddings = false;
  const char *activation = "silu";
  /// The key of the MLP activation (Gemma 2 and 3: hidden_activation).
  const char *activationKey = "hidden_act";
  /// rope_theta when absent.
  double theta = 10000.0;
  /// Whether rope_parameters may be given per layer type (Gemma 3, v5):
  /// the sliding layers' entry sets positions.localTheta.
  bool perLayerTypeRope = false;
  /// Whether the family reads partial_rotary_factor (else it must be 1).
  bool partialRotary = false;
};

/// What LLaMA and its descendants share (families/Llama.cpp): dimensions,
/// RMSNorm, rotate-half RoPE, separate q/k/v/o projections, a gated MLP and
/// the model.layers.{}.* names.
ModelConfig readLlamaStyle(ConfigReader &reader,
                           const LlamaStyleDefaults &defaults);

/// `sliding_window` on every layer: its value, `fallback` when absent, none
/// when null.
void readSlidingWindow(ConfigReader &reader, ModelConfig &config,
                       std::optional<int64_t> fallback);

/// `layer_types` (one "full_attention" or "sliding_attention" per layer):
/// whether each layer slides a window; `defaultSliding(layer)` when the key
/// is absent or null. A wrong length or another type is an error naming
/// the key.
std::vector<bool> readLayerTypes(ConfigReader &reader, int64_t layers,
                                 llvm::function_ref<bool(int64_t)> defaultSliding);

/// `sliding_window` (`fallback` when absent, none when null) on the layers
/// `layer_types` calls "sliding_attention" (by default those
/// `defaultSliding` picks): Gemma 2 and 3, gpt-oss.
void readLayerTypeWindows(ConfigReader &reader, ModelConfig &config,
                          llvm::function_ref<bool(int64_t)> defaultSliding,
                          int64_t fallback);

/// A softcap key (Gemma 2's attn_logit_softcapping,
/// final_logit_softcapping): `fallback` when absent, 0 (none) when null, an
/// error unless positive.
double readSoftcap(ConfigReader &reader, llvm::StringRef key, double fallback);

/// Qwen2's, Qwen3's and Qwen2-MoE's windows: with use_sliding_window,
/// `sliding_window` keys on the layers `layer_types` calls
/// "sliding_attention" (by default those from max_window_layers on; with
/// `alternating`, Qwen2-MoE's, the even layers below max_window_layers);
/// otherwise none.
void readQwenSlidingWindows(ConfigReader &reader, ModelConfig &config,
                            bool alternating = false);

/// Reads RoPE's base and frequency scaling into `config.positions`, for
/// every family with rotary embeddings (RopeScaling.cpp):
/// - `rope_theta` (default: `positions.theta` as the family set it);
/// - `rope_scaling` (transformers v4: the kind under `type` or `rope_type`)
///   or else `rope_parameters` (v5, which may also hold `rope_theta` and
///   `partial_rotary_factor`), into `positions.scaling`;
/// - `original_max_position_embeddings` at the top level (Phi-3 keeps it
///   there).
/// Call it once `headDim`, `maxPositions` and `positions.rotaryDims` are
/// set. Rejects, naming the key: an unknown or unsupported (`longrope`)
/// rope_type, a missing or non-positive factor, yarn and llama3 parameters
/// out of range.
void readRopeParameters(ConfigReader &reader, ModelConfig &config,
                        bool perLayerTypes = false);

/// One dict of RoPE parameters (`params`, within `reader`'s object):
/// rope_theta, partial_rotary_factor, rope_type and its keys, into
/// `config.positions`. readRopeParameters calls it on rope_scaling /
/// rope_parameters, or on each layer type's entry of the latter.
void readRopeDict(ConfigReader &reader, ConfigReader &params, ModelConfig &config);

/// Fails on the keys of mixture-of-experts layers in a family without them
/// (also inside a multimodal config's text_config).
void rejectMixtureOfExperts(ConfigReader &reader);

/// The experts of a Mixtral-style MoE (softmax over all, top-k, SwiGLU
/// experts): `expertsKey` experts of `ffnKey` features, num_experts_per_tok
/// of them per token (at most the experts: an error naming both keys).
void readMixtureOfExperts(ConfigReader &reader, ModelConfig &config,
                          llvm::StringRef expertsKey, llvm::StringRef ffnKey,
                          int64_t defaultExperts, int64_t defaultTopK,
                          int64_t defaultFfn);

/// LongRoPE's factor table at `key`: a list of `count` positive numbers
/// (one per rotary pair), or an error naming the key.
std::vector<double> readLongRopeFactors(ConfigReader &params,
                                        llvm::StringRef key, int64_t count);

/// Whether a config object is a hand-written model description (it holds
/// the key "attn_model_description") rather than an HF config.json.
bool isModelDescription(const llvm::json::Object &object);

/// A model description (ModelDescription.cpp, docs/model-description.md):
/// every field explicit, unknown keys and impossible combinations rejected.
ModelConfig readModelDescription(ConfigReader &reader);

// The family readers (families/<Family>.cpp), one per model_type.
ModelConfig readBloom(ConfigReader &reader);
/// What Gemma's families share (families/Gemma.cpp): RMSNorms scaling by
/// 1 + w, embeddings times float32(sqrt(hidden_size)), attention_bias on q,
/// k, v and o, no bidirectional attention.
void applyGemmaConventions(ConfigReader &reader, ModelConfig &config);

/// The defaults Gemma 2's and 3's config classes share: 4 KV heads (null is
/// an error), head_dim 256, tied, gelu_pytorch_tanh under
/// hidden_activation, 8192 positions.
LlamaStyleDefaults gemma2StyleDefaults(const char *family);

/// Gemma 2 and 3's attention and block (families/Gemma2.cpp):
/// query_pre_attn_scalar, attn_logit_softcapping (`softcap` when absent;
/// nullopt: the family never applies it), sliding windows on the layers
/// layer_types names (by default all but every `everyNthFull`-th), and the
/// sandwich norms.
void readGemmaAttention(ConfigReader &reader, ModelConfig &config,
                        int64_t everyNthFull, std::optional<double> softcap);

ModelConfig readGemma(ConfigReader &reader);
ModelConfig readGemma2(ConfigReader &reader);
ModelConfig readGemma3Text(ConfigReader &reader);
ModelConfig readGemma3(ConfigReader &reader);
ModelConfig readGpt2(ConfigReader &reader);
ModelConfig readGptNeox(ConfigReader &reader);
ModelConfig readGptj(ConfigReader &reader);
ModelConfig readLlama(ConfigReader &reader);
ModelConfig readMistral(ConfigReader &reader);
ModelConfig readGptOss(ConfigReader &reader);
ModelConfig readMixtral(ConfigReader &reader);
ModelConfig readOpt(ConfigReader &reader);
ModelConfig readPhi3(ConfigReader &reader);
ModelConfig readQwen2(ConfigReader &reader);
ModelConfig readQwen3(ConfigReader &reader);
/// Qwen3's attention on a LLaMA-style config (families/Qwen3.cpp): the
/// qk-norm, attention_bias on q, k, v and o.
void readQwen3Attention(ConfigReader &reader, ModelConfig &config);
ModelConfig readQwen3Moe(ConfigReader &reader);
ModelConfig readQwen2Moe(ConfigReader &reader);
/// Qwen2-MoE's and Qwen3-MoE's experts (num_experts, 0: none;
/// num_experts_per_tok, moe_intermediate_size, norm_topk_prob; mlp.gate,
/// mlp.experts.{e}.{gate,up,down}_proj) in layer i unless i is in
/// mlp_only_layers or (i + 1) is not a multiple of decoder_sparse_step;
/// with no sparse layer left, no MoE at all.
void readQwenExperts(ConfigReader &reader, ModelConfig &config,
                     int64_t defaultExperts, int64_t defaultTopK,
                     int64_t defaultFfn);
ModelConfig readSmolLM3(ConfigReader &reader);
ModelConfig readXglm(ConfigReader &reader);

} // namespace attn
} // namespace mlir

#endif // ATTN_LIB_COMPILER_CONFIGREADER_H
