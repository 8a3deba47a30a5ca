//===- GgufConfig.cpp - a GGUF file's model as config.json ----------------===//

#include "GgufConfig.h"

#include "GgufNames.h"
#include "Support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace attnrt {

using Json = nlohmann::ordered_json;

namespace {

constexpr uint64_t kMaxLayers = 1024;

/// Llama 3's rope scaling from the factors of rope_freqs.weight (one per
/// rotary pair; HF's rope_scaling is not in the metadata). Outside the
/// smooth band a factor is 1 or `factor`; inside, 1/f is linear in
/// 1/wavelength, which fixes the band: two parameters, so low_freq_factor
/// is taken as 1 (Llama 3's) and the original length and high_freq_factor
/// follow; Llama 3.x files give their own values back. The derived scaling
/// must give every factor back; `scaling` stays null when all are 1.
bool llama3Scaling(const GgufFile &file, double theta, uint64_t rotaryDims,
                   Json &scaling, std::string &error) {
  std::string where = file.where() + "tensor 'rope_freqs.weight': ";
  const GgufTensorInfo &t = file.tensors()[size_t(file.find("rope_freqs.weight"))];
  if (t.type != GgmlType::F32 || t.dims.size() != 1 ||
      uint64_t(t.dims[0]) * 2 != rotaryDims) {
    error = where + format("expected %llu f32 factors, one per rotary pair",
                           static_cast<unsigned long long>(rotaryDims / 2));
    return false;
  }
  std::vector<double> factors(size_t(t.dims[0]));
  double factor = 1;
  for (size_t i = 0; i < factors.size(); ++i) {
    float f;
    std::memcpy(&f, file.tensorData(t) + 4 * i, 4);
    if (!(f >= 1.0f - 1e-6f) || !std::isfinite(f)) {
      error = where + format("factor %zu is %g; Llama 3's are 1 or more", i,
                             double(f));
      return false;
    }
    factors[i] = f;
    factor = std::max(factor, factors[i]);
  }
  if (factor <= 1 + 1e-6)
    return true;
  // In the band 1/f = (1 - s)/factor + s with s = (original/wavelength -
  // low)/(high - low), and low = 1: s = 0 at wavelength = original, s = 1 at
  // original/high.
  auto wavelength = [&](size_t i) {
    return 2 * M_PI * std::pow(theta, 2.0 * double(i) / double(rotaryDims));
  };
  auto smoothOf = [&](size_t i) {
    return (1 / factors[i] - 1 / factor) / (1 - 1 / factor);
  };
  std::vector<size_t> band;
  double longestOne = 0, shortestFull = HUGE_VAL; // Wavelengths.
  for (size_t i = 0; i < factors.size(); ++i) {
    if (factors[i] <= 1 + 1e-6)
      longestOne = std::max(longestOne, wavelength(i));
    else if (factors[i] >= factor * (1 - 1e-6))
      shortestFull = std::min(shortestFull, wavelength(i));
    else
      band.push_back(i);
  }
  double original = 0, high = 0;
  if (band.size() >= 2) {
    // s is linear in 1/wavelength: fit it, original = -a/b.
    double n = 0, su = 0, ss = 0, suu = 0, sus = 0;
    for (size_t i : band) {
      double u = 1 / wavelength(i), smooth = smoothOf(i);
      n += 1, su += u, ss += smooth, suu += u * u, sus += u * smooth;
    }
    double a = (n * sus - su * ss) / (n * suu - su * su);
    double b = (ss - a * su) / n;
    original = b < 0 ? std::round(-a / b) : 0;
    high = original > 0 ? 1 + original / a : 0;
  } else {
    // The model's own frequencies do not fix the band (a small head):
    // any band that gives them back is the same RoPE. Its edges go midway
    // between the neighbouring wavelengths.
    // Below the band's s = 0 edge (at `original`): the band's point, else
    // the longest factor-1 wavelength.
    double below = band.empty() ? longestOne : wavelength(band[0]);
    double upper = std::isinf(shortestFull) ? 2 * below : shortestFull;
    original = std::floor((below + upper) / 2);
    if (band.empty())
      high = original / ((longestOne + original) / 2); // s = 1 edge.
    else
      high = 1 + (original / below - 1) / smoothOf(band[0]);
  }
  // The file's f32 arithmetic leaves high a hair off a round value.
  if (double rounded = std::round(high * 1e4) / 1e4;
      std::fabs(rounded - high) <= 1e-6 * high)
    high = rounded;
  bool agrees = original > 0 && high > 1 && std::isfinite(high);
  for (size_t i = 0; agrees && i < factors.size(); ++i)
    agrees = std::fabs(ggufLlama3RopeFactor(2 * M_PI / wavelength(i), factor, 1, high,
                                    original) -
                       factors[i]) <= 1e-5 * factors[i];
  if (!agrees) {
    error = where + "its factors are not those of Llama 3's rope scaling "
                    "(no factor, band and original length give them back)";
    return false;
  }
  scaling["rope_type"] = "llama3";
  scaling["factor"] = factor;
  scaling["low_freq_factor"] = 1.0;
  scaling["high_freq_factor"] = high;
  scaling["original_max_position_embeddings"] = uint64_t(original);
  return true;
}

/// Gemma 2 and 3's attention as llama.cpp's loader decides it
/// (src/models/gemma2.cpp, gemma3.cpp): the query scale by layer count
/// (query_pre_attn_scalar is not in the metadata: n_embd / n_head for
/// Gemma 2 27B's 46 layers and Gemma 3 27B's 62, head_dim otherwise), every
/// `period`-th layer global (2 and 6 unless sliding_window_pattern says),
/// Gemma 2's softcaps (50 and 30 unless given) and one RoPE base, Gemma 3's
/// window only when the key is there and its local layers' RoPE base.
bool gemmaAttention(const GgufFile &file, const std::string &prefix,
                    const std::string &modelType, uint64_t layers,
                    uint64_t hiddenPerHead, uint64_t headDim, double theta,
                    Json &config, std::string &error) {
  bool gemma2 = modelType == "gemma2";
  auto optionalFloat = [&](const char *key, double &value, double fallback) {
    value = fallback;
    return !file.findKey(prefix + key) ||
           file.getFloat(prefix + key, value, error);
  };
  uint64_t window = gemma2 ? 4096 : 0, period = gemma2 ? 2 : 6;
  std::string windowKey = prefix + "attention.sliding_window";
  std::string periodKey = prefix + "attention.sliding_window_pattern";
  if ((file.findKey(windowKey) &&
       !file.getUnsigned(windowKey, window, error)) ||
      (file.findKey(periodKey) && !file.getUnsigned(periodKey, period, error)))
    return false;
  config["query_pre_attn_scalar"] =
      layers == (gemma2 ? 46 : 62) ? hiddenPerHead : headDim;
  // llama.cpp's set_swa_pattern: layer i slides unless i % period is the
  // last of the period (period 0: every layer slides).
  Json types = Json::array();
  for (uint64_t layer = 0; layer < layers; ++layer)
    types.push_back(window > 0 && (period == 0 || layer % period < period - 1)
                        ? "sliding_attention"
                        : "full_attention");
  config["layer_types"] = types;
  config["sliding_window"] = window > 0 ? window : 4096;
  double localTheta = 0;
  if (gemma2) {
    double attnCap, finalCap;
    if (!optionalFloat("attn_logit_softcapping", attnCap, 50) ||
        !optionalFloat("final_logit_softcapping", finalCap, 30) ||
        !optionalFloat("rope.freq_base_swa", localTheta, theta))
      return false;
    if (localTheta != theta) {
      error = file.where() + "metadata key " +
              quote(prefix + "rope.freq_base_swa") +
              format(": %g differs from the global base %g, which Gemma 2 "
                     "does not do",
                     localTheta, theta);
      return false;
    }
    config["attn_logit_softcapping"] = attnCap;
    config["final_logit_softcapping"] = finalCap;
    return true;
  }
  double finalCap;
  if (!optionalFloat("final_logit_softcapping", finalCap, 0) ||
      !optionalFloat("rope.freq_base_swa", localTheta, 10000))
    return false;
  config["final_logit_softcapping"] =
      finalCap != 0 ? Json(finalCap) : Json(nullptr);
  config["attn_logit_softcapping"] = nullptr;
  config["rope_local_base_freq"] = localTheta;
  return true;
}

/// Phi-3's window and longrope: the converter writes sliding_window 0 for
/// none, and longrope as the tensors rope_factors_long/short.weight (one
/// f32 factor per rotary pair) with the pre-training length and the
/// attention factor it computed (llama.cpp multiplies by it; 1 without
/// the key), which config.json gives only when it is not longrope's own.
bool phi3Positions(const GgufFile &file, const std::string &prefix,
                   uint64_t rotaryDims, uint64_t context, Json &config,
                   std::string &error) {
  uint64_t window = 0;
  std::string windowKey = prefix + "attention.sliding_window";
  if (file.findKey(windowKey) && !file.getUnsigned(windowKey, window, error))
    return false;
  config["sliding_window"] = window > 0 ? Json(window) : Json(nullptr);
  int64_t longIndex = file.find("rope_factors_long.weight");
  int64_t shortIndex = file.find("rope_factors_short.weight");
  if (longIndex < 0 && shortIndex < 0)
    return true;
  Json factors[2];
  for (int which = 0; which < 2; ++which) {
    const char *name =
        which == 0 ? "rope_factors_long.weight" : "rope_factors_short.weight";
    int64_t index = which == 0 ? longIndex : shortIndex;
    if (index < 0) {
      error = file.where() + "tensor " + quote(name) + " is missing (" +
              (which == 0 ? "rope_factors_short.weight"
                          : "rope_factors_long.weight") +
              " is there: longrope needs both)";
      return false;
    }
    const GgufTensorInfo &t = file.tensors()[size_t(index)];
    if (t.type != GgmlType::F32 || t.dims.size() != 1 ||
        uint64_t(t.dims[0]) * 2 != rotaryDims) {
      error = file.where() + "tensor " + quote(name) +
              format(": expected %llu f32 factors, one per rotary pair",
                     static_cast<unsigned long long>(rotaryDims / 2));
      return false;
    }
    factors[which] = Json::array();
    for (int64_t i = 0; i < t.dims[0]; ++i) {
      float f;
      std::memcpy(&f, file.tensorData(t) + 4 * i, 4);
      if (!(f > 0) || !std::isfinite(f)) {
        error = file.where() + "tensor " + quote(name) +
                format(": factor %lld is %g; longrope's are positive",
                       static_cast<long long>(i), double(f));
        return false;
      }
      factors[which].push_back(double(f));
    }
  }
  uint64_t original = context;
  std::string originalKey = prefix + "rope.scaling.original_context_length";
  if (file.findKey(originalKey) &&
      !file.getUnsigned(originalKey, original, error))
    return false;
  if (original < 2) {
    error = file.where() + "metadata key " + quote(originalKey) +
            format(" is %llu; longrope divides by its log",
                   static_cast<unsigned long long>(original));
    return false;
  }
  Json scaling;
  scaling["type"] = "longrope";
  scaling["long_factor"] = factors[0];
  scaling["short_factor"] = factors[1];
  double scale = double(context) / double(original);
  double own = scale <= 1 ? 1 : std::sqrt(1 + std::log(scale) /
                                                  std::log(double(original)));
  double attention = 1;
  std::string attentionKey = prefix + "rope.scaling.attn_factor";
  if (file.findKey(attentionKey) &&
      !file.getFloat(attentionKey, attention, error))
    return false;
  // The key is f32: within its rounding it is longrope's own factor.
  if (std::fabs(attention - own) > 1e-6 * own)
    scaling["attention_factor"] = attention;
  config["original_max_position_embeddings"] = original;
  config["rope_scaling"] = scaling;
  return true;
}

} // namespace

double ggufLlama3RopeFactor(double frequency, double factor, double low,
                            double high, double original) {
  double wavelength = 2 * M_PI / frequency;
  if (wavelength < original / high)
    return 1;
  if (wavelength > original / low)
    return factor;
  double smooth = (original / wavelength - low) / (high - low);
  return 1 / ((1 - smooth) / factor + smooth);
}

bool ggufConfigJson(const GgufFile &file, std::string &json,
                    std::string &error) {
  std::string_view arch;
  if (!file.getString("general.architecture", arch, error))
    return false;
  // The model_type the file's architecture maps back to (mistral files
  // are llama files).
  std::string modelType;
  for (const char *candidate : {"llama", "qwen2", "qwen3", "qwen3_moe", "gpt2",
                                "gemma", "gemma2", "gemma3_text", "phi3"})
    if (ggufArchitecture(candidate) == arch)
      modelType = candidate;
  if (modelType.empty()) {
    error = file.where() + "architecture " + quote(arch) +
            " is not supported (supported: llama, qwen2, qwen3, qwen3moe, "
            "gpt2, gemma, gemma2, gemma3, phi3)";
    return false;
  }
  const bool gemma = arch.substr(0, 5) == "gemma";
  // llama files with experts are Mixtral's.
  const std::string expertCountKey = std::string(arch) + ".expert_count";
  if (modelType == "llama" && file.findKey(expertCountKey))
    modelType = "mixtral";
  const std::string prefix = std::string(arch) + ".";
  auto where = [&](const std::string &key) {
    return file.where() + "metadata key " + quote(key) + ": ";
  };
  auto count = [&](const char *key, uint64_t &value) {
    return file.getUnsigned(prefix + key, value, error);
  };
  auto optionalCount = [&](const char *key, uint64_t &value,
                           uint64_t fallback) {
    if (!file.findKey(prefix + key)) {
      value = fallback;
      return true;
    }
    return count(key, value);
  };
  auto optionalFloat = [&](const std::string &key, double &value,
                           double fallback) {
    if (!file.findKey(key)) {
      value = fallback;
      return true;
    }
    return file.getFloat(key, value, error);
  };

  // The vocabulary: the key, else the embedding's rows.
  auto vocabulary = [&](uint64_t &vocab) {
    int64_t embedding = file.find("token_embd.weight");
    if (embedding < 0) {
      error = file.where() + "tensor 'token_embd.weight' is missing";
      return false;
    }
    const GgufTensorInfo &info = file.tensors()[size_t(embedding)];
    if (info.dims.size() != 2) {
      error = file.where() + "tensor 'token_embd.weight' has " +
              std::to_string(info.dims.size()) + " dimensions, not 2";
      return false;
    }
    return optionalCount("vocab_size", vocab, uint64_t(info.dims[1]));
  };
  auto specialIds = [&](Json &config) {
    for (const char *key : {"bos_token_id", "eos_token_id"}) {
      std::string ggufKey = std::string("tokenizer.ggml.") + key;
      uint64_t id;
      if (file.findKey(ggufKey)) {
        if (!file.getUnsigned(ggufKey, id, error))
          return false;
        config[key] = id;
      }
    }
    return true;
  };

  if (modelType == "gpt2") {
    // convert_hf_to_gguf's GPT2Model: no rope, LayerNorm with biases, the
    // output a copy of the token embedding (Attn's GPT-2 is tied).
    uint64_t layers, hidden, ffn, heads, context, vocab;
    double epsilon;
    if (!count("block_count", layers) || !count("embedding_length", hidden) ||
        !count("feed_forward_length", ffn) ||
        !count("attention.head_count", heads) ||
        !count("context_length", context) ||
        !file.getFloat(prefix + "attention.layer_norm_epsilon", epsilon,
                       error) ||
        !vocabulary(vocab))
      return false;
    if (heads == 0 || hidden % heads != 0) {
      error = where(prefix + "attention.head_count") +
              format("%llu does not divide the embedding length %llu",
                     static_cast<unsigned long long>(heads),
                     static_cast<unsigned long long>(hidden));
      return false;
    }
    Json config;
    config["model_type"] = "gpt2";
    config["architectures"] = Json::array({"GPT2LMHeadModel"});
    config["n_embd"] = hidden;
    config["n_inner"] = ffn;
    config["n_layer"] = layers;
    config["n_head"] = heads;
    config["n_positions"] = context;
    config["vocab_size"] = vocab;
    config["layer_norm_epsilon"] = epsilon;
    config["activation_function"] = "gelu_new"; // llama.cpp's GELU.
    config["tie_word_embeddings"] = true;
    if (!specialIds(config))
      return false;
    json = config.dump(2) + "\n";
    return true;
  }

  uint64_t layers, hidden, ffn, heads, kvHeads, context;
  if (!count("block_count", layers) || !count("embedding_length", hidden) ||
      !count("feed_forward_length", ffn) ||
      !count("attention.head_count", heads) ||
      !optionalCount("attention.head_count_kv", kvHeads, heads) ||
      !count("context_length", context))
    return false;
  // Per-layer lists follow (layer types, dense layers): bounded as the
  // compiler bounds num_hidden_layers (ConfigReader.h's kMaxLayers).
  if (layers > kMaxLayers) {
    error = where(prefix + "block_count") +
            format("%llu layers, more than the %llu Attn compiles",
                   static_cast<unsigned long long>(layers),
                   static_cast<unsigned long long>(kMaxLayers));
    return false;
  }
  if (heads == 0) {
    error = where(prefix + "attention.head_count") + "is 0";
    return false;
  }
  uint64_t headDim, valueDim, rotaryDims;
  if (!optionalCount("attention.key_length", headDim, hidden / heads) ||
      !optionalCount("attention.value_length", valueDim, headDim) ||
      !optionalCount("rope.dimension_count", rotaryDims, headDim))
    return false;
  if (valueDim != headDim) {
    error = where(prefix + "attention.value_length") +
            format("%llu differs from the key length %llu (Attn's attention "
                   "has one head size)",
                   static_cast<unsigned long long>(valueDim),
                   static_cast<unsigned long long>(headDim));
    return false;
  }
  // Phi-3 (Phi-4-mini) rotates the first rope.dimension_count features.
  if (rotaryDims != headDim &&
      !(modelType == "phi3" && rotaryDims > 0 && rotaryDims < headDim &&
        rotaryDims % 2 == 0)) {
    error = where(prefix + "rope.dimension_count") +
            format("rotary embeddings on %llu of the %llu features of a head "
                   "are not supported for %s",
                   static_cast<unsigned long long>(rotaryDims),
                   static_cast<unsigned long long>(headDim),
                   std::string(arch).c_str());
    return false;
  }
  double theta, epsilon;
  if (!optionalFloat(prefix + "rope.freq_base", theta, 10000.0) ||
      !file.getFloat(prefix + "attention.layer_norm_rms_epsilon", epsilon,
                     error))
    return false;

  uint64_t vocab = 0;
  if (!vocabulary(vocab))
    return false;

  Json config;
  config["model_type"] = modelType;
  config["architectures"] = Json::array(
      {modelType == "llama"         ? "LlamaForCausalLM"
       : modelType == "mixtral"     ? "MixtralForCausalLM"
       : modelType == "qwen2"       ? "Qwen2ForCausalLM"
       : modelType == "qwen3_moe"   ? "Qwen3MoeForCausalLM"
       : modelType == "gemma"       ? "GemmaForCausalLM"
       : modelType == "gemma2"      ? "Gemma2ForCausalLM"
       : modelType == "gemma3_text" ? "Gemma3ForCausalLM"
       : modelType == "phi3"        ? "Phi3ForCausalLM"
                                    : "Qwen3ForCausalLM"});
  config["hidden_size"] = hidden;
  config["intermediate_size"] = ffn;
  if (modelType == "mixtral" || modelType == "qwen3_moe") {
    // The experts: how many, how many a token uses, their MLP width (a
    // Mixtral file may give it as the dense width). llama.cpp renormalizes
    // the chosen experts' weights for both, as HF's Mixtral does and
    // Qwen3-MoE's norm_topk_prob says.
    uint64_t experts, used, expertFfn;
    if (!count("expert_count", experts) || !count("expert_used_count", used) ||
        !optionalCount("expert_feed_forward_length", expertFfn, ffn))
      return false;
    if (modelType == "mixtral") {
      config["num_local_experts"] = experts;
      config["num_experts_per_tok"] = used;
      config["intermediate_size"] = expertFfn;
      config["sliding_window"] = nullptr;
    } else {
      config["num_experts"] = experts;
      config["num_experts_per_tok"] = used;
      config["moe_intermediate_size"] = expertFfn;
      config["norm_topk_prob"] = true;
      config["decoder_sparse_step"] = 1;
      // A layer with a dense MLP instead of experts (HF's mlp_only_layers)
      // has no router.
      Json dense = Json::array();
      for (uint64_t layer = 0; layer < layers; ++layer)
        if (file.find("blk." + std::to_string(layer) +
                      ".ffn_gate_inp.weight") < 0)
          dense.push_back(layer);
      config["mlp_only_layers"] = dense;
    }
  }
  config["num_hidden_layers"] = layers;
  config["num_attention_heads"] = heads;
  config["num_key_value_heads"] = kvHeads;
  // Gemma's readers default head_dim to 256, so it is always given.
  if (modelType == "qwen3" || modelType == "qwen3_moe" || gemma ||
      headDim != hidden / heads)
    config["head_dim"] = headDim;
  if (rotaryDims != headDim)
    config["partial_rotary_factor"] = double(rotaryDims) / double(headDim);
  config["max_position_embeddings"] = context;
  config["vocab_size"] = vocab;
  config["rms_norm_eps"] = epsilon;
  config["rope_theta"] = theta;
  // llama.cpp's Gemma runs GELU's tanh form; Gemma 2 and 3 name the key
  // hidden_activation.
  config[modelType == "gemma" || !gemma ? "hidden_act" : "hidden_activation"] =
      gemma ? "gelu_pytorch_tanh" : "silu";
  // Gemma and Gemma 2 always read their head from the token embedding.
  config["tie_word_embeddings"] =
      modelType == "gemma" || modelType == "gemma2" ||
      file.find("output.weight") < 0;
  if (modelType == "qwen2")
    config["use_sliding_window"] = false;
  if (modelType != "qwen2" && modelType != "mixtral")
    config["attention_bias"] = file.find("blk.0.attn_q.bias") >= 0;
  if (!specialIds(config))
    return false;
  if ((modelType == "gemma2" || modelType == "gemma3_text") &&
      !gemmaAttention(file, prefix, modelType, layers, hidden / heads, headDim,
                      theta, config, error))
    return false;
  if (modelType == "phi3" && !phi3Positions(file, prefix, rotaryDims, context,
                                            config, error))
    return false;

  // RoPE scaling: what the converter writes for linear and yarn; Llama 3's
  // is a tensor of factors (rope_freqs.weight).
  if (file.find("rope_freqs.weight") >= 0) {
    Json scaling;
    if (!llama3Scaling(file, theta, rotaryDims, scaling, error))
      return false;
    if (!scaling.is_null())
      config["rope_scaling"] = scaling;
  }
  std::string scalingKey = prefix + "rope.scaling.type";
  if (file.findKey(scalingKey)) {
    std::string_view type;
    if (!file.getString(scalingKey, type, error))
      return false;
    if (type != "none") {
      if (config.contains("rope_scaling")) {
        error = where(scalingKey) + quote(type) + " and tensor " +
                (modelType == "phi3" ? "'rope_factors_long.weight'"
                                     : "'rope_freqs.weight'") +
                " both scale RoPE";
        return false;
      }
      if (type != "linear" && type != "yarn") {
        error = where(scalingKey) + quote(type) +
                " is not supported (supported: none, linear, yarn)";
        return false;
      }
      double factor;
      if (!file.getFloat(prefix + "rope.scaling.factor", factor, error))
        return false;
      Json scaling;
      scaling["rope_type"] = std::string(type);
      scaling["factor"] = factor;
      if (type == "yarn") {
        uint64_t original;
        if (!count("rope.scaling.original_context_length", original))
          return false;
        scaling["original_max_position_embeddings"] = original;
      }
      config["rope_scaling"] = scaling;
    }
  }
  // A key the converter writes for a feature Attn does not read from GGUF
  // yet must not be dropped silently.
  bool experts = modelType == "mixtral" || modelType == "qwen3_moe";
  bool windows = modelType == "gemma2" || modelType == "gemma3_text" ||
                 modelType == "phi3";
  for (const char *unsupported :
       {experts ? "expert_shared_count" : "expert_count",
        windows ? "" : "attention.sliding_window",
        modelType == "phi3" ? "" : "rope.scaling.attn_factor"})
    if (*unsupported && file.findKey(prefix + unsupported)) {
      error = file.where() + "metadata key " + quote(prefix + unsupported) +
              " is not read from GGUF files yet";
      return false;
    }
  json = config.dump(2) + "\n";
  return true;
}

bool ggufConfigJson(const std::string &path, std::string &json,
                    std::string &error, std::string *weightFormat,
                    std::string *headFormat) {
  GgufFile file;
  if (!file.open(path, error, /*populate=*/false) ||
      !ggufConfigJson(file, json, error))
    return false;
  if (weightFormat)
    *weightFormat = ggufWeightFormat(file);
  if (headFormat)
    *headFormat = ggufHeadFormat(file);
  return true;
}

namespace {

/// The weight format nearest a tensor type that holds no more bytes than
/// needed.
const char *formatOfType(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
  case GgmlType::F16: // f32 holds every f16 value; bf16 would round them.
    return "f32";
  case GgmlType::BF16:
    return "bf16";
  case GgmlType::Q4_0:
    return "q4_0";
  default: // Q8_0, and the types without kernels of their own yet.
    return "q8_0";
  }
}

} // namespace

std::string ggufHeadFormat(const GgufFile &file) {
  // The tensor the head reads: the token embedding when the model is tied
  // (GPT-2's, Gemma's and Gemma 2's always are, whatever output.weight
  // holds).
  std::string_view arch;
  std::string error;
  bool tied = !file.getString("general.architecture", arch, error) ||
              arch == "gpt2" || arch == "gemma" || arch == "gemma2";
  int64_t head = tied ? -1 : file.find("output.weight");
  if (head < 0)
    head = file.find("token_embd.weight");
  if (head < 0)
    return "";
  const char *format = formatOfType(file.tensors()[size_t(head)].type);
  return std::strcmp(format, ggufWeightFormat(file)) == 0 ? "" : format;
}

const char *ggufWeightFormat(const GgufFile &file) {
  // Elements of the matrices by type; the most common type decides.
  std::map<GgmlType, int64_t> elements;
  for (const GgufTensorInfo &t : file.tensors())
    if (t.dims.size() == 2)
      elements[t.type] += t.elements;
  GgmlType bulk = GgmlType::F32;
  int64_t most = 0;
  for (const auto &[type, count] : elements)
    if (count > most) {
      bulk = type;
      most = count;
    }
  return formatOfType(bulk);
}

} // namespace attnrt
