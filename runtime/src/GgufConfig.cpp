//===- GgufConfig.cpp - a GGUF file's model as config.json ----------------===//

#include "GgufConfig.h"

#include "GgufNames.h"
#include "Support.h"

#include <nlohmann/json.hpp>

#include <map>

namespace attnrt {

using Json = nlohmann::ordered_json;

bool ggufConfigJson(const GgufFile &file, std::string &json,
                    std::string &error) {
  std::string_view arch;
  if (!file.getString("general.architecture", arch, error))
    return false;
  // The model_type the file's architecture maps back to (mistral files
  // are llama files).
  std::string modelType;
  for (const char *candidate : {"llama", "qwen2", "qwen3", "gpt2"})
    if (ggufArchitecture(candidate) == arch)
      modelType = candidate;
  if (modelType.empty()) {
    error = file.where() + "architecture " + quote(arch) +
            " is not supported (supported: llama, qwen2, qwen3, gpt2)";
    return false;
  }
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
  if (rotaryDims != headDim) {
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
      {modelType == "llama"   ? "LlamaForCausalLM"
       : modelType == "qwen2" ? "Qwen2ForCausalLM"
                              : "Qwen3ForCausalLM"});
  config["hidden_size"] = hidden;
  config["intermediate_size"] = ffn;
  config["num_hidden_layers"] = layers;
  config["num_attention_heads"] = heads;
  config["num_key_value_heads"] = kvHeads;
  if (modelType == "qwen3" || headDim != hidden / heads)
    config["head_dim"] = headDim;
  config["max_position_embeddings"] = context;
  config["vocab_size"] = vocab;
  config["rms_norm_eps"] = epsilon;
  config["rope_theta"] = theta;
  config["hidden_act"] = "silu";
  config["tie_word_embeddings"] = file.find("output.weight") < 0;
  if (modelType == "qwen2")
    config["use_sliding_window"] = false;
  if (modelType != "qwen2")
    config["attention_bias"] = file.find("blk.0.attn_q.bias") >= 0;
  if (!specialIds(config))
    return false;

  // RoPE scaling: what the converter writes for linear and yarn; Llama 3's
  // is a tensor of factors (rope_freqs.weight).
  if (file.find("rope_freqs.weight") >= 0) {
    error = file.where() + "tensor 'rope_freqs.weight' (Llama 3 rope "
                           "scaling) is not supported yet";
    return false;
  }
  std::string scalingKey = prefix + "rope.scaling.type";
  if (file.findKey(scalingKey)) {
    std::string_view type;
    if (!file.getString(scalingKey, type, error))
      return false;
    if (type != "none") {
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
  for (const char *unsupported :
       {"expert_count", "attention.sliding_window", "rope.scaling.attn_factor"})
    if (file.findKey(prefix + unsupported)) {
      error = file.where() + "metadata key " + quote(prefix + unsupported) +
              " is not read from GGUF files yet";
      return false;
    }
  json = config.dump(2) + "\n";
  return true;
}

bool ggufConfigJson(const std::string &path, std::string &json,
                    std::string &error, std::string *weightFormat) {
  GgufFile file;
  if (!file.open(path, error, /*populate=*/false) ||
      !ggufConfigJson(file, json, error))
    return false;
  if (weightFormat)
    *weightFormat = ggufWeightFormat(file);
  return true;
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
  switch (bulk) {
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

} // namespace attnrt
