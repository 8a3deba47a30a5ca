//===- ModelConfig.cpp - Hugging Face model descriptions ------------------===//

#include "attn/Compiler/ModelConfig.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::attn;
using llvm::json::Object;
using JsonValue = llvm::json::Value;

namespace {

/// Reads typed keys of one config object; every error names the file and
/// the key, and the first one wins.
class ConfigReader {
public:
  ConfigReader(const Object &object, llvm::StringRef fileName)
      : object(object), fileName(fileName) {}

  /// A positive integer no larger than `limit`; `fallback` when the key is
  /// absent or null (nullopt: the key is required); 0 once rejected.
  int64_t positive(llvm::StringRef key, std::optional<int64_t> fallback,
                   int64_t limit) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull()) {
      if (!fallback)
        fail("missing key '" + key + "'");
      return fallback.value_or(0);
    }
    std::optional<int64_t> integer = value->getAsInteger();
    if (!integer || value->kind() == JsonValue::Boolean) {
      fail("key '" + key + "' must be an integer, got " + render(*value));
      return 0;
    }
    if (*integer <= 0) {
      fail("key '" + key + "' must be positive, got " +
           std::to_string(*integer));
      return 0;
    }
    if (*integer > limit) {
      fail("key '" + key + "' is " + std::to_string(*integer) +
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
      fail("key '" + key + "' must be a positive number, got " +
           render(*value));
      return fallback;
    }
    if (*number < std::numeric_limits<float>::min() ||
        *number > std::numeric_limits<float>::max()) {
      fail("key '" + key + "' is " + render(*value) +
           ", outside the f32 range the model computes in");
      return fallback;
    }
    return *number;
  }

  /// Whether the key is present and not null.
  bool has(llvm::StringRef key) const {
    const JsonValue *value = object.get(key);
    return value && !value->getAsNull();
  }

  bool boolean(llvm::StringRef key, bool fallback) {
    const JsonValue *value = object.get(key);
    if (!value || value->getAsNull())
      return fallback;
    std::optional<bool> flag = value->getAsBoolean();
    if (!flag) {
      fail("key '" + key + "' must be true or false, got " + render(*value));
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
      fail("key '" + key + "' must be a string, got " + render(*value));
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
      fail("key '" + key + "' is not supported: " + what + " (got " +
           render(*value) + ")");
  }

  void fail(const llvm::Twine &message) {
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
  const Object &object;
  llvm::StringRef fileName;
  std::optional<std::string> error;
};

// Sanity limits: far above any model this compiler is meant for, low enough
// that sizes stay far from int64 overflow.
constexpr int64_t kMaxWidth = 1 << 16;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxPositions = 1 << 20;
constexpr int64_t kMaxHeads = 4096;

bool isFalse(const JsonValue &value) { return value.getAsBoolean() == false; }

void checkDivides(ConfigReader &reader, llvm::StringRef bigKey, int64_t big,
                  llvm::StringRef smallKey, int64_t small) {
  if (small > 0 && big % small != 0)
    reader.fail(smallKey + " (" + llvm::Twine(small) + ") does not divide " +
                bigKey + " (" + llvm::Twine(big) + ")");
}

ModelConfig readGpt2(ConfigReader &reader) {
  ModelConfig config;
  config.family = ModelFamily::Gpt2;
  config.numLayers = reader.positive("n_layer", std::nullopt, kMaxLayers);
  config.hiddenSize = reader.positive("n_embd", std::nullopt, kMaxWidth);
  config.numHeads = reader.positive("n_head", std::nullopt, kMaxHeads);
  config.numKvHeads = config.numHeads;
  config.intermediateSize =
      reader.positive("n_inner", 4 * config.hiddenSize, 4 * kMaxWidth);
  config.maxPositions =
      reader.positive("n_positions", std::nullopt, kMaxPositions);
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  config.normEpsilon = reader.positiveNumber("layer_norm_epsilon", 1e-5);
  config.tieEmbeddings = true;
  checkDivides(reader, "n_embd", config.hiddenSize, "n_head", config.numHeads);
  if (config.numHeads > 0)
    config.headDim = config.hiddenSize / config.numHeads;

  std::string activation = reader.string("activation_function", "gelu_new");
  // gelu_fast computes the same tanh formula as gelu_new.
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh" ||
      activation == "gelu_fast")
    config.gelu = GeluApproximation::Tanh;
  else if (activation == "gelu")
    config.gelu = GeluApproximation::Erf;
  else
    reader.fail("key 'activation_function' is " +
                ConfigReader::quote(activation) +
                "; supported: gelu_new, gelu_pytorch_tanh, gelu_fast, gelu");

  reader.unsupportedUnless("scale_attn_by_inverse_layer_idx", isFalse,
                           "per-layer attention scaling");
  reader.unsupportedUnless("add_cross_attention", isFalse,
                           "cross-attention (decoder-only models only)");
  reader.unsupportedUnless(
      "scale_attn_weights",
      [](const JsonValue &v) { return v.getAsBoolean() == true; },
      "unscaled attention scores");
  return config;
}

ModelConfig readLlama(ConfigReader &reader) {
  ModelConfig config;
  config.family = ModelFamily::Llama;
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
  config.normEpsilon = reader.positiveNumber("rms_norm_eps", 1e-6);
  config.ropeTheta = reader.positiveNumber("rope_theta", 10000.0);
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

  std::string activation = reader.string("hidden_act", "silu");
  if (activation != "silu")
    reader.fail("key 'hidden_act' is " + ConfigReader::quote(activation) +
                "; supported: silu");
  reader.unsupportedUnless(
      "rope_scaling", [](const JsonValue &) { return false; },
      "scaled RoPE (linear, dynamic, yarn, llama3) is not "
      "implemented yet");
  reader.unsupportedUnless("attention_bias", isFalse,
                           "biases on the attention projections");
  reader.unsupportedUnless("mlp_bias", isFalse,
                           "biases on the MLP projections");
  return config;
}

/// Deepest nesting any config needs (HF configs nest 2-3 levels); the
/// runtime's JSON reader has the same bound.
constexpr int kMaxJsonDepth = 64;

/// Whether arrays and objects nest deeper than `limit`, found by a scan that
/// skips strings. llvm::json::parse recurses once per level with no bound,
/// so a config of a few hundred KB of '[' would overflow the stack.
bool nestsDeeperThan(llvm::StringRef json, int limit) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit)
        return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

} // namespace

llvm::Expected<ModelConfig>
mlir::attn::parseModelConfig(llvm::StringRef json, llvm::StringRef fileName) {
  if (nestsDeeperThan(json, kMaxJsonDepth))
    return llvm::createStringError(fileName +
                                   ": not valid JSON: nested deeper than " +
                                   llvm::Twine(kMaxJsonDepth) + " levels");
  llvm::Expected<JsonValue> parsed = llvm::json::parse(json);
  if (!parsed)
    return llvm::createStringError(
        fileName + ": not valid JSON: " + llvm::toString(parsed.takeError()));
  const Object *object = parsed->getAsObject();
  if (!object)
    return llvm::createStringError(fileName + ": expected a JSON object");
  ConfigReader reader(*object, fileName);
  std::string modelType = reader.string("model_type", "");
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  if (modelType.empty())
    return llvm::createStringError(fileName + ": missing key 'model_type'");

  ModelConfig config;
  if (modelType == "gpt2")
    config = readGpt2(reader);
  else if (modelType == "llama")
    config = readLlama(reader);
  else
    return llvm::createStringError(
        fileName + ": model_type " + ConfigReader::quote(modelType) +
        " is not supported (supported: gpt2, llama)");
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  return config;
}

llvm::Expected<ModelConfig> mlir::attn::loadModelConfig(llvm::StringRef path) {
  llvm::SmallString<256> file(path);
  if (llvm::sys::fs::is_directory(file))
    llvm::sys::path::append(file, "config.json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        file + ": cannot read: " + buffer.getError().message());
  return parseModelConfig((*buffer)->getBuffer(), file);
}

int64_t WeightSpec::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::vector<WeightSpec> mlir::attn::modelWeights(const ModelConfig &config) {
  std::vector<WeightSpec> weights;
  auto add = [&](std::string name, llvm::ArrayRef<int64_t> shape,
                 WeightRole role, int64_t layer = -1) {
    weights.push_back(
        {std::move(name), llvm::SmallVector<int64_t, 2>(shape), role, layer});
  };
  int64_t d = config.hiddenSize, f = config.intermediateSize,
          v = config.vocabSize;
  if (config.family == ModelFamily::Gpt2) {
    add("wte.weight", {v, d}, WeightRole::Embedding);
    add("wpe.weight", {config.maxPositions, d}, WeightRole::Embedding);
    for (int64_t i = 0; i < config.numLayers; ++i) {
      std::string p = "h." + std::to_string(i) + ".";
      add(p + "ln_1.weight", {d}, WeightRole::Norm, i);
      add(p + "ln_1.bias", {d}, WeightRole::Norm, i);
      add(p + "attn.c_attn.weight", {d, 3 * d}, WeightRole::Attention, i);
      add(p + "attn.c_attn.bias", {3 * d}, WeightRole::Attention, i);
      add(p + "attn.c_proj.weight", {d, d}, WeightRole::Attention, i);
      add(p + "attn.c_proj.bias", {d}, WeightRole::Attention, i);
      add(p + "ln_2.weight", {d}, WeightRole::Norm, i);
      add(p + "ln_2.bias", {d}, WeightRole::Norm, i);
      add(p + "mlp.c_fc.weight", {d, f}, WeightRole::Mlp, i);
      add(p + "mlp.c_fc.bias", {f}, WeightRole::Mlp, i);
      add(p + "mlp.c_proj.weight", {f, d}, WeightRole::Mlp, i);
      add(p + "mlp.c_proj.bias", {d}, WeightRole::Mlp, i);
    }
    add("ln_f.weight", {d}, WeightRole::Norm);
    add("ln_f.bias", {d}, WeightRole::Norm);
    return weights;
  }

  int64_t qf = config.queryFeatures(), kvf = config.kvFeatures();
  add("model.embed_tokens.weight", {v, d}, WeightRole::Embedding);
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {d}, WeightRole::Norm, i);
    add(p + "self_attn.q_proj.weight", {qf, d}, WeightRole::Attention, i);
    add(p + "self_attn.k_proj.weight", {kvf, d}, WeightRole::Attention, i);
    add(p + "self_attn.v_proj.weight", {kvf, d}, WeightRole::Attention, i);
    add(p + "self_attn.o_proj.weight", {d, qf}, WeightRole::Attention, i);
    add(p + "post_attention_layernorm.weight", {d}, WeightRole::Norm, i);
    add(p + "mlp.gate_proj.weight", {f, d}, WeightRole::Mlp, i);
    add(p + "mlp.up_proj.weight", {f, d}, WeightRole::Mlp, i);
    add(p + "mlp.down_proj.weight", {d, f}, WeightRole::Mlp, i);
  }
  add("model.norm.weight", {d}, WeightRole::Norm);
  if (!config.tieEmbeddings)
    add("lm_head.weight", {v, d}, WeightRole::Output);
  return weights;
}

std::vector<std::string>
mlir::attn::weightNamePrefixes(const ModelConfig &config) {
  if (config.family == ModelFamily::Gpt2)
    return {"transformer."};
  return {};
}

std::vector<std::string>
mlir::attn::ignoredTensorSuffixes(const ModelConfig &config) {
  if (config.family == ModelFamily::Gpt2)
    return {".attn.bias", ".attn.masked_bias", "lm_head.weight"};
  std::vector<std::string> suffixes = {".rotary_emb.inv_freq"};
  if (config.tieEmbeddings)
    suffixes.push_back("lm_head.weight");
  return suffixes;
}
