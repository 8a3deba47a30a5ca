//===- GgufModelWriter.cpp - test models as llama.cpp's GGUF files --------===//

#include "GgufModelWriter.h"

#include "GgmlTypes.h"
#include "GgufConfig.h"
#include "GgufNames.h"
#include "GgufWriter.h"
#include "Half.h"
#include "Safetensors.h"
#include "Support.h"
#include "WeightFiles.h"
#include "tokenizer/GgufTokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

namespace attn {
namespace modelgen {

using attnrt::GgmlType;
using Json = nlohmann::json;

namespace {

struct WeightType {
  const char *name;
  GgmlType type;
  uint32_t fileType; // llama.cpp's llama_ftype.
};

// q4_k_m is q4_k with the recipe below.
const WeightType weightTypes[] = {
    {"f32", GgmlType::F32, 0},    {"f16", GgmlType::F16, 1},
    {"bf16", GgmlType::BF16, 32}, {"q8_0", GgmlType::Q8_0, 7},
    {"q4_0", GgmlType::Q4_0, 2},  {"q4_1", GgmlType::Q4_1, 3},
    {"q5_0", GgmlType::Q5_0, 8},  {"q5_1", GgmlType::Q5_1, 9},
    {"q4_k", GgmlType::Q4_K, 14}, {"q5_k", GgmlType::Q5_K, 16},
    {"q6_k", GgmlType::Q6_K, 18}, {"q4_k_m", GgmlType::Q4_K, 15},
};

const WeightType *findWeightType(const std::string &name) {
  for (const WeightType &w : weightTypes)
    if (name == w.name)
      return &w;
  return nullptr;
}

/// llama.cpp's use_more_bits: the first and last eighth of the layers and
/// every third layer between get more bits in the _M recipes.
bool useMoreBits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 ||
         (layer - layers / 8) % 3 == 2;
}

/// The type of a 2-D weight `gguf` (a GGUF name) whose rows are `rowLength`
/// long, as llama-quantize (and the converter, for the plain types) choose;
/// `tied`: the model has no output.weight.
GgmlType matrixType(const WeightType &w, const std::string &gguf,
                    int64_t rowLength, int64_t layers, bool tied) {
  GgmlType type = w.type;
  int layer = -1;
  char tail[64] = "";
  std::sscanf(gguf.c_str(), "blk.%d.%63s", &layer, tail);
  std::string t = tail;
  // The router stays F32 (the converter's list; llama-quantize skips it).
  if (t == "ffn_gate_inp.weight")
    return GgmlType::F32;
  // llama-quantize keeps the output projection (a tied embedding is that
  // too) in Q6_K for every type below Q8_0; the converter writes the plain
  // types F32, F16, BF16 and Q8_0 as they are.
  bool quantized = w.type != GgmlType::F32 && w.type != GgmlType::F16 &&
                   w.type != GgmlType::BF16 && w.type != GgmlType::Q8_0;
  if (quantized &&
      (gguf == "output.weight" || (tied && gguf == "token_embd.weight")))
    type = GgmlType::Q6_K;
  // Q4_K_M: the experts' down projections count as ffn_down (llama-quantize
  // matches the name).
  if (std::string(w.name) == "q4_k_m" &&
      (t == "attn_v.weight" || t == "ffn_down.weight" ||
       t == "ffn_down_exps.weight") &&
      useMoreBits(layer, layers))
    type = GgmlType::Q6_K;
  const attnrt::GgmlTypeTraits &traits = attnrt::ggmlTypeTraits(type);
  if (rowLength % traits.blockSize == 0)
    return type;
  switch (type) { // llama-quantize's fallbacks for rows of partial blocks.
  case GgmlType::Q4_K:
    type = GgmlType::Q5_0;
    break;
  case GgmlType::Q5_K:
    type = GgmlType::Q5_1;
    break;
  case GgmlType::Q6_K:
    type = GgmlType::Q8_0;
    break;
  default:
    return GgmlType::F16;
  }
  return rowLength % attnrt::ggmlTypeTraits(type).blockSize == 0
             ? type
             : GgmlType::F16;
}

int64_t integer(const Json &config, const char *key, int64_t fallback) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? fallback : it->get<int64_t>();
}

/// The converter's tokenizer metadata for `dir`'s tokenizer.json: a
/// byte-level BPE as convert_hf_to_gguf's _set_vocab_gpt2 and gguf-py's
/// SpecialVocab write it (tokens, types, merges, the pre-tokenizer's
/// name); a SentencePiece BPE (byte fallback, LLaMA-2's or Gemma's
/// normalizer) as _set_vocab_sentencepiece writes it from a tokenizer.model
/// (tokens, scores, types, no merges), padded to `vocabSize` tokens. A
/// tokenizer.json has no scores:
/// a piece scores minus the rank of the first merge that makes it, so the
/// merge order the reader derives from the scores is the file's; pieces no
/// merge makes score below every merged one, as SentencePiece orders them.
bool addTokenizer(attnrt::GgufWriter &gguf, const std::string &dir,
                  int64_t vocabSize, std::string &error) {
  std::string text, configText;
  if (!attnrt::readFileText(dir + "/tokenizer.json", true, text, error) ||
      !attnrt::readFileText(dir + "/tokenizer_config.json", false, configText,
                            error))
    return false;
  Json root = Json::parse(text, nullptr, false);
  Json config = configText.empty() ? Json::object()
                                   : Json::parse(configText, nullptr, false);
  std::string where = dir + "/tokenizer.json: ";
  if (root.is_discarded() || config.is_discarded() || !root.is_object() ||
      !root.contains("model") || !root["model"].is_object()) {
    error = where + "not a tokenizer.json (or its tokenizer_config.json is "
                    "not JSON)";
    return false;
  }
  const Json &model = root["model"];
  if (model.value("type", "") != "BPE") {
    error = where + "only BPE tokenizers are written to GGUF so far";
    return false;
  }
  bool addSpacePrefix = false;
  bool sentencePiece = model.value("byte_fallback", false);
  std::string pre = "default";
  if (sentencePiece &&
      !attnrt::ggufSentencePieceForm(root.value("normalizer", Json()).dump(),
                                     root.value("pre_tokenizer", Json()).dump(),
                                     root.value("decoder", Json()).dump(),
                                     addSpacePrefix)) {
    error = where + "a BPE with byte fallback whose normalizer, "
                    "pre-tokenizer and decoder are not SentencePiece's "
                    "(LLaMA-2's or Gemma's)";
    return false;
  }
  if (!sentencePiece) {
    pre = attnrt::ggufPreTokenizerName(
        root.value("normalizer", Json()).dump(),
        root.value("pre_tokenizer", Json()).dump(),
        model.value("ignore_merges", false));
    if (pre.empty()) {
      error = where + "its normalizer and pre-tokenizer are none that "
                      "tokenizer.ggml.pre can name";
      return false;
    }
  }
  std::string unk = model.value("unk_token", Json()).is_string()
                        ? model["unk_token"].get<std::string>()
                        : "";
  std::map<int64_t, std::pair<std::string, int32_t>> byId; // Token, type.
  for (auto &[token, id] : model["vocab"].items())
    byId[id.get<int64_t>()] = {token, 1};
  for (const Json &added : root.value("added_tokens", Json::array())) {
    std::string content = added["content"].get<std::string>();
    byId[added["id"].get<int64_t>()] = {
        content, sentencePiece && content == unk ? 2   // Unknown.
                 : added.value("special", false) ? 3   // Control.
                                                 : 4}; // User-defined.
  }
  // As the converter, the list is padded with "[PAD<id>]" tokens to the
  // model's vocab_size (the embedding's rows): llama.cpp refuses a file
  // whose token count and embedding rows differ.
  int64_t count = std::max<int64_t>(
      byId.empty() ? 0 : byId.rbegin()->first + 1, vocabSize);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int64_t id = 0; id < count; ++id) {
    auto it = byId.find(id);
    std::string token =
        it == byId.end() ? "[PAD" + std::to_string(id) + "]" : it->second.first;
    int32_t type = it == byId.end() ? 5 : it->second.second; // 5: unused.
    if (sentencePiece && type == 1 && token.size() == 6 &&
        token.rfind("<0x", 0) == 0 && token.back() == '>')
      type = 6; // A byte piece.
    tokens.push_back(token);
    types.push_back(type);
  }
  std::vector<std::string> merges;
  for (const Json &m : model["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " +
                                         m[1].get<std::string>());
  gguf.setString("tokenizer.ggml.model", sentencePiece ? "llama" : "gpt2");
  gguf.setString("tokenizer.ggml.pre", pre);
  gguf.setStringArray("tokenizer.ggml.tokens", tokens);
  if (sentencePiece) {
    std::map<std::string, size_t> firstMerge;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      std::string merged = merges[rank];
      merged.erase(merged.find(' '), 1);
      firstMerge.emplace(merged, rank);
    }
    std::vector<float> scores;
    for (int64_t id = 0; id < count; ++id) {
      auto it = firstMerge.find(tokens[id]);
      scores.push_back(types[id] != 1           ? 0.0f
                       : it != firstMerge.end() ? -float(it->second)
                                                : -float(merges.size() + id));
    }
    gguf.setF32Array("tokenizer.ggml.scores", scores);
    gguf.setBool("tokenizer.ggml.add_space_prefix", addSpacePrefix);
  }
  gguf.setI32Array("tokenizer.ggml.token_type", types);
  if (!sentencePiece)
    gguf.setStringArray("tokenizer.ggml.merges", merges);
  auto setId = [&](const char *configKey, const char *ggufKey) {
    const Json *v = config.contains(configKey) ? &config[configKey] : nullptr;
    std::string name = !v || v->is_null() ? ""
                       : v->is_string()   ? v->get<std::string>()
                                          : v->value("content", "");
    for (int64_t id = 0; id < count && !name.empty(); ++id)
      if (tokens[id] == name) {
        gguf.setU32(ggufKey, uint32_t(id));
        return;
      }
  };
  setId("bos_token", "tokenizer.ggml.bos_token_id");
  setId("eos_token", "tokenizer.ggml.eos_token_id");
  if (sentencePiece)
    setId("unk_token", "tokenizer.ggml.unknown_token_id");
  // BOS/EOS are added when the post-processor's template starts/ends with
  // a special token.
  const Json post = root.value("post_processor", Json());
  bool hasTemplate = post.is_object() &&
                     post.value("type", "") == "TemplateProcessing" &&
                     post["single"].is_array() && !post["single"].empty();
  gguf.setBool("tokenizer.ggml.add_bos_token",
               hasTemplate && post["single"].front().contains("SpecialToken"));
  gguf.setBool("tokenizer.ggml.add_eos_token",
               hasTemplate && post["single"].size() > 1 &&
                   post["single"].back().contains("SpecialToken"));
  if (config.contains("chat_template") && config["chat_template"].is_string())
    gguf.setString("tokenizer.chat_template",
                   config["chat_template"].get<std::string>());
  return true;
}

} // namespace

bool isGgufWeightType(const std::string &type) {
  return findWeightType(type) != nullptr;
}

std::string ggufWeightTypes() {
  std::string list;
  for (const WeightType &w : weightTypes)
    list += std::string(list.empty() ? "" : ", ") + w.name;
  return list;
}

namespace {

/// Gemma 2's and 3's keys (GemmaModel, Gemma2Model, Gemma3Model.
/// set_gguf_parameters): the softcaps, the window, Gemma 3's local RoPE
/// base, and, when the config's layer_types are not llama.cpp's default
/// pattern (every second layer global for Gemma 2, every sixth for Gemma
/// 3), attention.sliding_window_pattern, which llama.cpp reads.
bool addGemmaKeys(attnrt::GgufWriter &gguf, const Json &config,
                  const std::string &arch, int64_t layers, std::string &error) {
  if (arch == "gemma")
    return true;
  const std::string prefix = arch + ".";
  bool gemma2 = arch == "gemma2";
  auto number = [&](const char *key) -> const Json * {
    auto it = config.find(key);
    return it == config.end() || it->is_null() ? nullptr : &*it;
  };
  // Which layers slide: layer_types, else HF's default pattern.
  std::vector<bool> sliding(size_t(std::max<int64_t>(layers, 0)));
  int64_t pattern = gemma2 ? 2 : integer(config, "sliding_window_pattern", 6);
  const Json *types = number("layer_types");
  for (int64_t l = 0; l < layers; ++l)
    sliding[size_t(l)] =
        types && types->is_array() && size_t(l) < types->size()
            ? (*types)[size_t(l)] == "sliding_attention"
            : pattern > 0 && (l + 1) % pattern != 0;
  bool anySliding = std::find(sliding.begin(), sliding.end(), true) !=
                    sliding.end();
  if (gemma2) {
    const Json *attnCap = number("attn_logit_softcapping");
    const Json *finalCap = number("final_logit_softcapping");
    if (!attnCap || !finalCap) {
      error = "the converter needs attn_logit_softcapping and "
              "final_logit_softcapping (null softcaps are not recorded: "
              "llama.cpp applies 50 and 30 without them)";
      return false;
    }
    gguf.setF32(prefix + "attn_logit_softcapping", attnCap->get<float>());
    gguf.setF32(prefix + "final_logit_softcapping", finalCap->get<float>());
  } else if (const Json *finalCap = number("final_logit_softcapping")) {
    if (finalCap->get<double>() != 0)
      gguf.setF32(prefix + "final_logit_softcapping", finalCap->get<float>());
  }
  if (!gemma2)
    gguf.setF32(prefix + "rope.freq_base_swa",
                config.value("rope_local_base_freq", 10000.0f));
  if (!anySliding && gemma2) {
    error = "a Gemma 2 without sliding layers cannot be recorded (llama.cpp "
            "always slides every second layer)";
    return false;
  }
  if (!anySliding)
    return true; // Gemma 3: no window key, no sliding layers.
  gguf.setU32(prefix + "attention.sliding_window",
              uint32_t(integer(config, "sliding_window", 4096)));
  // The period llama.cpp's set_swa_pattern must be given: layer l slides
  // unless l % period == period - 1.
  for (int64_t period = 1; period <= std::max<int64_t>(layers, 1); ++period) {
    bool matches = true;
    for (int64_t l = 0; l < layers && matches; ++l)
      matches = sliding[size_t(l)] == (l % period < period - 1);
    if (!matches)
      continue;
    if (period != (gemma2 ? 2 : 6))
      gguf.setU32(prefix + "attention.sliding_window_pattern",
                  uint32_t(period));
    return true;
  }
  error = "its layer_types are no pattern llama.cpp can record (every "
          "period-th layer global)";
  return false;
}

/// Phi-3's longrope as Phi3MiniModel.generate_extra_tensors writes it: the
/// factor tables as rope_factors_long/short.weight and the attention
/// factor llama.cpp multiplies by (the config's, else longrope's own
/// sqrt(1 + ln s / ln original), s the scaling factor).
bool addLongRope(attnrt::GgufWriter &gguf, const Json &config,
                 const std::string &prefix, int64_t rotaryDims,
                 std::string &error) {
  const Json &scaling = config["rope_scaling"];
  double original = double(integer(config, "original_max_position_embeddings",
                                   4096));
  double factor = scaling.contains("factor") && !scaling["factor"].is_null()
                      ? scaling["factor"].get<double>()
                      : double(integer(config, "max_position_embeddings", 0)) /
                            original;
  double attention =
      scaling.contains("attention_factor") &&
              !scaling["attention_factor"].is_null()
          ? scaling["attention_factor"].get<double>()
      : factor <= 1 ? 1.0
                    : std::sqrt(1 + std::log(factor) / std::log(original));
  gguf.setF32(prefix + "rope.scaling.attn_factor", float(attention));
  for (const char *which : {"long", "short"}) {
    const Json &list = scaling.value(std::string(which) + "_factor", Json());
    if (!list.is_array() || int64_t(list.size()) * 2 != rotaryDims) {
      error = std::string("rope_scaling.") + which + "_factor must hold " +
              std::to_string(rotaryDims / 2) + " factors, one per rotary pair";
      return false;
    }
    std::string data;
    for (const Json &f : list) {
      float value = f.get<float>();
      data.append(reinterpret_cast<const char *>(&value), 4);
    }
    gguf.addTensor(std::string("rope_factors_") + which + ".weight",
                   GgmlType::F32, {rotaryDims / 2}, std::move(data));
  }
  return true;
}

/// A tensor of the checkpoint being written: its Hugging Face name and
/// shape.
struct SourceTensor {
  std::string name;
  std::vector<int64_t> shape;
};
using ReadValues = std::function<bool(size_t index, std::vector<float> &values,
                                      std::string &error)>;

/// The GGUF file of the checkpoint whose config.json is `config`; `read`
/// gives tensor i's values as f32.
bool writeGguf(const Json &config, const std::vector<SourceTensor> &tensors,
               const ReadValues &read, const std::string &path,
               const std::string &typeName, std::string &error,
               const std::string &tokenizerDir) {
  const WeightType *weightType = findWeightType(typeName);
  if (!weightType) {
    error = "GGUF weight type '" + typeName + "' is not one of " +
            ggufWeightTypes();
    return false;
  }
  std::string modelType = config.value("model_type", "");
  std::string arch(attnrt::ggufArchitecture(modelType));
  auto refuse = [&](const std::string &why) {
    error = "cannot write " + modelType + " as GGUF: " + why;
    return false;
  };
  if (arch.empty())
    return refuse("only llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, "
                  "gpt2, gemma, gemma2, gemma3_text and phi3 models are "
                  "written as GGUF so far");
  bool gpt2 = arch == "gpt2";
  bool gemma = arch.rfind("gemma", 0) == 0;
  bool phi3 = arch == "phi3";
  // RoPE scaling: Llama 3's is a tensor of per-pair factors in llama files,
  // Phi-3's longrope two tensors; linear is two keys, which the converters
  // of Gemma, Gemma 2 and Phi-3 do not write.
  const Json scaling = config.value("rope_scaling", Json());
  const std::string ropeType =
      scaling.is_object() ? scaling.value("rope_type", scaling.value("type", ""))
                          : "";
  bool llama3Rope = ropeType == "llama3";
  bool longRope = ropeType == "longrope" || ropeType == "su";
  bool linearRope = ropeType == "linear";
  if (!scaling.is_null() && !(llama3Rope && arch == "llama") &&
      !(longRope && phi3) &&
      !(linearRope && !phi3 && arch != "gemma" && arch != "gemma2"))
    return refuse("rope_scaling " + (ropeType.empty() ? scaling.dump() : "'" + ropeType + "'") +
                  " is not written to GGUF files of the " + arch +
                  " architecture");
  bool windowed = config.value("use_sliding_window",
                                modelType == "mistral" || modelType == "mixtral");
  if (!gemma && !phi3 && windowed && config.contains("sliding_window") &&
      !config["sliding_window"].is_null())
    return refuse("GGUF files of the " + arch +
                  " architecture cannot record a sliding window");
  // Gemma and Gemma 2: llama.cpp's head is always the token embedding.
  if ((arch == "gemma" || arch == "gemma2") &&
      !config.value("tie_word_embeddings", true))
    return refuse("llama.cpp reads no output projection for " + arch +
                  " (its head is the token embedding): tie_word_embeddings "
                  "false cannot be recorded");

  // Mixtures of experts: llama.cpp renormalizes the chosen experts'
  // weights and puts experts in every layer that has a router.
  const int64_t experts = integer(
      config, modelType == "mixtral" ? "num_local_experts" : "num_experts", 0);
  if (modelType == "qwen3_moe") {
    if (!config.value("norm_topk_prob", false))
      return refuse("norm_topk_prob false cannot be recorded (llama.cpp "
                    "renormalizes the chosen experts' weights)");
    if (integer(config, "decoder_sparse_step", 1) != 1)
      return refuse("decoder_sparse_step other than 1 cannot be recorded");
  }

  // GPT-2's config.json names its sizes its own way.
  const int64_t heads = integer(config, gpt2 ? "n_head" : "num_attention_heads", 0);
  const int64_t hidden = integer(config, gpt2 ? "n_embd" : "hidden_size", 0);
  const int64_t layers = integer(config, gpt2 ? "n_layer" : "num_hidden_layers", 0);
  const int64_t headDim = integer(config, "head_dim", heads ? hidden / heads : 0);
  if (gemma && (arch == "gemma2" || arch == "gemma3")) {
    // query_pre_attn_scalar is not in the metadata: llama.cpp derives it
    // from the layer count (Gemma 2 27B: 46, Gemma 3 27B: 62).
    double scalar = config.value("query_pre_attn_scalar", 256.0);
    int64_t derived =
        layers == (arch == "gemma2" ? 46 : 62) ? hidden / heads : headDim;
    if (scalar != double(derived))
      return refuse("query_pre_attn_scalar " + Json(scalar).dump() +
                    " is not the " + std::to_string(derived) +
                    " llama.cpp derives for " + std::to_string(layers) +
                    " layers (head_dim, or hidden_size / heads for the 27B "
                    "models)");
  }
  attnrt::GgufWriter gguf;
  std::string prefix = arch + ".";
  gguf.setString("general.architecture", arch);
  // Not the model type: llama.cpp's vocabulary loader keys token
  // attributes off a name containing "phi3" and aborts on a vocabulary
  // without Phi-3's special tokens.
  gguf.setString("general.name", "attn-make-model");
  gguf.setU32("general.file_type", weightType->fileType);
  if (weightType->type != GgmlType::F32 && weightType->type != GgmlType::F16 &&
      weightType->type != GgmlType::BF16)
    gguf.setU32("general.quantization_version", 2);
  // convert_hf_to_gguf's TextModel.set_gguf_parameters, then LlamaModel's
  // (or GPT2Model's).
  gguf.setU32(prefix + "block_count", uint32_t(layers));
  gguf.setU32(prefix + "context_length",
              uint32_t(integer(config, gpt2 ? "n_positions" : "max_position_embeddings", 0)));
  gguf.setU32(prefix + "embedding_length", uint32_t(hidden));
  gguf.setU32(prefix + "feed_forward_length",
              uint32_t(gpt2 ? integer(config, "n_inner", 4 * hidden)
                            : integer(config, "intermediate_size", 0)));
  gguf.setU32(prefix + "attention.head_count", uint32_t(heads));
  if (gpt2)
    gguf.setF32(prefix + "attention.layer_norm_epsilon",
                config.value("layer_norm_epsilon", 1e-5f));
  else
    gguf.setU32(prefix + "attention.head_count_kv",
                uint32_t(integer(config, "num_key_value_heads", heads)));
  if (experts > 0) {
    gguf.setU32(prefix + "expert_count", uint32_t(experts));
    gguf.setU32(prefix + "expert_used_count",
                uint32_t(integer(config, "num_experts_per_tok", 0)));
    if (modelType == "qwen3_moe")
      gguf.setU32(prefix + "expert_feed_forward_length",
                  uint32_t(integer(config, "moe_intermediate_size", 0)));
  }
  if (config.contains("rope_theta"))
    gguf.setF32(prefix + "rope.freq_base",
                config["rope_theta"].get<float>());
  if (!gpt2)
    gguf.setF32(prefix + "attention.layer_norm_rms_epsilon",
                config.value("rms_norm_eps", 1e-6f));
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    gguf.setU32(prefix + "attention.key_length", uint32_t(headDim));
    gguf.setU32(prefix + "attention.value_length", uint32_t(headDim));
  }
  if (arch == "llama") {
    gguf.setU32(prefix + "vocab_size",
                uint32_t(integer(config, "vocab_size", 0)));
    gguf.setU32(prefix + "rope.dimension_count", uint32_t(headDim));
  }
  if (linearRope) { // TextModel.set_gguf_parameters.
    gguf.setString(prefix + "rope.scaling.type", "linear");
    gguf.setF32(prefix + "rope.scaling.factor", scaling.value("factor", 1.0f));
  }
  if (gemma && !addGemmaKeys(gguf, config, arch, layers, error))
    return refuse(error);
  int64_t rotaryDims = headDim;
  if (phi3) {
    // Phi3MiniModel.set_gguf_parameters (with Phi-4-mini's partial rotary
    // factor); sliding_window 0 for none.
    rotaryDims = int64_t(config.value("partial_rotary_factor", 1.0) *
                         double(hidden)) /
                 heads;
    gguf.setU32(prefix + "rope.dimension_count", uint32_t(rotaryDims));
    gguf.setU32(prefix + "rope.scaling.original_context_length",
                uint32_t(integer(config, "original_max_position_embeddings",
                                 4096)));
    gguf.setU32(prefix + "attention.sliding_window",
                uint32_t(integer(config, "sliding_window", 0)));
  }

  if (!tokenizerDir.empty() &&
      !addTokenizer(gguf, tokenizerDir,
                    integer(config, "vocab_size", 0),
                    error))
    return false;

  bool permute = attnrt::ggufPermutesQueryKey(arch);
  if (llama3Rope) {
    // LlamaModel.generate_extra_tensors, first: one factor per rotary pair
    // (computed in double here, in f32 by the converter; the reader allows
    // for either). The converter takes the original length from the
    // config's top level (default 8192), transformers from rope_scaling:
    // the latter is what the model means.
    double theta = config.value("rope_theta", 10000.0);
    double factor = scaling.value("factor", 8.0);
    double low = scaling.value("low_freq_factor", 1.0);
    double high = scaling.value("high_freq_factor", 4.0);
    double original = scaling.value("original_max_position_embeddings", 8192.0);
    std::string data;
    for (int64_t i = 0; i < headDim / 2; ++i) {
      double frequency = std::pow(theta, -2.0 * double(i) / double(headDim));
      float value = float(attnrt::ggufLlama3RopeFactor(frequency, factor, low,
                                                       high, original));
      data.append(reinterpret_cast<const char *>(&value), 4);
    }
    gguf.addTensor("rope_freqs.weight", GgmlType::F32, {headDim / 2},
                   std::move(data));
  }
  if (longRope && !addLongRope(gguf, config, prefix, rotaryDims, error))
    return refuse(error);

  // GPT-2's output is written as a copy of the token embedding, so the
  // file is never tied; Gemma's and Gemma 2's always are.
  bool tied = !gpt2;
  for (const SourceTensor &t : tensors)
    tied = tied && (t.name != "lm_head.weight" || arch == "gemma" ||
                    arch == "gemma2");
  auto endsWith = [](const std::string &name, const char *tail) {
    size_t n = std::strlen(tail);
    return name.size() >= n && name.compare(name.size() - n, n, tail) == 0;
  };
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < tensors.size(); ++i)
    byName[tensors[i].name] = i;
  // Adds tensor `name` (dims in ggml order) of `values`: matrices in their
  // type (matrixType), the rest F32.
  auto add = [&](const std::string &name, const std::vector<int64_t> &dims,
                 const std::vector<float> &values) {
    GgmlType type = dims.size() >= 2 ? matrixType(*weightType, name, dims[0],
                                                  layers, tied)
                                     : GgmlType::F32;
    const attnrt::GgmlTypeTraits &traits = attnrt::ggmlTypeTraits(type);
    std::string data(size_t(values.size() / traits.blockSize) * traits.typeSize,
                     '\0');
    attnrt::quantizeGgmlRow(type, values.data(),
                            reinterpret_cast<uint8_t *>(data.data()),
                            int64_t(values.size()));
    gguf.addTensor(name, type, dims, std::move(data));
  };
  std::vector<float> values, expertValues;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SourceTensor &t = tensors[i];
    // An expert's matrix goes into its kind's stacked tensor, written when
    // expert 0's comes up ([experts, rows, columns], expert by expert).
    std::string stacked;
    int64_t expert = 0;
    if (attnrt::ggufExpertName(arch, t.name, stacked, expert)) {
      if (expert != 0)
        continue;
      values.clear();
      for (int64_t e = 0; e < experts; ++e) {
        std::string name = t.name;
        std::string zero = ".experts.0.", other = ".experts." + std::to_string(e) + ".";
        name.replace(name.find(zero), zero.size(), other);
        auto it = byName.find(name);
        if (it == byName.end())
          return refuse("tensor '" + name + "' is missing");
        if (tensors[it->second].shape != t.shape)
          return refuse("tensor '" + name + "' has another shape than expert 0's");
        if (!read(it->second, expertValues, error))
          return false;
        values.insert(values.end(), expertValues.begin(), expertValues.end());
      }
      add(stacked, {t.shape[1], t.shape[0], experts}, values);
      continue;
    }
    // GPT-2's causal-mask buffers (and its tied lm_head) are not weights;
    // Gemma's and Gemma 2's converters drop a (tied) lm_head.
    if ((gpt2 && (endsWith(t.name, ".attn.bias") ||
                  endsWith(t.name, ".attn.masked_bias"))) ||
        ((gpt2 || arch == "gemma" || arch == "gemma2") &&
         t.name == "lm_head.weight"))
      continue;
    std::string name = attnrt::ggufTensorName(arch, t.name);
    if (name.empty())
      return refuse("tensor '" + t.name + "' has no GGUF name");
    if (!read(i, values, error))
      return false;
    std::vector<int64_t> shape = t.shape;
    if (attnrt::ggufTransposesMatrix(arch, name) && shape.size() == 2) {
      // Conv1D [in, out] to [out, in].
      std::vector<float> transposed(values.size());
      for (int64_t r = 0; r < shape[0]; ++r)
        for (int64_t c = 0; c < shape[1]; ++c)
          transposed[size_t(c * shape[0] + r)] = values[size_t(r * shape[1] + c)];
      values.swap(transposed);
      std::swap(shape[0], shape[1]);
    }
    int64_t rowLength = shape.back();
    int64_t rows = rowLength ? int64_t(values.size()) / rowLength : 0;
    bool isQuery = name.find(".attn_q.weight") != std::string::npos;
    bool isKey = name.find(".attn_k.weight") != std::string::npos;
    if (permute && (isQuery || isKey)) {
      std::vector<float> permuted(values.size());
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(values.begin() + r * rowLength, rowLength,
                    permuted.begin() +
                        attnrt::ggufPermutedRow(r, headDim) * rowLength);
      values.swap(permuted);
    }
    // GemmaModel.modify_tensors: RMSNorm weights as 1 + w, in f32.
    if (attnrt::ggufShiftsNorm(arch, name))
      for (float &v : values)
        v += 1.0f;
    std::vector<int64_t> dims(shape.rbegin(), shape.rend());
    add(name, dims, values);
    // GPT2Model.modify_tensors: the output is the token embedding again.
    if (gpt2 && name == "token_embd.weight")
      add("output.weight", dims, values);
  }
  // Through a temporary file renamed into place, as the folder writer does.
  std::string tmpPath = path + ".tmp";
  if (!gguf.write(tmpPath, error)) {
    std::remove(tmpPath.c_str());
    return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmpPath, path, ec);
  if (ec) {
    std::remove(tmpPath.c_str());
    error = "cannot rename '" + tmpPath + "' to '" + path +
            "': " + ec.message();
    return false;
  }
  return true;
}

} // namespace

bool writeGgufModel(const ModelSpec &spec, const std::string &path,
                    const std::string &typeName, std::string &error,
                    const std::string &tokenizerDir) {
  if (!spec.prefix.empty() || !spec.extraTensors.empty() ||
      spec.extraBuffers) {
    error = "--prefix, --extra-tensor and --extra-buffers have no GGUF names";
    return false;
  }
  std::vector<TensorDesc> planned;
  if (!planTensors(spec, planned, error))
    return false;
  std::vector<SourceTensor> tensors;
  for (const TensorDesc &t : planned)
    tensors.push_back({t.name, t.shape});
  return writeGguf(
      Json::parse(configJson(spec)), tensors,
      [&](size_t i, std::vector<float> &values, std::string &) {
        values = tensorValues(spec, planned[i]);
        return true;
      },
      path, typeName, error, tokenizerDir);
}

bool writeGgufFromFolder(const std::string &dir, const std::string &path,
                         const std::string &typeName, std::string &error,
                         const std::string &tokenizerDir) {
  std::string text;
  if (!attnrt::readFileText(dir + "/config.json", true, text, error))
    return false;
  Json config = Json::parse(text, nullptr, false);
  if (!config.is_object()) {
    error = "'" + dir + "/config.json' is not a JSON object";
    return false;
  }
  attnrt::WeightFiles weights;
  if (!weights.open(dir, error))
    return false;
  std::vector<SourceTensor> tensors;
  std::vector<size_t> indices;
  for (size_t i = 0; i < weights.numTensors(); ++i) {
    const attnrt::TensorInfo &t = weights.tensor(i);
    // Buffers older checkpoints carry; the converter skips them too.
    if (t.name.size() >= 22 &&
        t.name.compare(t.name.size() - 22, 22, ".rotary_emb.inv_freq") == 0)
      continue;
    if (t.isGgml || (t.dtype != attnrt::DType::F32 &&
                     t.dtype != attnrt::DType::F16 &&
                     t.dtype != attnrt::DType::BF16)) {
      error = weights.fileWhere(weights.fileOf(i)) + "tensor '" + t.name +
              "' is " + attnrt::dtypeName(t.dtype) +
              "; only F32, F16 and BF16 checkpoints are converted";
      return false;
    }
    tensors.push_back({t.name, t.shape});
    indices.push_back(i);
  }
  // A real folder's config.json or tokenizer files may hold a value of
  // another type than its key's: one line naming them, not an abort.
  try {
    return writeGguf(
        config, tensors,
        [&](size_t k, std::vector<float> &values, std::string &) {
          size_t i = indices[k];
          const attnrt::TensorInfo &t = weights.tensor(i);
          const uint8_t *data = weights.tensorData(i);
          values.resize(size_t(t.elements));
          for (size_t e = 0; e < values.size(); ++e) {
            if (t.dtype == attnrt::DType::F32) {
              std::memcpy(&values[e], data + 4 * e, 4);
              continue;
            }
            uint16_t bits;
            std::memcpy(&bits, data + 2 * e, 2);
            values[e] = t.dtype == attnrt::DType::F16
                            ? attnrt::halfToFloat(bits)
                            : attnrt::bfloat16ToFloat(bits);
          }
          return true;
        },
        path, typeName, error, tokenizerDir);
  } catch (const nlohmann::json::exception &e) {
    error = "'" + dir + "': a value in config.json or the tokenizer's files " +
            "has the wrong type: " + e.what();
    return false;
  }
}

} // namespace modelgen
} // namespace attn
