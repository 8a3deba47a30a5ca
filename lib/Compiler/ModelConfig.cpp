//===- ModelConfig.cpp - a decoder-only model as data ---------------------===//
//
// The dispatch from model_type to its family reader (families/*.cpp), and
// what every consumer derives from a ModelConfig alone: the checkpoint's
// weights, their names and shapes.
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/ModelConfig.h"

#include "GgufConfig.h"

#include "ConfigReader.h"

#include <cstring>

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::checkDivides(ConfigReader &reader, llvm::StringRef bigKey,
                              int64_t big, llvm::StringRef smallKey,
                              int64_t small) {
  if (small > 0 && big % small != 0)
    reader.fail(smallKey + " (" + llvm::Twine(small) + ") does not divide " +
                bigKey + " (" + llvm::Twine(big) + ")");
}

void mlir::attn::setFairseqLayerNames(WeightNames &n) {
  n.attentionNorm = "self_attn_layer_norm.";
  n.query = "self_attn.q_proj.";
  n.key = "self_attn.k_proj.";
  n.value = "self_attn.v_proj.";
  n.output = "self_attn.out_proj.";
  n.mlpNorm = "final_layer_norm.";
  n.up = "fc1.";
  n.down = "fc2.";
}

void mlir::attn::readGpt2StyleSizes(ConfigReader &reader, ModelConfig &config,
                                    std::optional<int64_t> positionsDefault) {
  config.numLayers = reader.positive("n_layer", std::nullopt, kMaxLayers);
  config.hiddenSize = reader.positive("n_embd", std::nullopt, kMaxWidth);
  config.numHeads = reader.positive("n_head", std::nullopt, kMaxHeads);
  config.numKvHeads = config.numHeads;
  config.intermediateSize =
      reader.positive("n_inner", 4 * config.hiddenSize, 4 * kMaxWidth);
  config.maxPositions =
      reader.positive("n_positions", positionsDefault, kMaxPositions);
  config.positionsBounded = true;
  config.maxPositionsKey = "n_positions";
  config.vocabSize = reader.positive("vocab_size", std::nullopt, kMaxVocab);
  checkDivides(reader, "n_embd", config.hiddenSize, "n_head", config.numHeads);
  if (config.numHeads > 0)
    config.headDim = config.hiddenSize / config.numHeads;
}

void mlir::attn::readMlpActivation(ConfigReader &reader, llvm::StringRef key,
                                   llvm::StringRef fallback, MlpSpec &mlp) {
  std::string activation = reader.string(key, fallback);
  if (activation == "relu") {
    mlp.kind = MlpKind::Relu;
  } else if (std::optional<GeluApproximation> gelu = parseGelu(activation)) {
    mlp.kind = MlpKind::Gelu;
    mlp.gelu = *gelu;
  } else {
    reader.fail("key '" + key + "' is " + ConfigReader::quote(activation) +
                "; supported: relu, " + kGeluNames);
  }
}

namespace {

struct FamilyEntry {
  const char *modelType;
  FamilyReader read;
};

/// Every family: adding one is a reader in families/ and a line here.
const FamilyEntry families[] = {
    {"bloom", readBloom},          {"gemma", readGemma},
    {"gemma2", readGemma2},        {"gemma3", readGemma3},
    {"gemma3_text", readGemma3Text},
    {"gpt2", readGpt2},            {"gpt_neox", readGptNeox},
    {"gpt_oss", readGptOss},
    {"gptj", readGptj},            {"llama", readLlama},
    {"mistral", readMistral},      {"mixtral", readMixtral},
    {"opt", readOpt},              {"phi3", readPhi3},
    {"qwen2", readQwen2},          {"qwen2_moe", readQwen2Moe},
    {"qwen3", readQwen3},          {"qwen3_moe", readQwen3Moe},
    {"smollm3", readSmolLM3},
    {"xglm", readXglm},
};

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

/// The first key that an object of valid JSON text holds twice, if any.
/// llvm::json keeps one of the two silently; Python's json keeps the last:
/// either way a value of the file would be ignored. Keys compare after
/// decoding the escapes of one UTF-16 unit (\n, \u0061, ...).
std::optional<std::string> firstDuplicateKey(llvm::StringRef json) {
  std::vector<std::optional<llvm::StringSet<>>> scopes; // nullopt: an array
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '{') {
      scopes.emplace_back(llvm::StringSet<>());
    } else if (c == '[') {
      scopes.emplace_back(std::nullopt);
    } else if (c == '}' || c == ']') {
      scopes.pop_back();
    } else if (c == '"') {
      std::string text;
      for (++i; i < json.size() && json[i] != '"'; ++i) {
        if (json[i] != '\\') {
          text += json[i];
          continue;
        }
        char e = json[++i];
        if (e == 'u') {
          unsigned unit = 0;
          json.substr(i + 1, 4).getAsInteger(16, unit);
          i += 4;
          if (unit < 0x80)
            text += static_cast<char>(unit);
          else if (unit < 0x800)
            text += {static_cast<char>(0xC0 | unit >> 6),
                     static_cast<char>(0x80 | (unit & 0x3F))};
          else
            text += {static_cast<char>(0xE0 | unit >> 12),
                     static_cast<char>(0x80 | (unit >> 6 & 0x3F)),
                     static_cast<char>(0x80 | (unit & 0x3F))};
        } else {
          const char *from = "bfnrt", *to = "\b\f\n\r\t";
          const char *at = std::strchr(from, e);
          text += at ? to[at - from] : e;
        }
      }
      size_t next = json.find_first_not_of(" \t\r\n", i + 1);
      bool isKey = next != llvm::StringRef::npos && json[next] == ':';
      if (isKey && !scopes.empty() && scopes.back() &&
          !scopes.back()->insert(text).second)
        return text;
    }
  }
  return std::nullopt;
}

} // namespace

namespace {
/// What attn.rope needs of any family's description: its pairs of
/// dimensions come from an even head size, even when only the first
/// rotary_dims rotate (HF's GPT-J and GPT-NeoX accept an odd head size).
void checkRotaryHeadSize(ConfigReader &reader, const ModelConfig &config) {
  if (config.positions.kind == PositionKind::Rotary && config.headDim % 2 != 0)
    reader.fail("the head size (" + llvm::Twine(config.headDim) +
                ") is odd; rotary position embeddings in Attn need an even head "
                "size, also when only its first rotary dimensions rotate");
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
  if (std::optional<std::string> key = firstDuplicateKey(json))
    return llvm::createStringError(fileName + ": key " +
                                   ConfigReader::quote(*key) +
                                   " appears twice in one object");
  const llvm::json::Object *object = parsed->getAsObject();
  if (!object)
    return llvm::createStringError(fileName + ": expected a JSON object");
  ConfigReader reader(*object, fileName);
  if (isModelDescription(*object)) {
    ModelConfig config = readModelDescription(reader);
    checkRotaryHeadSize(reader, config);
    if (llvm::Error error = reader.takeError())
      return std::move(error);
    return config;
  }
  std::string modelType = reader.string("model_type", "");
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  if (modelType.empty())
    return llvm::createStringError(fileName + ": missing key 'model_type'");

  const FamilyEntry *family = nullptr;
  std::string supported;
  for (const FamilyEntry &entry : families) {
    if (modelType == entry.modelType)
      family = &entry;
    supported += (supported.empty() ? "" : ", ") + std::string(entry.modelType);
  }
  if (!family)
    return llvm::createStringError(
        fileName + ": model_type " + ConfigReader::quote(modelType) +
        " is not supported (supported: " + supported + ")");
  // The families whose readers take the mixture-of-experts keys.
  static constexpr llvm::StringLiteral moeFamilies[] = {"gpt_oss", "mixtral",
                                                        "qwen2_moe", "qwen3_moe"};
  if (!llvm::is_contained(moeFamilies, modelType))
    rejectMixtureOfExperts(reader);
  // gemma3's reader takes its text model and leaves the image part.
  for (const char *key : {"vision_config", "text_config", "audio_config"})
    if (modelType != "gemma3")
      reader.unsupportedUnless(
          key, [](const JsonValue &) { return false; },
          "multimodal models (vision or audio towers)");
  ModelConfig config = family->read(reader);
  checkRotaryHeadSize(reader, config);
  if (llvm::Error error = reader.takeError())
    return std::move(error);
  return config;
}

void mlir::attn::rejectMixtureOfExperts(ConfigReader &reader) {
  for (const char *key : {"num_local_experts", "num_experts", "num_experts_per_tok",
                          "n_routed_experts", "moe_intermediate_size"})
    reader.unsupportedUnless(
        key, [](const JsonValue &) { return false; },
        "mixture-of-experts layers");
}

void mlir::attn::readMixtureOfExperts(ConfigReader &reader, ModelConfig &config,
                                      llvm::StringRef expertsKey,
                                      llvm::StringRef ffnKey,
                                      int64_t defaultExperts,
                                      int64_t defaultTopK, int64_t defaultFfn) {
  MoeSpec &moe = config.moe;
  if (config.mlp.kind != MlpKind::SwiGlu)
    reader.fail("key 'hidden_act' must be silu for " + config.architecture +
                " (its experts compute silu(gate) * up)");
  moe.numExperts = reader.positive(expertsKey, defaultExperts, kMaxExperts);
  moe.topK = reader.positive("num_experts_per_tok", defaultTopK, kMaxExperts);
  moe.expertFfn = reader.positive(ffnKey, defaultFfn, 4 * kMaxWidth);
  if (moe.topK > moe.numExperts)
    reader.fail("num_experts_per_tok (" + llvm::Twine(moe.topK) +
                ") exceeds " + expertsKey + " (" + llvm::Twine(moe.numExperts) +
                "): a token cannot choose more experts than there are");
  moe.scoring = MoeScoring::SoftmaxTopK;
}

llvm::Expected<ModelConfig> mlir::attn::loadModelConfig(llvm::StringRef path) {
  llvm::SmallString<256> file(path);
  if (llvm::sys::fs::is_directory(file))
    llvm::sys::path::append(file, "config.json");
  // A GGUF file: the config.json its metadata stands for, read by the
  // family's own reader (runtime/src/GgufConfig.cpp).
  if (file.str().ends_with(".gguf")) {
    std::string json, error, format, headFormat;
    if (!attnrt::ggufConfigJson(file.str().str(), json, error, &format,
                                &headFormat))
      return llvm::createStringError(error);
    llvm::Expected<ModelConfig> config = parseModelConfig(
        json, (file + " (its metadata as config.json)").str());
    if (config) {
      config->sourceWeightFormat = format;
      config->sourceHeadFormat = headFormat;
    }
    return config;
  }
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

/// `pattern` with its "{}" replaced by `index`.
static std::string withIndex(std::string pattern, int64_t index) {
  size_t at = pattern.find("{}");
  if (at != std::string::npos)
    pattern.replace(at, 2, std::to_string(index));
  return pattern;
}

std::string mlir::attn::expertPrefix(const WeightNames &names, int64_t expert) {
  return withIndex(names.expert, expert);
}

std::string WeightNames::layerPrefix(int64_t index) const {
  return withIndex(layer, index);
}

std::vector<WeightSpec> mlir::attn::modelWeights(const ModelConfig &config) {
  std::vector<WeightSpec> weights;
  const WeightNames &names = config.names;
  auto add = [&](std::string name, llvm::ArrayRef<int64_t> shape,
                 WeightRole role, int64_t layer = -1) {
    weights.push_back(
        {std::move(name), llvm::SmallVector<int64_t, 2>(shape), role, layer, {}});
  };
  // A projection module: its weight in the checkpoint's layout, its bias.
  auto projection = [&](const std::string &module, int64_t out, int64_t in,
                        bool bias, WeightRole role, int64_t layer) {
    if (config.linearOutIn)
      add(module + names.weightSuffix, {out, in}, role, layer);
    else
      add(module + names.weightSuffix, {in, out}, role, layer);
    if (bias)
      add(module + names.biasSuffix, {out}, role, layer);
  };
  auto norm = [&](const std::string &module, int64_t layer) {
    int64_t d = config.hiddenSize;
    add(module + names.weightSuffix, {d}, WeightRole::Norm, layer);
    if (config.norm.hasBias())
      add(module + names.biasSuffix, {d}, WeightRole::Norm, layer);
  };

  int64_t d = config.hiddenSize, f = config.intermediateSize,
          v = config.vocabSize;
  int64_t qf = config.queryFeatures(), kvf = config.kvFeatures();
  add(names.tokenEmbedding + names.weightSuffix, {v, d}, WeightRole::Embedding);
  if (config.positions.kind == PositionKind::Learned)
    add(names.positionEmbedding + names.weightSuffix,
        {config.maxPositions + config.positions.offset, d},
        WeightRole::Embedding);
  if (config.embeddingNorm)
    norm(names.embeddingNorm, -1);
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = names.layerPrefix(i);
    norm(p + names.attentionNorm, i);
    bool qkvBias = config.attention.qkvBias;
    if (config.attention.qkv != QkvStorage::Separate) {
      projection(p + names.qkv, qf + 2 * kvf, d, qkvBias, WeightRole::Attention, i);
    } else {
      projection(p + names.query, qf, d, qkvBias, WeightRole::Attention, i);
      projection(p + names.key, kvf, d, qkvBias, WeightRole::Attention, i);
      projection(p + names.value, kvf, d, qkvBias, WeightRole::Attention, i);
    }
    if (config.attention.qkNorm) {
      add(p + names.queryNorm + names.weightSuffix, {config.headDim},
          WeightRole::Norm, i);
      add(p + names.keyNorm + names.weightSuffix, {config.headDim},
          WeightRole::Norm, i);
    }
    if (config.attention.sinks)
      add(p + names.sinks, {config.numHeads}, WeightRole::Attention, i);
    projection(p + names.output, d, qf, config.attention.outputBias,
               WeightRole::Attention, i);
    if (!(config.block.parallel && config.block.sharedNorm))
      norm(p + names.mlpNorm, i);
    if (config.block.outputNorms) {
      norm(p + names.attentionOutputNorm, i);
      norm(p + names.mlpOutputNorm, i);
    }
    if (config.isMoeLayer(i)) {
      const MoeSpec &moe = config.moe;
      projection(p + names.router, moe.numExperts, d, moe.routerBias, WeightRole::Mlp, i);
      if (!names.stackedRouter.empty()) // the whole tensor, renamed
        weights[weights.size() - (moe.routerBias ? 2 : 1)].orSliceOf = {
            p + names.stackedRouter + names.weightSuffix, {moe.numExperts, d}, 0};
      if (moe.sharedFfn > 0) {
        std::string shared = p + names.sharedExpert;
        projection(shared + names.expertGate, moe.sharedFfn, d, false, WeightRole::Mlp, i);
        projection(shared + names.expertUp, moe.sharedFfn, d, false, WeightRole::Mlp, i);
        projection(shared + names.expertDown, d, moe.sharedFfn, false, WeightRole::Mlp, i);
        if (moe.sharedGate)
          projection(p + names.sharedExpertGate, 1, d, false, WeightRole::Mlp, i);
      }
      if (moe.stacked) {
        // x @ W: [experts, in, out], biases [experts, out].
        int64_t experts = moe.numExperts, ffn = moe.expertFfn;
        std::string gateUp = p + names.expert + names.expertGateUp,
                    down = p + names.expert + names.expertDown;
        add(gateUp, {experts, d, 2 * ffn}, WeightRole::Mlp, i);
        if (moe.expertBias)
          add(gateUp + "_bias", {experts, 2 * ffn}, WeightRole::Mlp, i);
        add(down, {experts, ffn, d}, WeightRole::Mlp, i);
        if (moe.expertBias)
          add(down + "_bias", {experts, d}, WeightRole::Mlp, i);
        continue;
      }
      int64_t experts = moe.numExperts, ffn = moe.expertFfn;
      // Expert e's projection, or rows [row, row + rows) of its slab of a
      // stacked [experts, slabRows, columns] tensor.
      auto expertProjection = [&](const std::string &module, int64_t rows,
                                  int64_t columns, const char *stacked,
                                  int64_t slabRows, int64_t row, int64_t e) {
        projection(module, rows, columns, false, WeightRole::Mlp, i);
        if (names.stackedExperts.empty())
          return;
        WeightSpec::Slice &slice = weights.back().orSliceOf;
        slice.name = p + names.stackedExperts + stacked;
        slice.shape = {experts, slabRows, columns};
        slice.offset = (e * slabRows + row) * columns;
      };
      for (int64_t e = 0; e < experts; ++e) {
        std::string expert = p + expertPrefix(names, e);
        expertProjection(expert + names.expertGate, ffn, d, "gate_up_proj", 2 * ffn, 0, e);
        expertProjection(expert + names.expertUp, ffn, d, "gate_up_proj", 2 * ffn, ffn, e);
        expertProjection(expert + names.expertDown, d, ffn, "down_proj", d, 0, e);
      }
      continue;
    }
    if (config.mlp.fusedGateUp) {
      projection(p + names.gateUp, 2 * f, d, config.mlp.bias, WeightRole::Mlp, i);
    } else {
      if (config.mlp.gated())
        projection(p + names.gate, f, d, config.mlp.bias, WeightRole::Mlp, i);
      projection(p + names.up, f, d, config.mlp.bias, WeightRole::Mlp, i);
    }
    projection(p + names.down, d, f, config.mlp.bias, WeightRole::Mlp, i);
  }
  if (config.block.finalNorm)
    norm(names.finalNorm, -1);
  if (!config.tieEmbeddings)
    add(names.head + names.weightSuffix, {v, d}, WeightRole::Output);
  if (config.headBias)
    add(names.head + names.biasSuffix, {v}, WeightRole::Output);
  return weights;
}

std::vector<std::string>
mlir::attn::weightNamePrefixes(const ModelConfig &config) {
  return config.names.prefixes;
}

std::vector<std::string>
mlir::attn::ignoredTensorSuffixes(const ModelConfig &config) {
  return config.names.ignoredSuffixes;
}
