//===- ModelWriterFamiliesTest.cpp - attn-make-model's families ----------===//
//
// The writer's side of every family, checked against things written here
// independently of ModelWriter.cpp:
//  - every preset's config.json is strict JSON (no duplicate keys) with
//    exactly the family's keys;
//  - the safetensors files hold exactly the tensors (names and shapes) that
//    the family's modeling_<family>.py in transformers creates for that
//    config.json, derived here from the config file alone (the table in
//    expectedTensors below, written from the modeling files);
//  - the same seed gives the same bytes, another seed other weights;
//  - gpt2 and llama files are byte-identical to those of the main branch
//    before the families were added (FNV-1a checksums of its output);
//  - no bias is stored as zero, in any dtype;
//  - --sharp makes q/k lines of fused projections twice as large as v
//    lines, in each family's layout;
//  - rope_scaling, sliding windows and the other options are written as
//    transformers writes them, and the command line rejects flags a family
//    has no setting for, naming the flag.
//
//===----------------------------------------------------------------------===//

#include "ModelWriter.h"

#include "TestSupport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#ifndef ATTN_TOOLS_DIR
#error "ATTN_TOOLS_DIR must name the directory of attn-make-model"
#endif

using namespace attn::modelgen;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

using attn::testing::CommandResult;
using attn::testing::run;
/// A fresh folder per test, removed afterwards.
struct TempDir : attn::testing::TempDir {
  TempDir() : attn::testing::TempDir("attn-make-model") {}
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//


std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t fnv1a(const std::string &bytes) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

ModelSpec preset(const std::string &name) {
  ModelSpec spec;
  EXPECT_TRUE(presetSpec(name, spec)) << name;
  return spec;
}

std::string writeOrDie(const ModelSpec &spec, const std::string &dir) {
  std::string error;
  EXPECT_TRUE(writeModel(spec, dir, error)) << error;
  return dir;
}

/// Strict JSON: nlohmann's parser plus a duplicate-key check.
Json parseStrict(const std::string &text, std::string &error) {
  std::vector<std::set<std::string>> keys;
  bool duplicate = false;
  auto callback = [&](int, Json::parse_event_t event, Json &parsed) {
    if (event == Json::parse_event_t::object_start)
      keys.emplace_back();
    else if (event == Json::parse_event_t::object_end)
      keys.pop_back();
    else if (event == Json::parse_event_t::key && !keys.empty() &&
             !keys.back().insert(parsed.get<std::string>()).second) {
      duplicate = true;
      error = "duplicate key " + parsed.get<std::string>();
    }
    return true;
  };
  try {
    Json j = Json::parse(text, callback);
    if (duplicate)
      return Json();
    return j;
  } catch (const std::exception &e) {
    error = e.what();
    return Json();
  }
}

Json loadConfig(const std::string &dir) {
  std::string error;
  Json config = parseStrict(readFile(dir + "/config.json"), error);
  EXPECT_TRUE(config.is_object()) << dir << ": " << error;
  return config;
}

struct StoredTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// A safetensors file read here: its header, checked to be contiguous, and
/// its data.
struct Safetensors {
  std::map<std::string, StoredTensor> tensors;
  std::string data;

  std::vector<float> f32(const std::string &name) const {
    const StoredTensor &t = tensors.at(name);
    EXPECT_EQ(t.dtype, "F32") << name;
    std::vector<float> out((t.end - t.begin) / 4);
    std::memcpy(out.data(), data.data() + t.begin, out.size() * 4);
    return out;
  }
  std::vector<uint16_t> u16(const std::string &name) const {
    const StoredTensor &t = tensors.at(name);
    std::vector<uint16_t> out((t.end - t.begin) / 2);
    std::memcpy(out.data(), data.data() + t.begin, out.size() * 2);
    return out;
  }
};

Safetensors loadSafetensors(const std::string &path) {
  Safetensors file;
  std::string bytes = readFile(path);
  EXPECT_GE(bytes.size(), 8u) << path;
  if (bytes.size() < 8)
    return file;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_LE(8 + n, bytes.size());
  std::string error;
  Json header = parseStrict(bytes.substr(8, n), error);
  EXPECT_TRUE(header.is_object()) << path << ": " << error;
  file.data = bytes.substr(8 + n);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    StoredTensor t;
    t.dtype = it.value().at("dtype").get<std::string>();
    t.shape = it.value().at("shape").get<std::vector<int64_t>>();
    auto offsets = it.value().at("data_offsets").get<std::vector<uint64_t>>();
    t.begin = offsets.at(0), t.end = offsets.at(1);
    uint64_t elements = 1;
    for (int64_t d : t.shape)
      elements *= static_cast<uint64_t>(d);
    uint64_t width = t.dtype == "F32" ? 4 : 2;
    EXPECT_EQ(t.end - t.begin, elements * width) << it.key();
    ranges.push_back({t.begin, t.end});
    file.tensors[it.key()] = t;
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (auto [b, e] : ranges) {
    EXPECT_EQ(b, at) << path << ": tensors back to back";
    at = e;
  }
  EXPECT_EQ(at, file.data.size()) << path << ": no trailing bytes";
  return file;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

bool isBias(const std::string &name) {
  return name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
}

//===----------------------------------------------------------------------===//
// The families' state_dicts, from config.json alone
//===----------------------------------------------------------------------===//
//
// Written from transformers' modeling_<family>.py: the modules each
// *ForCausalLM creates for a config, with the config classes' defaults for
// keys a config.json may leave out. Buffers that are not persistent (causal
// masks, rotary inv_freq, XGLM's sinusoid table) are not in a checkpoint.

using Shapes = std::map<std::string, std::vector<int64_t>>;

int64_t num(const Json &c, const char *key) { return c.at(key).get<int64_t>(); }
int64_t numOr(const Json &c, const char *key, int64_t fallback) {
  return c.contains(key) && !c.at(key).is_null() ? num(c, key) : fallback;
}
bool flagOr(const Json &c, const char *key, bool fallback) {
  return c.contains(key) ? c.at(key).get<bool>() : fallback;
}

Shapes expectedTensors(const Json &c) {
  Shapes s;
  std::string type = c.at("model_type").get<std::string>();
  auto linear = [&](const std::string &name, int64_t out, int64_t in,
                    bool bias) {
    s[name + ".weight"] = {out, in};
    if (bias)
      s[name + ".bias"] = {out};
  };
  auto layerNorm = [&](const std::string &name, int64_t d) {
    s[name + ".weight"] = {d};
    s[name + ".bias"] = {d};
  };

  if (type == "gpt2") { // GPT2LMHeadModel: Conv1D weights are [in, out].
    int64_t d = num(c, "n_embd"), l = num(c, "n_layer");
    int64_t f = numOr(c, "n_inner", 4 * d);
    s["wte.weight"] = {num(c, "vocab_size"), d};
    s["wpe.weight"] = {num(c, "n_positions"), d};
    for (int64_t i = 0; i < l; ++i) {
      std::string h = "h." + std::to_string(i) + ".";
      layerNorm(h + "ln_1", d);
      s[h + "attn.c_attn.weight"] = {d, 3 * d};
      s[h + "attn.c_attn.bias"] = {3 * d};
      s[h + "attn.c_proj.weight"] = {d, d};
      s[h + "attn.c_proj.bias"] = {d};
      layerNorm(h + "ln_2", d);
      s[h + "mlp.c_fc.weight"] = {d, f};
      s[h + "mlp.c_fc.bias"] = {f};
      s[h + "mlp.c_proj.weight"] = {f, d};
      s[h + "mlp.c_proj.bias"] = {d};
    }
    layerNorm("ln_f", d);
    return s; // lm_head tied to wte
  }
  if (type == "llama" || type == "mistral" || type == "qwen2" ||
      type == "qwen3" || type == "smollm3" || type == "gemma" ||
      type == "phi3" || type == "qwen3_moe" || type == "qwen2_moe" ||
      type == "mixtral") {
    const bool qwen3 = type == "qwen3" || type == "qwen3_moe";
    int64_t d = num(c, "hidden_size"), v = num(c, "vocab_size");
    int64_t heads = num(c, "num_attention_heads");
    int64_t kv = numOr(c, "num_key_value_heads", heads);
    // Qwen3Config's head_dim defaults to 128, not hidden / heads.
    int64_t hd = numOr(c, "head_dim", type == "qwen3" ? 128 : d / heads);
    int64_t f = num(c, "intermediate_size");
    // Qwen2MoeAttention: q/k/v biases by qkv_bias (default true).
    bool qkvBias = type == "qwen2" ||
                   (type == "qwen2_moe" && flagOr(c, "qkv_bias", true)) ||
                   (type != "phi3" && flagOr(c, "attention_bias", false));
    // Qwen3Attention: attention_bias covers o_proj too; q_norm, k_norm are
    // RMSNorm(head_dim).
    // SmolLM3Attention likewise (without the norms).
    bool oBias = (qwen3 || type == "smollm3") &&
                 flagOr(c, "attention_bias", false);
    // Qwen3MoeSparseMoeBlock on layer i unless i is in mlp_only_layers or
    // (i + 1) % decoder_sparse_step != 0; MixtralSparseMoeBlock on all.
    auto sparse = [&](int64_t i) {
      if (type == "mixtral")
        return true;
      if (type != "qwen3_moe" && type != "qwen2_moe")
        return false;
      for (const Json &layer : c.at("mlp_only_layers"))
        if (layer.get<int64_t>() == i)
          return false;
      return (i + 1) % numOr(c, "decoder_sparse_step", 1) == 0;
    };
    s["model.embed_tokens.weight"] = {v, d};
    for (int64_t i = 0; i < num(c, "num_hidden_layers"); ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      s[l + "input_layernorm.weight"] = {d};
      s[l + "post_attention_layernorm.weight"] = {d};
      if (type == "phi3") {
        s[l + "self_attn.qkv_proj.weight"] = {heads * hd + 2 * kv * hd, d};
        s[l + "mlp.gate_up_proj.weight"] = {2 * f, d};
      } else {
        linear(l + "self_attn.q_proj", heads * hd, d, qkvBias);
        linear(l + "self_attn.k_proj", kv * hd, d, qkvBias);
        linear(l + "self_attn.v_proj", kv * hd, d, qkvBias);
      }
      linear(l + "self_attn.o_proj", d, heads * hd, oBias);
      if (qwen3) {
        s[l + "self_attn.q_norm.weight"] = {hd};
        s[l + "self_attn.k_norm.weight"] = {hd};
      }
      if (sparse(i)) {
        bool mixtral = type == "mixtral";
        int64_t e = num(c, mixtral ? "num_local_experts" : "num_experts");
        int64_t ef = mixtral ? f : num(c, "moe_intermediate_size");
        std::string moe = l + (mixtral ? "block_sparse_moe." : "mlp.");
        s[moe + "gate.weight"] = {e, d};
        for (int64_t x = 0; x < e; ++x) {
          std::string ex = moe + "experts." + std::to_string(x) + ".";
          s[ex + (mixtral ? "w1" : "gate_proj") + ".weight"] = {ef, d};
          s[ex + (mixtral ? "w3" : "up_proj") + ".weight"] = {ef, d};
          s[ex + (mixtral ? "w2" : "down_proj") + ".weight"] = {d, ef};
        }
        // Qwen2MoeSparseMoeBlock: shared_expert (a Qwen2MoeMLP of
        // shared_expert_intermediate_size) and shared_expert_gate
        // (Linear(hidden, 1, bias=False)).
        if (type == "qwen2_moe") {
          int64_t sf = num(c, "shared_expert_intermediate_size");
          s[moe + "shared_expert.gate_proj.weight"] = {sf, d};
          s[moe + "shared_expert.up_proj.weight"] = {sf, d};
          s[moe + "shared_expert.down_proj.weight"] = {d, sf};
          s[moe + "shared_expert_gate.weight"] = {1, d};
        }
        continue;
      }
      if (type != "phi3") {
        s[l + "mlp.gate_proj.weight"] = {f, d};
        s[l + "mlp.up_proj.weight"] = {f, d};
      }
      s[l + "mlp.down_proj.weight"] = {d, f};
    }
    s["model.norm.weight"] = {d};
    if (!flagOr(c, "tie_word_embeddings", type == "gemma" || type == "smollm3"))
      s["lm_head.weight"] = {v, d};
    return s;
  }
  if (type == "gemma2" || type == "gemma3_text" || type == "gemma3") {
    // Gemma2/Gemma3DecoderLayer: four norms, attention_bias on q/k/v/o,
    // Gemma3Attention's q_norm / k_norm over head_dim. gemma3
    // (Gemma3ForConditionalGeneration's files): the text model under
    // language_model., with text_config's keys (absent ones take
    // Gemma3TextConfig's defaults), and the image part beside it.
    const bool mm = type == "gemma3";
    const Json &t = mm ? c.at("text_config") : c;
    const std::string root = mm ? "language_model." : "";
    int64_t d = num(t, "hidden_size"), v = numOr(t, "vocab_size", 262208);
    int64_t heads = num(t, "num_attention_heads");
    int64_t kv = numOr(t, "num_key_value_heads", 4);
    int64_t hd = numOr(t, "head_dim", 256), f = num(t, "intermediate_size");
    bool bias = flagOr(t, "attention_bias", false);
    s[root + "model.embed_tokens.weight"] = {v, d};
    for (int64_t i = 0; i < num(t, "num_hidden_layers"); ++i) {
      std::string l = root + "model.layers." + std::to_string(i) + ".";
      for (const char *norm :
           {"input_layernorm", "post_attention_layernorm",
            "pre_feedforward_layernorm", "post_feedforward_layernorm"})
        s[l + norm + ".weight"] = {d};
      linear(l + "self_attn.q_proj", heads * hd, d, bias);
      linear(l + "self_attn.k_proj", kv * hd, d, bias);
      linear(l + "self_attn.v_proj", kv * hd, d, bias);
      linear(l + "self_attn.o_proj", d, heads * hd, bias);
      if (type != "gemma2") {
        s[l + "self_attn.q_norm.weight"] = {hd};
        s[l + "self_attn.k_norm.weight"] = {hd};
      }
      s[l + "mlp.gate_proj.weight"] = {f, d};
      s[l + "mlp.up_proj.weight"] = {f, d};
      s[l + "mlp.down_proj.weight"] = {d, f};
    }
    s[root + "model.norm.weight"] = {d};
    if (!flagOr(t, "tie_word_embeddings", true))
      s[root + "lm_head.weight"] = {v, d};
    if (mm) {
      // SiglipVisionTransformer.post_layernorm, and
      // Gemma3MultiModalProjector's [vision hidden, text hidden].
      int64_t vh = num(c.at("vision_config"), "hidden_size");
      s["vision_tower.vision_model.post_layernorm.weight"] = {vh};
      s["multi_modal_projector.mm_input_projection_weight"] = {vh, d};
    }
    return s;
  }
  if (type == "gpt_oss") {
    // GptOssModel: q/k/v/o with biases, sinks [heads]; GptOssMLP's router
    // (weight, bias) and GptOssExperts' stacked parameters (x @ W).
    int64_t d = num(c, "hidden_size"), v = num(c, "vocab_size");
    int64_t f = num(c, "intermediate_size"), e = num(c, "num_local_experts");
    int64_t heads = num(c, "num_attention_heads"), kv = num(c, "num_key_value_heads");
    int64_t hd = num(c, "head_dim");
    s["model.embed_tokens.weight"] = {v, d};
    for (int64_t i = 0; i < num(c, "num_hidden_layers"); ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      s[l + "input_layernorm.weight"] = {d};
      s[l + "post_attention_layernorm.weight"] = {d};
      linear(l + "self_attn.q_proj", heads * hd, d, true);
      linear(l + "self_attn.k_proj", kv * hd, d, true);
      linear(l + "self_attn.v_proj", kv * hd, d, true);
      linear(l + "self_attn.o_proj", d, heads * hd, true);
      s[l + "self_attn.sinks"] = {heads};
      linear(l + "mlp.router", e, d, true);
      s[l + "mlp.experts.gate_up_proj"] = {e, d, 2 * f};
      s[l + "mlp.experts.gate_up_proj_bias"] = {e, 2 * f};
      s[l + "mlp.experts.down_proj"] = {e, f, d};
      s[l + "mlp.experts.down_proj_bias"] = {e, d};
    }
    s["model.norm.weight"] = {d};
    if (!flagOr(c, "tie_word_embeddings", false))
      s["lm_head.weight"] = {v, d};
    return s;
  }
  if (type == "gpt_neox") {
    int64_t d = num(c, "hidden_size"), v = num(c, "vocab_size");
    int64_t f = num(c, "intermediate_size");
    bool bias = flagOr(c, "attention_bias", true);
    s["gpt_neox.embed_in.weight"] = {v, d};
    for (int64_t i = 0; i < num(c, "num_hidden_layers"); ++i) {
      std::string l = "gpt_neox.layers." + std::to_string(i) + ".";
      layerNorm(l + "input_layernorm", d);
      layerNorm(l + "post_attention_layernorm", d);
      linear(l + "attention.query_key_value", 3 * d, d, bias);
      linear(l + "attention.dense", d, d, bias);
      linear(l + "mlp.dense_h_to_4h", f, d, true);
      linear(l + "mlp.dense_4h_to_h", d, f, true);
    }
    layerNorm("gpt_neox.final_layer_norm", d);
    if (!flagOr(c, "tie_word_embeddings", false))
      s["embed_out.weight"] = {v, d};
    return s;
  }
  if (type == "gptj") {
    int64_t d = num(c, "n_embd"), v = num(c, "vocab_size");
    int64_t f = numOr(c, "n_inner", 4 * d);
    s["transformer.wte.weight"] = {v, d};
    for (int64_t i = 0; i < num(c, "n_layer"); ++i) {
      std::string h = "transformer.h." + std::to_string(i) + ".";
      layerNorm(h + "ln_1", d);
      for (const char *p : {"q_proj", "k_proj", "v_proj", "out_proj"})
        linear(h + "attn." + p, d, d, false);
      linear(h + "mlp.fc_in", f, d, true);
      linear(h + "mlp.fc_out", d, f, true);
    }
    layerNorm("transformer.ln_f", d);
    if (!flagOr(c, "tie_word_embeddings", false))
      s["lm_head.weight"] = {v, d};
    s["lm_head.bias"] = {v}; // nn.Linear(n_embd, vocab_size): bias on
    return s;
  }
  if (type == "opt") {
    int64_t d = num(c, "hidden_size"), v = num(c, "vocab_size");
    int64_t wp = numOr(c, "word_embed_proj_dim", d);
    int64_t f = num(c, "ffn_dim");
    bool bias = flagOr(c, "enable_bias", true);
    bool before = flagOr(c, "do_layer_norm_before", true);
    std::string r = "model.decoder.";
    s[r + "embed_tokens.weight"] = {v, wp};
    // OPTLearnedPositionalEmbedding(num_embeddings + offset 2).
    s[r + "embed_positions.weight"] = {num(c, "max_position_embeddings") + 2,
                                       d};
    if (wp != d) {
      s[r + "project_out.weight"] = {wp, d};
      s[r + "project_in.weight"] = {d, wp};
    }
    if (before && !flagOr(c, "_remove_final_layer_norm", false))
      layerNorm(r + "final_layer_norm", d);
    for (int64_t i = 0; i < num(c, "num_hidden_layers"); ++i) {
      std::string l = r + "layers." + std::to_string(i) + ".";
      for (const char *p : {"q_proj", "k_proj", "v_proj", "out_proj"})
        linear(l + "self_attn." + p, d, d, bias);
      layerNorm(l + "self_attn_layer_norm", d);
      linear(l + "fc1", f, d, bias);
      linear(l + "fc2", d, f, bias);
      layerNorm(l + "final_layer_norm", d);
    }
    if (!flagOr(c, "tie_word_embeddings", true))
      s["lm_head.weight"] = {v, wp};
    return s;
  }
  if (type == "bloom") {
    int64_t d = num(c, "hidden_size"), v = num(c, "vocab_size");
    std::string r = "transformer.";
    s[r + "word_embeddings.weight"] = {v, d};
    layerNorm(r + "word_embeddings_layernorm", d);
    for (int64_t i = 0; i < num(c, "n_layer"); ++i) {
      std::string h = r + "h." + std::to_string(i) + ".";
      layerNorm(h + "input_layernorm", d);
      linear(h + "self_attention.query_key_value", 3 * d, d, true);
      linear(h + "self_attention.dense", d, d, true);
      layerNorm(h + "post_attention_layernorm", d);
      linear(h + "mlp.dense_h_to_4h", 4 * d, d, true);
      linear(h + "mlp.dense_4h_to_h", d, 4 * d, true);
    }
    layerNorm(r + "ln_f", d);
    if (!flagOr(c, "tie_word_embeddings", true))
      s["lm_head.weight"] = {v, d};
    return s;
  }
  if (type == "xglm") {
    int64_t d = num(c, "d_model"), v = num(c, "vocab_size");
    int64_t f = num(c, "ffn_dim");
    s["model.embed_tokens.weight"] = {v, d};
    for (int64_t i = 0; i < num(c, "num_layers"); ++i) {
      std::string l = "model.layers." + std::to_string(i) + ".";
      for (const char *p : {"q_proj", "k_proj", "v_proj", "out_proj"})
        linear(l + "self_attn." + p, d, d, true);
      layerNorm(l + "self_attn_layer_norm", d);
      linear(l + "fc1", f, d, true);
      linear(l + "fc2", d, f, true);
      layerNorm(l + "final_layer_norm", d);
    }
    layerNorm("model.layer_norm", d);
    if (!flagOr(c, "tie_word_embeddings", true))
      s["lm_head.weight"] = {v, d};
    return s;
  }
  ADD_FAILURE() << "no table for model_type " << type;
  return s;
}

//===----------------------------------------------------------------------===//
// The families' config.json keys
//===----------------------------------------------------------------------===//

/// Every key each family's config.json has (as save_pretrained writes the
/// family's config class); `optional` lists the ones that depend on the
/// options (checked by the option tests).
struct ConfigKeys {
  std::set<std::string> always, optional;
};

ConfigKeys configKeys(Family family) {
  const std::set<std::string> common = {
      "architectures", "model_type", "torch_dtype", "transformers_version",
      "use_cache", "vocab_size"};
  const std::set<std::string> llamaLike = {
      "attention_dropout", "bos_token_id", "eos_token_id", "hidden_act",
      "hidden_size", "initializer_range", "intermediate_size",
      "max_position_embeddings", "num_attention_heads", "num_hidden_layers",
      "num_key_value_heads", "rms_norm_eps", "rope_theta"};
  auto join = [](std::set<std::string> a, const std::set<std::string> &b) {
    a.insert(b.begin(), b.end());
    return a;
  };
  switch (family) {
  case Family::GPT2:
    return {join(common,
                 {"activation_function", "attn_pdrop", "bos_token_id",
                  "embd_pdrop", "eos_token_id", "initializer_range",
                  "layer_norm_epsilon", "n_ctx", "n_embd", "n_head",
                  "n_inner", "n_layer", "n_positions",
                  "reorder_and_upcast_attn", "resid_pdrop",
                  "scale_attn_by_inverse_layer_idx", "scale_attn_weights",
                  "summary_activation", "summary_first_dropout",
                  "summary_proj_to_labels", "summary_type",
                  "summary_use_proj"}),
            {}};
  case Family::Llama:
    return {join(join(common, llamaLike),
                 {"attention_bias", "mlp_bias", "pretraining_tp",
                  "rope_scaling", "tie_word_embeddings"}),
            {"head_dim"}};
  case Family::Mistral:
    return {join(join(common, llamaLike),
                 {"head_dim", "sliding_window", "tie_word_embeddings"}),
            {"rope_scaling"}};
  case Family::Qwen2:
    return {join(join(common, llamaLike),
                 {"max_window_layers", "sliding_window",
                  "tie_word_embeddings", "use_sliding_window"}),
            {"head_dim", "rope_scaling"}};
  case Family::Qwen3:
    return {
        join(join(common, llamaLike),
             {"attention_bias", "head_dim", "max_window_layers", "rope_scaling",
              "sliding_window", "tie_word_embeddings", "use_sliding_window"}),
        {"layer_types"}};
  case Family::Qwen3Moe:
    return {
        join(join(common, llamaLike),
             {"attention_bias", "decoder_sparse_step", "head_dim",
              "max_window_layers", "mlp_only_layers", "moe_intermediate_size",
              "norm_topk_prob", "num_experts", "num_experts_per_tok",
              "output_router_logits", "rope_scaling", "router_aux_loss_coef",
              "sliding_window", "tie_word_embeddings", "use_sliding_window"}),
        {}};
  case Family::Qwen2Moe:
    // Qwen/Qwen1.5-MoE-A2.7B's keys.
    return {join(join(common, llamaLike),
                 {"decoder_sparse_step", "max_window_layers", "mlp_only_layers",
                  "moe_intermediate_size", "norm_topk_prob", "num_experts",
                  "num_experts_per_tok", "output_router_logits",
                  "router_aux_loss_coef", "shared_expert_intermediate_size",
                  "sliding_window", "tie_word_embeddings", "use_sliding_window"}),
            {"head_dim", "layer_types", "rope_scaling"}};
  case Family::Mixtral:
    return {join(join(common, llamaLike),
                 {"num_experts_per_tok", "num_local_experts",
                  "output_router_logits", "router_aux_loss_coef",
                  "sliding_window", "tie_word_embeddings"}),
            {"head_dim", "rope_scaling"}};
  case Family::GptOss: {
    // openai/gpt-oss-20b's keys: no bos_token_id.
    std::set<std::string> always = join(join(common, llamaLike),
                                         {"attention_bias", "experts_per_token", "head_dim",
                                          "num_experts_per_tok", "num_local_experts",
                                          "output_router_logits", "pad_token_id",
                                          "router_aux_loss_coef", "sliding_window",
                                          "swiglu_limit", "tie_word_embeddings"});
    always.erase("bos_token_id");
    return {always, {"layer_types", "rope_scaling"}};
  }
  case Family::SmolLM3:
    return {join(join(common, llamaLike),
                 {"attention_bias", "mlp_bias", "rope_scaling",
                  "sliding_window", "use_sliding_window"}),
            {"head_dim", "layer_types", "no_rope_layer_interval",
             "no_rope_layers", "tie_word_embeddings"}};
  case Family::Gemma:
    return {join(join(common, llamaLike),
                 {"attention_bias", "head_dim", "hidden_activation",
                  "pad_token_id"}),
            {"rope_scaling", "tie_word_embeddings"}};
  case Family::Gemma2:
  case Family::Gemma3: {
    std::set<std::string> keys = join(
        join(common, llamaLike),
        {"attention_bias", "attn_logit_softcapping", "cache_implementation",
         "final_logit_softcapping", "head_dim", "hidden_activation",
         "pad_token_id", "query_pre_attn_scalar", "sliding_window"});
    if (family == Family::Gemma2)
      return {keys, {"layer_types", "rope_scaling", "tie_word_embeddings"}};
    return {join(keys, {"rope_local_base_freq", "rope_scaling",
                        "sliding_window_pattern"}),
            {"layer_types", "tie_word_embeddings"}};
  }
  case Family::Phi3:
    return {join(join(common, llamaLike),
                 {"attention_bias", "embd_pdrop", "original_max_position_embeddings",
                  "pad_token_id", "resid_pdrop", "rope_scaling",
                  "sliding_window", "tie_word_embeddings"}),
            {"partial_rotary_factor"}};
  case Family::GPTNeoX:
    return {join(common,
                 {"attention_bias", "attention_dropout", "bos_token_id",
                  "classifier_dropout", "eos_token_id", "hidden_act",
                  "hidden_dropout", "hidden_size", "initializer_range",
                  "intermediate_size", "layer_norm_eps",
                  "max_position_embeddings", "num_attention_heads",
                  "num_hidden_layers", "rope_scaling", "rotary_emb_base",
                  "rotary_pct", "tie_word_embeddings",
                  "use_parallel_residual"}),
            {}};
  case Family::GPTJ:
    return {join(common,
                 {"activation_function", "attn_pdrop", "bos_token_id",
                  "embd_pdrop", "eos_token_id", "initializer_range",
                  "layer_norm_epsilon", "n_embd", "n_head", "n_inner",
                  "n_layer", "n_positions", "resid_pdrop", "rotary_dim",
                  "tie_word_embeddings"}),
            {}};
  case Family::OPT:
    return {join(common,
                 {"_remove_final_layer_norm", "activation_dropout",
                  "activation_function", "attention_dropout", "bos_token_id",
                  "do_layer_norm_before", "dropout", "enable_bias",
                  "eos_token_id", "ffn_dim", "hidden_size", "init_std",
                  "layer_norm_elementwise_affine", "layerdrop",
                  "max_position_embeddings", "num_attention_heads",
                  "num_hidden_layers", "pad_token_id",
                  "word_embed_proj_dim"}),
            {"tie_word_embeddings"}};
  case Family::Bloom:
    return {join(common,
                 {"apply_residual_connection_post_layernorm",
                  "attention_dropout", "bos_token_id", "eos_token_id",
                  "hidden_dropout", "hidden_size", "initializer_range",
                  "layer_norm_epsilon", "n_head", "n_layer", "pad_token_id",
                  "pretraining_tp", "slow_but_exact"}),
            {"tie_word_embeddings"}};
  case Family::XGLM:
    return {join(common,
                 {"activation_dropout", "activation_function",
                  "attention_dropout", "attention_heads", "bos_token_id",
                  "d_model", "decoder_start_token_id", "dropout",
                  "eos_token_id", "ffn_dim", "init_std", "layerdrop",
                  "max_position_embeddings", "num_layers", "pad_token_id",
                  "scale_embedding"}),
            {"tie_word_embeddings"}};
  }
  return {};
}

/// Checks a written folder: config keys, names and shapes against the
/// table, biases nonzero. Returns the config.
Json checkFolder(const ModelSpec &spec, const std::string &dir,
                 const std::string &what) {
  SCOPED_TRACE(what);
  Json config = loadConfig(dir);
  if (!config.is_object())
    return config;
  auto checkKeys = [](const Json &object, const ConfigKeys &keys) {
    for (const std::string &key : keys.always)
      EXPECT_TRUE(object.contains(key)) << "missing key " << key;
    for (auto it = object.begin(); it != object.end(); ++it)
      EXPECT_TRUE(keys.always.count(it.key()) || keys.optional.count(it.key()))
          << "unexpected key " << it.key();
  };
  if (spec.multimodal) {
    // Gemma3Config's keys around text_config, which has the text model's
    // but those that moved out.
    EXPECT_EQ(config.at("model_type"), "gemma3");
    ConfigKeys text = configKeys(spec.family);
    const std::set<std::string> top = {
        "architectures", "bos_token_id", "eos_token_id", "pad_token_id",
        "torch_dtype", "transformers_version"};
    for (const std::string &key : top)
      text.always.erase(key);
    checkKeys(config.at("text_config"), text);
    EXPECT_EQ(config.at("text_config").at("model_type"), "gemma3_text");
    ConfigKeys outer{{"architectures", "boi_token_index", "eoi_token_index",
                      "image_token_index", "initializer_range",
                      "mm_tokens_per_image", "model_type", "text_config",
                      "vision_config"},
                     {"tie_word_embeddings"}};
    outer.always.insert(top.begin(), top.end());
    checkKeys(config, outer);
  } else {
    EXPECT_EQ(config.at("model_type"), familyName(spec.family));
    checkKeys(config, configKeys(spec.family));
  }
  // Every id a config names is a token of the vocabulary.
  for (const char *id : {"bos_token_id", "eos_token_id", "pad_token_id",
                         "decoder_start_token_id"})
    if (config.contains(id)) {
      EXPECT_GE(config.at(id).get<int64_t>(), 0) << id;
      EXPECT_LT(config.at(id).get<int64_t>(), spec.vocab) << id;
    }

  Shapes expected = expectedTensors(config);
  Safetensors file = loadSafetensors(dir + "/model.safetensors");
  Shapes stored;
  for (const auto &[name, t] : file.tensors)
    stored[spec.prefix.empty() || name.rfind(spec.prefix, 0) != 0
               ? name
               : name.substr(spec.prefix.size())] = t.shape;
  EXPECT_EQ(stored, expected);
  for (const auto &[name, shape] : expected)
    if (!stored.count(name))
      ADD_FAILURE() << "missing tensor " << name;
  for (const auto &[name, shape] : stored)
    if (!expected.count(name))
      ADD_FAILURE() << "unexpected tensor " << name;

  for (const auto &[name, t] : file.tensors) {
    EXPECT_EQ(t.dtype, dtypeName(spec.dtype)) << name;
    if (!isBias(name) || name.find("attn.bias") != std::string::npos)
      continue;
    size_t zeros = 0;
    if (spec.dtype == DType::F32) {
      for (float x : file.f32(name))
        zeros += x == 0.0f;
    } else {
      for (uint16_t x : file.u16(name))
        zeros += (x & 0x7FFF) == 0;
    }
    EXPECT_EQ(zeros, 0u) << name << " has zero elements";
  }
  return config;
}

bool isTiny(const std::string &name) { return name.rfind("tiny-", 0) == 0; }

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

TEST(WriterFamilies, EveryPresetWritesItsFamilysLayout) {
  TempDir dir;
  std::set<Family> families;
  for (const std::string &name : presetNames()) {
    ModelSpec spec = preset(name);
    families.insert(spec.family);
    EXPECT_EQ(validateSpec(spec), "") << name;
    if (!isTiny(name)) {
      // The large presets: config and plan only (no 500 MB files).
      std::string error;
      Json config = parseStrict(configJson(spec), error);
      ASSERT_TRUE(config.is_object()) << name << ": " << error;
      std::vector<TensorDesc> plan;
      ASSERT_TRUE(planTensors(spec, plan, error)) << error;
      Shapes planned;
      for (const TensorDesc &t : plan)
        planned[t.name] = t.shape;
      EXPECT_EQ(planned, expectedTensors(config)) << name;
      continue;
    }
    // tiny-gemma3: six layers, for one global layer after two local ones,
    // twice; tiny-smollm3-list: four, for the list's pattern;
    // tiny-qwen3-moe-sparse: four, for two sparse layers at step 2.
    EXPECT_LE(spec.layers, spec.family == Family::Gemma3 ? 6
                           : spec.family == Family::SmolLM3 ||
                                   spec.family == Family::Qwen3Moe
                               ? 4
                               : 3)
        << name;
    EXPECT_EQ(spec.hidden, 64) << name;
    EXPECT_LE(spec.heads, 4) << name;
    EXPECT_LE(std::abs(spec.vocab - 100), 5) << name;
    checkFolder(spec, writeOrDie(spec, dir.sub(name)), name);
  }
  EXPECT_EQ(families.size(), 19u) << "a tiny preset of every family";
}

/// A benchmark preset's shape against its checkpoint's config.json.
void expectShape(const ModelSpec &s, Family family, int64_t layers,
                 int64_t hidden, int64_t heads, int64_t kvHeads,
                 int64_t headDim, int64_t ffn, int64_t vocab,
                 int64_t maxPositions) {
  EXPECT_EQ(s.family, family);
  EXPECT_EQ(s.layers, layers);
  EXPECT_EQ(s.hidden, hidden);
  EXPECT_EQ(s.heads, heads);
  EXPECT_EQ(effectiveKvHeads(s), kvHeads);
  EXPECT_EQ(effectiveHeadDim(s), headDim);
  EXPECT_EQ(s.ffn, ffn);
  EXPECT_EQ(s.vocab, vocab);
  EXPECT_EQ(s.maxPositions, maxPositions);
  EXPECT_TRUE(s.tieEmbeddings);
  EXPECT_EQ(s.ropeTheta, 1e6);
  EXPECT_EQ(s.normEps, 1e-6);
}

TEST(WriterFamilies, PresetsExerciseEachFamilysFeatures) {
  // GQA where the family has it, an MQA variant, and the family's own
  // settings in its default preset.
  for (const char *name : {"tiny-llama", "tiny-mistral", "tiny-qwen2",
                           "tiny-qwen3", "tiny-gemma", "tiny-phi3"}) {
    ModelSpec s = preset(name);
    int64_t kv = effectiveKvHeads(s);
    EXPECT_TRUE(kv > 1 && kv < s.heads) << name << ": GQA";
  }
  for (const char *name : {"tiny-mistral-mqa", "tiny-gemma-mqa"})
    EXPECT_EQ(effectiveKvHeads(preset(name)), 1) << name;
  ModelSpec mistral = preset("tiny-mistral");
  EXPECT_NE(effectiveHeadDim(mistral) * mistral.heads, mistral.hidden)
      << "decoupled head_dim";
  EXPECT_GT(mistral.slidingWindow, 0);
  EXPECT_LT(mistral.slidingWindow, mistral.maxPositions);
  ModelSpec gemma = preset("tiny-gemma");
  EXPECT_NE(effectiveHeadDim(gemma) * gemma.heads, gemma.hidden);
  EXPECT_TRUE(gemma.tieEmbeddings);
  EXPECT_EQ(effectiveActivation(gemma), "gelu_pytorch_tanh");
  ModelSpec swa = preset("tiny-qwen2-swa");
  EXPECT_GT(swa.slidingWindow, 0);
  EXPECT_EQ(effectiveMaxWindowLayers(swa), 1);
  // Qwen3: three layers so that a window sits between full layers; the
  // windows (8) are shorter than the e2e tests' 40-token prompts.
  for (const char *name : {"tiny-qwen3", "tiny-qwen3-swa", "tiny-qwen3-bias"}) {
    ModelSpec q3 = preset(name);
    EXPECT_GE(q3.layers, 3) << name;
    EXPECT_NE(effectiveHeadDim(q3) * q3.heads, q3.hidden) << name;
  }
  ModelSpec q3swa = preset("tiny-qwen3-swa");
  EXPECT_EQ(q3swa.slidingWindow, 8);
  EXPECT_EQ(effectiveMaxWindowLayers(q3swa), 1) << "layer 0 full, 1 and 2 not";
  EXPECT_FALSE(q3swa.attentionBias);
  ModelSpec q3bias = preset("tiny-qwen3-bias");
  EXPECT_TRUE(q3bias.attentionBias);
  EXPECT_EQ(q3bias.slidingWindow, 8);
  EXPECT_EQ(q3bias.layerTypes,
            (std::vector<std::string>{"sliding_attention", "full_attention",
                                      "sliding_attention"}))
      << "a pattern max_window_layers cannot express";
  EXPECT_EQ(preset("tiny-qwen3").slidingWindow, 0);
  // Qwen/Qwen3-0.6B's config.json.
  ModelSpec q06 = preset("qwen3-0.6b");
  expectShape(q06, Family::Qwen3, 28, 1024, 16, 8, 128, 3072, 151936, 40960);
  EXPECT_EQ(q06.slidingWindow, 0);
  // Qwen/Qwen3-30B-A3B's config.json (untied, bf16 as it ships).
  ModelSpec a3b = preset("qwen3-30b-a3b");
  EXPECT_EQ(a3b.family, Family::Qwen3Moe);
  EXPECT_EQ(a3b.layers, 48);
  EXPECT_EQ(a3b.hidden, 2048);
  EXPECT_EQ(a3b.heads, 32);
  EXPECT_EQ(effectiveKvHeads(a3b), 4);
  EXPECT_EQ(effectiveHeadDim(a3b), 128);
  EXPECT_EQ(a3b.vocab, 151936);
  EXPECT_EQ(a3b.experts, 128);
  EXPECT_EQ(a3b.expertsPerToken, 8);
  EXPECT_EQ(a3b.moeFfn, 768);
  EXPECT_TRUE(a3b.normTopkProb);
  EXPECT_FALSE(a3b.tieEmbeddings);
  EXPECT_EQ(a3b.dtype, DType::BF16);
  // SmolLM3: GQA, head_dim 16, tied; a NoPE layer by an interval (layer
  // 1 of 3) and, in the list variant, one no interval gives.
  for (const char *name : {"tiny-smollm3", "tiny-smollm3-list"}) {
    ModelSpec sm = preset(name);
    EXPECT_EQ(sm.family, Family::SmolLM3) << name;
    EXPECT_EQ(effectiveKvHeads(sm), 2) << name;
    EXPECT_EQ(effectiveHeadDim(sm), 16) << name;
    EXPECT_TRUE(sm.tieEmbeddings) << name;
    EXPECT_EQ(sm.ropeTheta, 2e6) << name;
    EXPECT_EQ(sm.slidingWindow, 0) << name;
  }
  EXPECT_EQ(effectiveRopeLayers(preset("tiny-smollm3")),
            (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(preset("tiny-smollm3").noRopeLayers.empty());
  EXPECT_EQ(preset("tiny-smollm3").noRopeLayerInterval, 2);
  EXPECT_EQ(effectiveRopeLayers(preset("tiny-smollm3-list")),
            (std::vector<bool>{true, false, true, true}));
  EXPECT_TRUE(effectiveRopeLayers(preset("tiny-qwen3")).empty());
  // Gemma 2 and 3: GQA, head_dim != hidden / heads, query_pre_attn_scalar
  // != head_dim, windows (8) shorter than the tests' prompts, a global
  // layer between local ones.
  for (const char *name : {"tiny-gemma2", "tiny-gemma3", "tiny-gemma3-mm"}) {
    ModelSpec g = preset(name);
    int64_t kv = effectiveKvHeads(g);
    EXPECT_TRUE(kv > 1 && kv < g.heads) << name;
    EXPECT_NE(effectiveHeadDim(g) * g.heads, g.hidden) << name;
    EXPECT_NE(effectiveQueryPreAttnScalar(g),
              static_cast<double>(effectiveHeadDim(g)))
        << name;
    EXPECT_EQ(g.slidingWindow, 8) << name;
    EXPECT_GE(g.layers, 3) << name;
  }
  ModelSpec g2 = preset("tiny-gemma2");
  EXPECT_EQ(g2.attnSoftcap, 5.0);
  EXPECT_EQ(g2.finalSoftcap, 3.0);
  EXPECT_FALSE(g2.tieEmbeddings) << "logits of O(1) for the final softcap";
  EXPECT_EQ(effectiveSlidingLayers(g2), (std::vector<bool>{true, false, true}));
  ModelSpec g3 = preset("tiny-gemma3");
  EXPECT_EQ(effectiveSlidingLayers(g3),
            (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_NE(g3.ropeLocalTheta, g3.ropeTheta);
  EXPECT_EQ(g3.ropeScaling.type, RopeScaling::Type::Linear);
  EXPECT_EQ(g3.ropeScaling.factor, 8.0);
  EXPECT_EQ(g3.attnSoftcap, 0.0);
  EXPECT_TRUE(g3.tieEmbeddings);
  EXPECT_FALSE(g3.multimodal);
  ModelSpec mm = preset("tiny-gemma3-mm");
  EXPECT_TRUE(mm.multimodal);
  mm.multimodal = false;
  EXPECT_EQ(configJson(mm), configJson(g3)) << "the same text model";
  // google/gemma-3-1b-pt's config.json.
  ModelSpec g1 = preset("gemma3-1b");
  expectShape(g1, Family::Gemma3, 26, 1152, 4, 1, 256, 6912, 262144, 32768);
  EXPECT_EQ(g1.slidingWindow, 512);
  EXPECT_EQ(effectiveQueryPreAttnScalar(g1), 256.0);
  EXPECT_EQ(g1.ropeLocalTheta, 1e4);
  EXPECT_EQ(g1.ropeScaling.type, RopeScaling::Type::None);
  std::vector<bool> sliding = effectiveSlidingLayers(g1);
  for (size_t i = 0; i < sliding.size(); ++i)
    EXPECT_EQ(sliding[i], (i + 1) % 6 != 0) << i;
  EXPECT_EQ(effectiveRotaryDims(preset("tiny-phi3")), 16);
  EXPECT_EQ(effectiveRotaryDims(preset("tiny-phi3-partial")), 12);
  // tiny-phi3-longrope: tiny-phi3-partial plus longrope over 6 pairs.
  ModelSpec lr = preset("tiny-phi3-longrope");
  EXPECT_EQ(effectiveRotaryDims(lr), 12);
  EXPECT_EQ(lr.maxPositions, 64);
  EXPECT_EQ(lr.ropeScaling.type, RopeScaling::Type::LongRope);
  EXPECT_EQ(lr.ropeScaling.originalMaxPositions, 16);
  std::vector<double> shortF, longF;
  effectiveLongRopeFactors(lr, shortF, longF);
  ASSERT_EQ(shortF.size(), 6u);
  ASSERT_EQ(longF.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(shortF[i], 1.0 + 0.1 * i) << i;
    EXPECT_DOUBLE_EQ(longF[i], std::pow(20.0, i / 5.0)) << i;
  }
  // microsoft/Phi-4-mini-instruct's config.json: 32 layers, 3072 wide, 24
  // heads of 128 (8 kv), 8192, 200064, 131072 (original 4096), 96 of 128
  // dims rotate, theta 1e4, eps 1e-5, tied; its 48 long factors, short 1.
  ModelSpec p4 = preset("phi4-mini");
  EXPECT_EQ(p4.family, Family::Phi3);
  EXPECT_EQ(p4.layers, 32);
  EXPECT_EQ(p4.hidden, 3072);
  EXPECT_EQ(p4.heads, 24);
  EXPECT_EQ(effectiveKvHeads(p4), 8);
  EXPECT_EQ(effectiveHeadDim(p4), 128);
  EXPECT_EQ(effectiveRotaryDims(p4), 96);
  EXPECT_EQ(p4.ffn, 8192);
  EXPECT_EQ(p4.vocab, 200064);
  EXPECT_EQ(p4.maxPositions, 131072);
  EXPECT_EQ(p4.ropeTheta, 1e4);
  EXPECT_EQ(p4.normEps, 1e-5);
  EXPECT_TRUE(p4.tieEmbeddings);
  EXPECT_EQ(p4.ropeScaling.originalMaxPositions, 4096);
  EXPECT_EQ(p4.ropeScaling.shortFactor, std::vector<double>(48, 1.0));
  ASSERT_EQ(p4.ropeScaling.longFactor.size(), 48u);
  EXPECT_EQ(p4.ropeScaling.longFactor[1], 1.118320672);
  EXPECT_EQ(p4.ropeScaling.longFactor[30], 28.64115884);
  EXPECT_EQ(p4.ropeScaling.longFactor[47], 47.77);
  EXPECT_EQ(effectiveRotaryDims(preset("tiny-gpt_neox")), 4);
  EXPECT_TRUE(preset("tiny-gpt_neox").parallelResidual);
  EXPECT_FALSE(preset("tiny-gpt_neox-sequential").parallelResidual);
  EXPECT_EQ(effectiveRotaryDims(preset("tiny-gptj")), 8);
  EXPECT_TRUE(preset("tiny-opt").layerNormBefore);
  EXPECT_FALSE(preset("tiny-opt-postln").layerNormBefore);
  for (const std::string &name : presetNames())
    EXPECT_FALSE(preset(name).sharp) << name << ": --sharp is opt-in";
}

TEST(WriterFamilies, ConfigValues) {
  TempDir dir;
  auto config = [&](const char *name) {
    return loadConfig(writeOrDie(preset(name), dir.sub(name)));
  };
  Json m = config("tiny-mistral");
  EXPECT_EQ(m.at("head_dim"), 32);
  EXPECT_EQ(m.at("sliding_window"), 16);
  EXPECT_EQ(m.at("num_key_value_heads"), 2);
  EXPECT_EQ(m.at("architectures"), Json::array({"MistralForCausalLM"}));
  EXPECT_FALSE(m.contains("rope_scaling"));

  Json q = config("tiny-qwen2");
  EXPECT_EQ(q.at("use_sliding_window"), false);
  EXPECT_EQ(q.at("sliding_window"), 64) << "a window even when it is off";
  EXPECT_EQ(q.at("max_window_layers"), 2);
  EXPECT_TRUE(q.at("rope_theta").is_number_float());
  EXPECT_EQ(q.at("rope_theta").get<double>(), 1e6);
  EXPECT_FALSE(q.contains("head_dim"));
  Json qs = config("tiny-qwen2-swa");
  EXPECT_EQ(qs.at("use_sliding_window"), true);
  EXPECT_EQ(qs.at("sliding_window"), 8);
  EXPECT_EQ(qs.at("max_window_layers"), 1);

  // As Qwen3-0.6B's config.json writes them.
  Json q3 = config("tiny-qwen3");
  EXPECT_EQ(q3.at("architectures"), Json::array({"Qwen3ForCausalLM"}));
  EXPECT_EQ(q3.at("head_dim"), 32);
  EXPECT_EQ(q3.at("attention_bias"), false);
  EXPECT_EQ(q3.at("use_sliding_window"), false);
  EXPECT_TRUE(q3.at("sliding_window").is_null());
  EXPECT_EQ(q3.at("max_window_layers"), 3);
  EXPECT_TRUE(q3.at("rope_theta").is_number_integer()) << "Qwen3's 1000000";
  EXPECT_EQ(q3.at("rope_theta"), 1000000);
  EXPECT_TRUE(q3.at("rope_scaling").is_null());
  EXPECT_EQ(q3.at("tie_word_embeddings"), false);
  EXPECT_EQ(q3.at("rms_norm_eps").get<double>(), 1e-6);
  EXPECT_FALSE(q3.contains("layer_types"));
  Json q3s = config("tiny-qwen3-swa");
  EXPECT_EQ(q3s.at("use_sliding_window"), true);
  EXPECT_EQ(q3s.at("sliding_window"), 8);
  EXPECT_EQ(q3s.at("max_window_layers"), 1);
  EXPECT_FALSE(q3s.contains("layer_types"));
  Json q3b = config("tiny-qwen3-bias");
  EXPECT_EQ(q3b.at("attention_bias"), true);
  EXPECT_EQ(q3b.at("use_sliding_window"), true);
  EXPECT_EQ(q3b.at("layer_types"),
            Json::array(
                {"sliding_attention", "full_attention", "sliding_attention"}));
  // As HuggingFaceTB/SmolLM3-3B's: tied by default (no key), no head_dim,
  // mlp_bias false, a null window, the NoPE layers by interval or list.
  Json sm = config("tiny-smollm3");
  EXPECT_EQ(sm.at("model_type"), "smollm3");
  EXPECT_EQ(sm.at("architectures"), Json::array({"SmolLM3ForCausalLM"}));
  EXPECT_FALSE(sm.contains("tie_word_embeddings"));
  EXPECT_FALSE(sm.contains("head_dim"));
  EXPECT_EQ(sm.at("attention_bias"), false);
  EXPECT_EQ(sm.at("mlp_bias"), false);
  EXPECT_EQ(sm.at("use_sliding_window"), false);
  EXPECT_TRUE(sm.at("sliding_window").is_null());
  EXPECT_TRUE(sm.at("rope_scaling").is_null());
  EXPECT_EQ(sm.at("rope_theta").get<double>(), 2e6);
  EXPECT_EQ(sm.at("num_key_value_heads"), 2);
  EXPECT_FALSE(sm.contains("no_rope_layers"));
  EXPECT_EQ(sm.at("no_rope_layer_interval"), 2);
  Json sml = config("tiny-smollm3-list");
  EXPECT_EQ(sml.at("no_rope_layers"), Json::array({1, 0, 1, 1}));
  EXPECT_FALSE(sml.contains("no_rope_layer_interval"));
  // The large preset's config without writing its weights.
  std::string error;
  Json q06 = parseStrict(configJson(preset("qwen3-0.6b")), error);
  ASSERT_TRUE(q06.is_object()) << error;
  EXPECT_EQ(q06.at("tie_word_embeddings"), true);
  EXPECT_EQ(q06.at("max_position_embeddings"), 40960);
  EXPECT_EQ(q06.at("max_window_layers"), 28);

  // As google/gemma-2-2b's and google/gemma-3-1b-pt's config.json.
  Json g2 = config("tiny-gemma2");
  EXPECT_EQ(g2.at("architectures"), Json::array({"Gemma2ForCausalLM"}));
  EXPECT_EQ(g2.at("query_pre_attn_scalar"), 16);
  EXPECT_EQ(g2.at("attn_logit_softcapping").get<double>(), 5.0);
  EXPECT_EQ(g2.at("final_logit_softcapping").get<double>(), 3.0);
  EXPECT_EQ(g2.at("sliding_window"), 8);
  EXPECT_EQ(g2.at("head_dim"), 32);
  EXPECT_EQ(g2.at("hidden_activation"), "gelu_pytorch_tanh");
  EXPECT_EQ(g2.at("tie_word_embeddings"), false);
  EXPECT_EQ(g2.at("attention_bias"), false);
  EXPECT_EQ(g2.at("cache_implementation"), "hybrid");
  EXPECT_TRUE(g2.at("rope_theta").is_number_float());
  EXPECT_FALSE(g2.contains("layer_types")) << "even layers by default";
  EXPECT_FALSE(g2.contains("rope_scaling"));
  Json g3 = config("tiny-gemma3");
  EXPECT_EQ(g3.at("architectures"), Json::array({"Gemma3ForCausalLM"}));
  EXPECT_EQ(g3.at("sliding_window_pattern"), 3);
  EXPECT_TRUE(g3.at("rope_theta").is_number_integer());
  EXPECT_EQ(g3.at("rope_theta"), 1000000);
  EXPECT_EQ(g3.at("rope_local_base_freq"), 10000);
  EXPECT_EQ(g3.at("rope_scaling"),
            Json::parse(R"({"factor": 8.0, "rope_type": "linear"})"));
  EXPECT_TRUE(g3.at("attn_logit_softcapping").is_null());
  EXPECT_TRUE(g3.at("final_logit_softcapping").is_null());
  EXPECT_FALSE(g3.contains("tie_word_embeddings")) << "tied by default";
  // The multimodal form: text_config holds the text keys.
  Json mm = config("tiny-gemma3-mm");
  EXPECT_EQ(mm.at("model_type"), "gemma3");
  EXPECT_EQ(mm.at("architectures"),
            Json::array({"Gemma3ForConditionalGeneration"}));
  Json text = mm.at("text_config");
  // All but the keys Gemma3Config holds itself.
  for (const char *key :
       {"architectures", "torch_dtype", "transformers_version",
        "bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (std::string(key) != "architectures")
      EXPECT_EQ(mm.at(key), g3.at(key)) << key;
    g3.erase(key);
  }
  EXPECT_EQ(text, g3);
  EXPECT_EQ(mm.at("vision_config").at("model_type"), "siglip_vision_model");
  std::string g1Error;
  Json g1 = parseStrict(configJson(preset("gemma3-1b")), g1Error);
  ASSERT_TRUE(g1.is_object()) << g1Error;
  EXPECT_EQ(g1.at("sliding_window"), 512);
  EXPECT_EQ(g1.at("sliding_window_pattern"), 6);
  EXPECT_EQ(g1.at("query_pre_attn_scalar"), 256);
  EXPECT_EQ(g1.at("max_position_embeddings"), 32768);
  EXPECT_TRUE(g1.at("rope_scaling").is_null());

  Json g = config("tiny-gemma");
  EXPECT_EQ(g.at("hidden_act"), "gelu_pytorch_tanh");
  EXPECT_EQ(g.at("hidden_activation"), "gelu_pytorch_tanh");
  EXPECT_EQ(g.at("head_dim"), 32);
  EXPECT_FALSE(g.contains("tie_word_embeddings"))
      << "GemmaConfig ties by default: save_pretrained leaves it out";

  Json p = config("tiny-phi3-partial");
  EXPECT_EQ(p.at("partial_rotary_factor").get<double>(), 0.75);
  EXPECT_TRUE(p.at("rope_scaling").is_null());
  EXPECT_EQ(p.at("original_max_position_embeddings"), 64);
  // longrope as Phi-3.5-mini / Phi-4-mini write it: the legacy "type", no
  // factor, the original length at the top level.
  Json lr = config("tiny-phi3-longrope");
  EXPECT_EQ(lr.at("partial_rotary_factor").get<double>(), 0.75);
  EXPECT_EQ(lr.at("max_position_embeddings"), 64);
  EXPECT_EQ(lr.at("original_max_position_embeddings"), 16);
  const Json &rs = lr.at("rope_scaling");
  ASSERT_TRUE(rs.is_object());
  EXPECT_EQ(rs.size(), 3u) << rs.dump();
  EXPECT_EQ(rs.at("type"), "longrope");
  ASSERT_EQ(rs.at("short_factor").size(), 6u);
  ASSERT_EQ(rs.at("long_factor").size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rs.at("short_factor")[i].get<double>(), 1.0 + 0.5 * i / 5.0);
    EXPECT_EQ(rs.at("long_factor")[i].get<double>(), std::pow(20.0, i / 5.0));
  }
  EXPECT_TRUE(rs.at("long_factor")[0].is_number_float());
  {
    // phi4-mini: the config only (the weights are 7.7 GB).
    std::string error;
    Json p4 = parseStrict(configJson(preset("phi4-mini")), error);
    ASSERT_TRUE(p4.is_object()) << error;
    EXPECT_EQ(p4.at("original_max_position_embeddings"), 4096);
    EXPECT_EQ(p4.at("max_position_embeddings"), 131072);
    EXPECT_EQ(p4.at("partial_rotary_factor").get<double>(), 0.75);
    EXPECT_EQ(p4.at("tie_word_embeddings"), true); // as the real file
    const Json &r4 = p4.at("rope_scaling");
    EXPECT_EQ(r4.at("type"), "longrope");
    EXPECT_EQ(r4.at("short_factor"), Json(std::vector<double>(48, 1.0)));
    ASSERT_EQ(r4.at("long_factor").size(), 48u);
    EXPECT_EQ(r4.at("long_factor")[2].get<double>(), 1.250641126);
    EXPECT_EQ(r4.at("long_factor")[47].get<double>(), 47.77);
    EXPECT_FALSE(r4.contains("factor"));
  }
  EXPECT_FALSE(config("tiny-phi3").contains("partial_rotary_factor"));

  Json n = config("tiny-gpt_neox");
  EXPECT_EQ(n.at("rotary_pct").get<double>(), 0.25);
  EXPECT_TRUE(n.at("rotary_emb_base").is_number_integer())
      << "Pythia's int-typed rotary_emb_base";
  EXPECT_EQ(n.at("use_parallel_residual"), true);
  EXPECT_EQ(config("tiny-gpt_neox-sequential").at("use_parallel_residual"),
            false);

  Json j = config("tiny-gptj");
  EXPECT_EQ(j.at("rotary_dim"), 8);
  EXPECT_TRUE(j.at("n_inner").is_null());

  Json o = config("tiny-opt-postln");
  EXPECT_EQ(o.at("do_layer_norm_before"), false);
  EXPECT_EQ(o.at("word_embed_proj_dim"), 64) << "always written, as hidden_size";

  Json b = config("tiny-bloom");
  EXPECT_FALSE(b.contains("max_position_embeddings")) << "ALiBi";
  EXPECT_EQ(b.at("n_head"), 4);
  EXPECT_EQ(b.at("n_layer"), 2);

  Json x = config("tiny-xglm");
  EXPECT_EQ(x.at("scale_embedding"), true);
  EXPECT_EQ(x.at("d_model"), 64);
  EXPECT_EQ(x.at("attention_heads"), 4);
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

ModelSpec withRope(const char *name, const std::string &text) {
  ModelSpec spec = preset(name);
  std::string error;
  EXPECT_TRUE(parseRopeScaling(text, spec.ropeScaling, error)) << error;
  return spec;
}

TEST(WriterFamilies, RopeScalingAsTransformersWritesIt) {
  TempDir dir;
  struct Case {
    const char *preset;
    std::string spec;
    Json expected;
  };
  std::vector<Case> cases = {
      {"tiny-llama", "linear:4", {{"rope_type", "linear"}, {"factor", 4.0}}},
      {"tiny-mistral", "dynamic:2.5",
       {{"rope_type", "dynamic"}, {"factor", 2.5}}},
      {"tiny-qwen2", "yarn:4", {{"rope_type", "yarn"}, {"factor", 4.0}}},
      {"tiny-gemma", "yarn:4:32",
       {{"rope_type", "yarn"},
        {"factor", 4.0},
        {"original_max_position_embeddings", 32}}},
      {"tiny-llama", "yarn:2:16,beta_fast=16,beta_slow=2,attention_factor=1.5",
       {{"rope_type", "yarn"},
        {"factor", 2.0},
        {"original_max_position_embeddings", 16},
        {"beta_fast", 16.0},
        {"beta_slow", 2.0},
        {"attention_factor", 1.5}}},
      {"tiny-llama", "llama3:8:1:4:32",
       {{"rope_type", "llama3"},
        {"factor", 8.0},
        {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0},
        {"original_max_position_embeddings", 32}}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ModelSpec spec = withRope(cases[i].preset, cases[i].spec);
    std::string path = writeOrDie(spec, dir.sub(std::to_string(i)));
    Json config = checkFolder(spec, path, cases[i].spec);
    EXPECT_EQ(config.at("rope_scaling"), cases[i].expected) << cases[i].spec;
    // Floats stay floats (transformers' validation wants a float factor)
    // and the nested keys are sorted like json.dumps(sort_keys=True).
    EXPECT_TRUE(config.at("rope_scaling").at("factor").is_number_float());
    std::string text = readFile(path + "/config.json");
    EXPECT_NE(text.find("\"rope_scaling\": {\n    \""), std::string::npos);
  }
  // The llama preset without scaling keeps its null.
  TempDir none;
  EXPECT_TRUE(
      loadConfig(writeOrDie(preset("tiny-llama"), none.sub("l"))).at("rope_scaling")
          .is_null());
}

TEST(WriterFamilies, RopeScalingParser) {
  RopeScaling r;
  std::string error;
  EXPECT_TRUE(parseRopeScaling("llama3:8:1:4:8192", r, error));
  EXPECT_EQ(r.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(r.factor, 8.0);
  EXPECT_EQ(r.lowFreqFactor, 1.0);
  EXPECT_EQ(r.highFreqFactor, 4.0);
  EXPECT_EQ(r.originalMaxPositions, 8192);
  EXPECT_TRUE(parseRopeScaling("yarn:4", r, error));
  EXPECT_EQ(r.originalMaxPositions, 0) << "omitted unless given";
  EXPECT_EQ(r.betaFast, 0.0);
  EXPECT_TRUE(parseRopeScaling("longrope:4096", r, error)) << error;
  EXPECT_EQ(r.type, RopeScaling::Type::LongRope);
  EXPECT_EQ(r.originalMaxPositions, 4096);
  EXPECT_EQ(r.factor, 1.0);
  EXPECT_TRUE(r.shortFactor.empty() && r.longFactor.empty());
  EXPECT_TRUE(parseRopeScaling("longrope:16,short=1/1.5,long=1/20", r, error))
      << error;
  EXPECT_EQ(r.shortFactor, (std::vector<double>{1.0, 1.5}));
  EXPECT_EQ(r.longFactor, (std::vector<double>{1.0, 20.0}));
  for (const char *bad :
       {"longrope", "longrope:", "longrope:0", "longrope:16:2",
        "longrope:16,short=1/2", "longrope:16,long=1/2",
        "longrope:16,short=1/0,long=1/2", "longrope:16,short=1/x,long=1/2",
        "longrope:16,short=1,short=2,long=1", "longrope:16,beta_fast=2",
        "yarn:2,short=1/2"}) {
    EXPECT_FALSE(parseRopeScaling(bad, r, error)) << bad;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  for (const char *bad :
       {"", "linear", "linear:", "linear:x", "linear:2:3", "dynamic:2:3",
        "yarn:2:0", "yarn:2:3:4", "yarn:2,beta=1", "yarn:2,beta_fast",
        "yarn:2,beta_fast=-1", "linear:2,beta_fast=1", "llama3:8:1:4",
        "llama3:8:1:4:0", "ntk:2"}) {
    EXPECT_FALSE(parseRopeScaling(bad, r, error)) << bad;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(WriterFamilies, OptionVariantsKeepTheLayout) {
  TempDir dir;
  std::vector<std::pair<std::string, std::function<void(ModelSpec &)>>> edits =
      {
          {"tiny-mistral", [](ModelSpec &s) { s.slidingWindow = 0; }},
          {"tiny-mistral", [](ModelSpec &s) { s.headDim = 0; }},
          {"tiny-mistral", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-qwen2", [](ModelSpec &s) { s.headDim = 8; }},
          {"tiny-qwen2", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-qwen2",
           [](ModelSpec &s) { s.slidingWindow = 4, s.maxWindowLayers = 0; }},
          {"tiny-qwen3", [](ModelSpec &s) { s.headDim = 0; }},
          {"tiny-qwen3", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-qwen3", [](ModelSpec &s) { s.attentionBias = true; }},
          {"tiny-qwen3-swa", [](ModelSpec &s) { s.kvHeads = 1; }},
          {"tiny-qwen3-bias", [](ModelSpec &s) { s.attentionBias = false; }},
          {"tiny-qwen3", [](ModelSpec &s) { s.sharp = true; }},
          {"tiny-smollm3", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-smollm3", [](ModelSpec &s) { s.attentionBias = true; }},
          {"tiny-smollm3", [](ModelSpec &s) { s.headDim = 8; }},
          {"tiny-smollm3",
           [](ModelSpec &s) {
             s.noRopeLayerInterval = 2, s.slidingWindow = 4;
           }},
          {"tiny-smollm3-list",
           [](ModelSpec &s) {
             s.slidingWindow = 4;
             s.layerTypes = {"sliding_attention", "full_attention",
                             "full_attention", "full_attention"};
           }},
          {"tiny-smollm3-list", [](ModelSpec &s) { s.sharp = true; }},
          {"tiny-gemma", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-gemma", [](ModelSpec &s) { s.headDim = 16; }},
          {"tiny-gemma2", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-gemma2", [](ModelSpec &s) { s.attentionBias = true; }},
          {"tiny-gemma2",
           [](ModelSpec &s) {
             s.attnSoftcap = s.finalSoftcap = 0, s.queryPreAttnScalar = 0;
             s.layerTypes = {"full_attention", "sliding_attention",
                             "full_attention"};
           }},
          {"tiny-gemma2",
           [](ModelSpec &s) {
             s.slidingWindow = 0;
             s.layerTypes.assign(3, "full_attention");
           }},
          {"tiny-gemma3", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-gemma3", [](ModelSpec &s) { s.attentionBias = true; }},
          {"tiny-gemma3", [](ModelSpec &s) { s.slidingWindowPattern = 0; }},
          {"tiny-gemma3-mm", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-gemma3-mm", [](ModelSpec &s) { s.attentionBias = true; }},
          {"tiny-gemma3-mm", [](ModelSpec &s) { s.sharp = true; }},
          {"tiny-phi3", [](ModelSpec &s) { s.kvHeads = 1; }},
          {"tiny-phi3", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-gpt_neox", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-gpt_neox", [](ModelSpec &s) { s.rotaryFraction = 1.0; }},
          {"tiny-gptj", [](ModelSpec &s) { s.ffn = 100; }},
          {"tiny-gptj", [](ModelSpec &s) { s.tieEmbeddings = true; }},
          {"tiny-gptj", [](ModelSpec &s) { s.rotaryDim = 0; }},
          {"tiny-opt", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-opt", [](ModelSpec &s) { s.layerNormBefore = false; }},
          {"tiny-opt-postln", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-bloom", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-bloom", [](ModelSpec &s) { s.heads = 8; }},
          {"tiny-xglm", [](ModelSpec &s) { s.scaleEmbedding = false; }},
          {"tiny-xglm", [](ModelSpec &s) { s.tieEmbeddings = false; }},
          {"tiny-llama", [](ModelSpec &s) { s.sharp = true; }},
          {"tiny-gpt2", [](ModelSpec &s) { s.sharp = true; }},
      };
  for (size_t i = 0; i < edits.size(); ++i) {
    ModelSpec spec = preset(edits[i].first);
    edits[i].second(spec);
    ASSERT_EQ(validateSpec(spec), "") << i;
    std::string path = writeOrDie(spec, dir.sub(std::to_string(i)));
    Json c = checkFolder(spec, path, edits[i].first + " #" + std::to_string(i));
    if (spec.family != Family::GPT2) {
      bool tied = c.contains("tie_word_embeddings")
                      ? c.at("tie_word_embeddings").get<bool>()
                      : familyTiesByDefault(spec.family);
      EXPECT_EQ(tied, spec.tieEmbeddings) << i;
    }
  }
  // A few values of those variants.
  ModelSpec q = preset("tiny-qwen2");
  q.headDim = 8;
  Json qc = loadConfig(writeOrDie(q, dir.sub("q")));
  EXPECT_EQ(qc.at("head_dim"), 8);
  ModelSpec m = preset("tiny-mistral");
  m.slidingWindow = 0, m.headDim = 0;
  Json mc = loadConfig(writeOrDie(m, dir.sub("m")));
  EXPECT_TRUE(mc.at("sliding_window").is_null());
  EXPECT_EQ(mc.at("head_dim"), 16) << "mistral writes head_dim always";
  ModelSpec g = preset("tiny-gemma");
  g.tieEmbeddings = false;
  EXPECT_EQ(loadConfig(writeOrDie(g, dir.sub("g"))).at("tie_word_embeddings"),
            false);
  // qwen3 writes head_dim even when it is hidden / heads (absent means 128),
  // and a non-integral rope_theta as a float.
  ModelSpec q3 = preset("tiny-qwen3");
  q3.headDim = 0, q3.ropeTheta = 12345.5;
  Json q3c = loadConfig(writeOrDie(q3, dir.sub("q3")));
  EXPECT_EQ(q3c.at("head_dim"), 16);
  EXPECT_EQ(q3c.at("rope_theta").get<double>(), 12345.5);
}

TEST(WriterFamilies, InvalidOptionsAreOneLineErrors) {
  struct Case {
    std::string preset;
    std::function<void(ModelSpec &)> edit;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"tiny-llama", [](ModelSpec &s) { s.slidingWindow = 4; },
       "sliding window applies only to mistral, qwen2, qwen3, smollm3, "
       "gemma2 and gemma3_text"},
      {"tiny-mistral", [](ModelSpec &s) { s.maxWindowLayers = 1; },
       "max_window_layers applies only to qwen2 and qwen3"},
      {"tiny-qwen2", [](ModelSpec &s) { s.maxWindowLayers = 3; },
       "max_window_layers must be in [0, layers]"},
      {"tiny-qwen3", [](ModelSpec &s) { s.maxWindowLayers = 4; },
       "max_window_layers must be in [0, layers]"},
      {"tiny-qwen2", [](ModelSpec &s) { s.attentionBias = true; },
       "attention_bias applies only to qwen3, smollm3, gemma2 and "
       "gemma3_text"},
      {"tiny-qwen2",
       [](ModelSpec &s) {
         s.layerTypes = {"full_attention", "full_attention"};
       },
       "layer_types applies only to qwen3, smollm3, gemma2 and gemma3_text"},
      {"tiny-qwen3", [](ModelSpec &s) { s.noRopeLayerInterval = 2; },
       "no_rope_layers and no_rope_layer_interval apply only to smollm3"},
      {"tiny-llama", [](ModelSpec &s) { s.noRopeLayers = {1, 0}; },
       "no_rope_layers and no_rope_layer_interval apply only to smollm3"},
      {"tiny-smollm3-list", [](ModelSpec &s) { s.layers = 5; },
       "no_rope_layers needs one entry per layer (5), got 4"},
      {"tiny-smollm3-list", [](ModelSpec &s) { s.noRopeLayers[2] = 2; },
       "no_rope_layers entries must be 0 (NoPE) or 1 (RoPE), got 2"},
      {"tiny-smollm3-list", [](ModelSpec &s) { s.noRopeLayerInterval = 2; },
       "no_rope_layers and no_rope_layer_interval are exclusive"},
      {"tiny-smollm3", [](ModelSpec &s) { s.noRopeLayerInterval = -1; },
       "no_rope_layer_interval out of range"},
      {"tiny-smollm3",
       [](ModelSpec &s) { s.noRopeLayerInterval = 5, s.slidingWindow = 4; },
       "smollm3 slides only its NoPE layers (without layer_types): a sliding "
       "window needs one"},
      {"tiny-smollm3", [](ModelSpec &s) { s.activation = "gelu"; },
       "smollm3 models use hidden_act silu"},
      {"tiny-qwen3-bias", [](ModelSpec &s) { s.layers = 4; },
       "layer_types needs one entry per layer (4), got 3"},
      {"tiny-qwen3-bias",
       [](ModelSpec &s) { s.layerTypes[1] = "chunked_attention"; },
       "layer_types entries must be full_attention or sliding_attention, got "
       "'chunked_attention'"},
      {"tiny-qwen3-bias", [](ModelSpec &s) { s.slidingWindow = 0; },
       "layer_types has sliding_attention layers but no sliding window"},
      {"tiny-qwen3", [](ModelSpec &s) { s.activation = "gelu"; },
       "qwen3 models use hidden_act silu"},
      {"tiny-qwen3", [](ModelSpec &s) { s.kvHeads = 3; },
       "kv heads (3) must divide heads (4)"},
      {"tiny-gpt_neox",
       [](ModelSpec &s) { s.ropeScaling.type = RopeScaling::Type::Linear; },
       "rope_scaling applies only to llama, mistral, qwen2, qwen3, smollm3, "
       "gemma, gemma2 and gemma3_text"},
      {"tiny-llama",
       [](ModelSpec &s) {
         s.ropeScaling.type = RopeScaling::Type::Linear;
         s.ropeScaling.factor = 0.5;
       },
       "factor must be finite and >= 1"},
      {"tiny-gpt_neox", [](ModelSpec &s) { s.kvHeads = 2; },
       "gpt_neox has no grouped-query attention"},
      {"tiny-opt", [](ModelSpec &s) { s.headDim = 8; },
       "opt has no head_dim setting"},
      {"tiny-bloom", [](ModelSpec &s) { s.ffn = 100; },
       "bloom has no ffn setting"},
      {"tiny-xglm", [](ModelSpec &s) { s.normEps = 1e-6; },
       "xglm has no layer norm epsilon setting"},
      {"tiny-gptj", [](ModelSpec &s) { s.ropeTheta = 5e5; },
       "gptj has no rope theta setting"},
      {"tiny-opt", [](ModelSpec &s) { s.ropeTheta = 5e5; },
       "opt has no rotary embeddings"},
      {"tiny-gptj", [](ModelSpec &s) { s.rotaryDim = 18; },
       "rotary dims (18 of head dim 16)"},
      {"tiny-gpt_neox", [](ModelSpec &s) { s.rotaryFraction = 0.1; },
       "rotary dims (1 of head dim 16)"},
      {"tiny-phi3", [](ModelSpec &s) { s.rotaryFraction = 1.5; },
       "rotary fraction must be in (0, 1]"},
      {"tiny-phi3",
       [](ModelSpec &s) {
         s.ropeScaling.type = RopeScaling::Type::Linear;
         s.ropeScaling.factor = 2;
       },
       "phi3 rope_scaling must be longrope (Phi3Config allows no other), "
       "got linear"},
      {"tiny-llama",
       [](ModelSpec &s) {
         s.ropeScaling.type = RopeScaling::Type::LongRope;
         s.ropeScaling.originalMaxPositions = 16;
       },
       "longrope rope_scaling applies only to phi3 models"},
      {"tiny-phi3-longrope",
       [](ModelSpec &s) { s.ropeScaling.originalMaxPositions = 0; },
       "longrope rope_scaling needs original_max_position_embeddings"},
      {"tiny-phi3-longrope", [](ModelSpec &s) { s.ropeScaling.factor = 4; },
       "longrope rope_scaling takes no factor"},
      {"tiny-phi3-longrope",
       [](ModelSpec &s) { s.ropeScaling.attentionFactor = 1.2; },
       "longrope rope_scaling takes only original_max_position_embeddings, "
       "short_factor and long_factor"},
      {"tiny-phi3-longrope",
       [](ModelSpec &s) {
         s.ropeScaling.shortFactor.assign(8, 1.0);
         s.ropeScaling.longFactor.assign(8, 2.0);
       },
       "longrope short_factor has 8 numbers; the 12 rotary dims need 6"},
      {"tiny-phi3-longrope",
       [](ModelSpec &s) {
         s.ropeScaling.shortFactor.assign(6, 1.0);
         s.ropeScaling.longFactor = {1, 2, 3, 4, 5, -6};
       },
       "longrope long_factor values must be finite and positive, got -6.0"},
      {"tiny-phi3-longrope",
       [](ModelSpec &s) { s.ropeScaling.shortFactor.assign(6, 1.0); },
       "needs both short_factor and long_factor, or neither"},
      {"tiny-llama",
       [](ModelSpec &s) {
         s.ropeScaling.type = RopeScaling::Type::Linear;
         s.ropeScaling.factor = 2;
         s.ropeScaling.longFactor = {1.0};
       },
       "short_factor and long_factor apply only to longrope"},
      {"tiny-gemma", [](ModelSpec &s) { s.activation = "silu"; },
       "gemma models use hidden_act gelu_pytorch_tanh"},
      {"tiny-qwen2", [](ModelSpec &s) { s.activation = "gelu"; },
       "qwen2 models use hidden_act silu"},
      {"tiny-bloom", [](ModelSpec &s) { s.activation = "gelu"; },
       "bloom has no activation setting"},
      {"tiny-opt", [](ModelSpec &s) { s.activation = "swish"; },
       "unsupported opt activation 'swish'"},
      {"tiny-mistral", [](ModelSpec &s) { s.extraBuffers = true; },
       "apply only to gpt2 and llama"},
      {"tiny-xglm", [](ModelSpec &s) { s.prefix = "x."; },
       "prefix applies only to gpt2"},
      {"tiny-llama", [](ModelSpec &s) { s.parallelResidual = false; },
       "use_parallel_residual applies only to gpt_neox"},
      {"tiny-gptj", [](ModelSpec &s) { s.layerNormBefore = false; },
       "do_layer_norm_before applies only to opt"},
      {"tiny-opt", [](ModelSpec &s) { s.scaleEmbedding = false; },
       "scale_embedding applies only to xglm"},
      {"tiny-gemma", [](ModelSpec &s) { s.heads = 3, s.headDim = 16; },
       "transformers checks even with head_dim"},
      {"tiny-xglm", [](ModelSpec &s) { s.ffn = 0; },
       "xglm needs an ffn (ffn_dim) >= 1"},
      {"tiny-gemma2", [](ModelSpec &s) { s.slidingWindow = 0; },
       "gemma2 slides some layers (by its pattern or layer_types): they need "
       "a sliding window"},
      {"tiny-gemma3",
       [](ModelSpec &s) { s.slidingWindow = 0, s.slidingWindowPattern = 6; },
       "gemma3_text slides some layers"},
      {"tiny-gemma3", [](ModelSpec &s) { s.layerTypes = {"full_attention"}; },
       "layer_types needs one entry per layer (6), got 1"},
      {"tiny-gemma", [](ModelSpec &s) { s.attnSoftcap = 5; },
       "query_pre_attn_scalar and the softcaps apply only to gemma2 and "
       "gemma3_text"},
      {"tiny-gemma2", [](ModelSpec &s) { s.finalSoftcap = -1; },
       "the softcaps must be finite and >= 0"},
      {"tiny-gemma2", [](ModelSpec &s) { s.multimodal = true; },
       "the multimodal form apply only to gemma3_text"},
      {"tiny-gemma2", [](ModelSpec &s) { s.slidingWindowPattern = 3; },
       "sliding_window_pattern, rope_local_base_freq"},
      {"tiny-gemma3", [](ModelSpec &s) { s.ropeLocalTheta = 0; },
       "rope_local_base_freq must be positive"},
      {"tiny-gemma3", [](ModelSpec &s) { s.activation = "gelu"; },
       "gemma3_text models use hidden_act gelu_pytorch_tanh"},
      {"tiny-gemma2", [](ModelSpec &s) { s.heads = 3, s.headDim = 16; },
       "gemma2: heads (3) must divide the hidden size (64)"},
      // The tensor plan is the compiler's: what it rejects is not written.
      {"tiny-llama", [](ModelSpec &s) { s.ropeTheta = 1e300; },
       "the compiler does not read the config this model would have: "
       "config.json: key 'rope_theta'"},
  };
  TempDir dir;
  for (const Case &c : cases) {
    ModelSpec spec = preset(c.preset);
    c.edit(spec);
    std::string error;
    EXPECT_FALSE(writeModel(spec, dir.sub("m"), error)) << c.expected;
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "error: " << error << "\nexpected: " << c.expected;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

//===----------------------------------------------------------------------===//
// Determinism and the main branch's bytes
//===----------------------------------------------------------------------===//

TEST(WriterFamilies, SameSeedSameBytes) {
  TempDir dir;
  for (const std::string &name : presetNames()) {
    if (!isTiny(name))
      continue;
    ModelSpec spec = preset(name);
    spec.seed = 11;
    writeOrDie(spec, dir.sub(name + "-a"));
    writeOrDie(spec, dir.sub(name + "-b"));
    spec.seed = 12;
    writeOrDie(spec, dir.sub(name + "-c"));
    std::string a = readFile(dir.sub(name + "-a/model.safetensors"));
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_EQ(a, readFile(dir.sub(name + "-b/model.safetensors"))) << name;
    EXPECT_NE(a, readFile(dir.sub(name + "-c/model.safetensors"))) << name;
    EXPECT_EQ(readFile(dir.sub(name + "-a/config.json")),
              readFile(dir.sub(name + "-c/config.json")))
        << name;
  }
}

TEST(WriterFamilies, Gpt2AndLlamaBytesAreUnchanged) {
  // FNV-1a 64 of the files attn-make-model wrote on main (bcb23b8) before
  // the families were added, for the command line in each comment.
  struct Golden {
    const char *what;
    std::function<void(ModelSpec &)> edit;
    const char *preset;
    std::vector<std::pair<const char *, uint64_t>> files;
  };
  std::vector<Golden> golden = {
      {"--preset tiny-gpt2", [](ModelSpec &) {}, "tiny-gpt2",
       {{"config.json", 0x545f6b5f39e1dd09ull},
        {"model.safetensors", 0x9d8b972dcab6aa07ull}}},
      {"--preset tiny-llama", [](ModelSpec &) {}, "tiny-llama",
       {{"config.json", 0x43e94037630cb739ull},
        {"model.safetensors", 0x51978985344e6715ull}}},
      {"--preset tiny-llama-tied", [](ModelSpec &) {}, "tiny-llama-tied",
       {{"config.json", 0x27aa6ae3bc60154dull},
        {"model.safetensors", 0xda6bc83abac49eb8ull}}},
      {"--preset tiny-gpt2 --prefix transformer. --extra-buffers --dtype F16 "
       "--seed 5",
       [](ModelSpec &s) {
         s.prefix = "transformer.", s.extraBuffers = true;
         s.dtype = DType::F16, s.seed = 5;
       },
       "tiny-gpt2",
       {{"config.json", 0xd8275b338b36946bull},
        {"model.safetensors", 0xc92ddaffd0cb6d37ull}}},
      {"--preset tiny-llama --extra-buffers --dtype BF16 --seed 7 --head-dim "
       "8 --rope-theta 500000 --norm-eps 1e-6",
       [](ModelSpec &s) {
         s.extraBuffers = true, s.dtype = DType::BF16, s.seed = 7;
         s.headDim = 8, s.ropeTheta = 500000, s.normEps = 1e-6;
       },
       "tiny-llama",
       {{"config.json", 0x1573d3fd757dc2b7ull},
        {"model.safetensors", 0x77c2269d8566a1d4ull}}},
      {"--preset tiny-gpt2 --activation gelu --ffn 100",
       [](ModelSpec &s) { s.activation = "gelu", s.ffn = 100; }, "tiny-gpt2",
       {{"config.json", 0x3c4f7da4dccd699aull},
        {"model.safetensors", 0xc5cf605c7922cfc4ull}}},
      {"--preset tiny-llama --shards 3", [](ModelSpec &s) { s.shards = 3; },
       "tiny-llama",
       {{"config.json", 0x43e94037630cb739ull},
        {"model-00001-of-00003.safetensors", 0x468e4de7d40faf35ull},
        {"model-00002-of-00003.safetensors", 0x458461a98f79aeffull},
        {"model-00003-of-00003.safetensors", 0x88f18131268232a7ull}}},
      {"--preset llama-15m --layers 1 --vocab 512",
       [](ModelSpec &s) { s.layers = 1, s.vocab = 512; }, "llama-15m",
       {{"config.json", 0x53ca47c00393a5ccull},
        {"model.safetensors", 0xf65f601515322530ull}}},
  };
  TempDir dir;
  for (size_t i = 0; i < golden.size(); ++i) {
    ModelSpec spec = preset(golden[i].preset);
    golden[i].edit(spec);
    std::string path = writeOrDie(spec, dir.sub(std::to_string(i)));
    for (const auto &[file, hash] : golden[i].files) {
      std::string bytes = readFile(path + "/" + file);
      ASSERT_FALSE(bytes.empty()) << golden[i].what << ": " << file;
      char got[32];
      std::snprintf(got, sizeof(got), "0x%016llx",
                    static_cast<unsigned long long>(fnv1a(bytes)));
      EXPECT_EQ(fnv1a(bytes), hash)
          << golden[i].what << ": " << file << " is " << got;
    }
  }
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

TEST(WriterFamilies, NoBiasIsStoredAsZero) {
  // tiny-gpt2 with seed 1029: h.1.mlp.c_fc.bias[77] is -2.86e-8, which F16
  // rounds to -0. The F16 file holds -2^-14 there instead and every other
  // element as before.
  ModelSpec spec = preset("tiny-gpt2");
  spec.seed = 1029;
  std::vector<TensorDesc> plan;
  std::string error;
  ASSERT_TRUE(planTensors(spec, plan, error)) << error;
  auto it = std::find_if(plan.begin(), plan.end(), [](const TensorDesc &t) {
    return t.name == "h.1.mlp.c_fc.bias";
  });
  ASSERT_NE(it, plan.end());
  EXPECT_TRUE(it->nonZero);
  std::vector<float> f32 = tensorValues(spec, *it);
  ASSERT_GT(f32.size(), 77u);
  EXPECT_NE(f32[77], 0.0f);
  EXPECT_LT(std::fabs(f32[77]), 0x1.0p-25f) << "rounds to zero in F16";
  spec.dtype = DType::F16;
  std::vector<float> f16 = tensorValues(spec, *it);
  EXPECT_EQ(f16[77], -0x1.0p-14f);
  for (size_t i = 0; i < f32.size(); ++i)
    if (i != 77)
      EXPECT_EQ(f16[i], f32[i]) << i;

  TempDir dir;
  Safetensors file =
      loadSafetensors(writeOrDie(spec, dir.sub("m")) + "/model.safetensors");
  std::vector<uint16_t> stored = file.u16("h.1.mlp.c_fc.bias");
  EXPECT_EQ(halfToFloat(stored[77]), -0x1.0p-14f);
  // Checked for every tensor by checkFolder; here once more in BF16.
  spec.dtype = DType::BF16;
  checkFolder(spec, writeOrDie(spec, dir.sub("b")), "bf16");
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(1.0f)), 1.0f);
}

/// The root mean square of each line (row or column) of a 2-D tensor.
std::vector<double> lineRms(const std::vector<float> &v,
                            const std::vector<int64_t> &shape, int axis) {
  int64_t rows = shape[0], cols = shape[1];
  int64_t lines = axis == 0 ? rows : cols;
  std::vector<double> out(static_cast<size_t>(lines));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = v[static_cast<size_t>(r * cols + c)];
      out[static_cast<size_t>(axis == 0 ? r : c)] += x * x;
    }
  for (double &x : out)
    x = std::sqrt(x / static_cast<double>(axis == 0 ? cols : rows));
  return out;
}

double rms(const std::vector<float> &v) {
  double s = 0;
  for (float x : v)
    s += static_cast<double>(x) * x;
  return std::sqrt(s / static_cast<double>(v.size()));
}

/// Mean and standard deviation of `values`.
void meanAndStd(const std::vector<float> &values, double &mean, double &sd) {
  mean = 0;
  double var = 0;
  for (float x : values)
    mean += x / static_cast<double>(values.size());
  for (float x : values)
    var += (x - mean) * (x - mean) / static_cast<double>(values.size());
  sd = std::sqrt(var);
}

/// The q_norm / k_norm gains of `layers` layers, the stored w plus
/// `offset` (1 for Gemma's 1 + w): mean `scale`, spread 0.3 `scale`.
void expectQkNormGains(const Safetensors &file, int layers, double offset,
                       double scale, const std::string &what) {
  for (const char *norm : {"q_norm", "k_norm"}) {
    std::vector<float> g;
    for (int l = 0; l < layers; ++l) {
      std::vector<float> v = file.f32("model.layers." + std::to_string(l) +
                                      ".self_attn." + norm + ".weight");
      g.insert(g.end(), v.begin(), v.end());
    }
    double mean, sd;
    meanAndStd(g, mean, sd);
    EXPECT_NEAR(mean + offset, scale, 0.1 * scale) << what << " " << norm;
    EXPECT_NEAR(sd, 0.3 * scale, 0.07 * scale) << what << " " << norm;
  }
}

TEST(WriterFamilies, SharpScalesQueriesKeysAndBiases) {
  // Each family's q/k lines, found from the layout in the README's table
  // (not from the writer): sharp makes them 2/sqrt(fan_in), v lines stay
  // 1/sqrt(fan_in); biases go from 0.1 to 0.5.
  TempDir dir;
  struct Case {
    const char *preset;
    std::string tensor;
    int axis;
    std::function<int(int64_t)> kind; // 0 q, 1 k, 2 v
  };
  const int64_t d = 64, hd = 16;
  std::vector<Case> cases = {
      {"tiny-gpt2", "h.0.attn.c_attn.weight", 1,
       [&](int64_t c) { return static_cast<int>(c / d); }},
      {"tiny-gpt_neox", "gpt_neox.layers.0.attention.query_key_value.weight",
       0, [&](int64_t r) { return static_cast<int>((r % (3 * hd)) / hd); }},
      {"tiny-bloom", "transformer.h.1.self_attention.query_key_value.weight",
       0, [&](int64_t r) { return static_cast<int>((r % (3 * hd)) / hd); }},
      {"tiny-phi3", "model.layers.1.self_attn.qkv_proj.weight", 0,
       [&](int64_t r) { return r < 64 ? 0 : r < 96 ? 1 : 2; }},
  };
  for (const Case &c : cases) {
    for (bool sharp : {false, true}) {
      ModelSpec spec = preset(c.preset);
      spec.sharp = sharp;
      std::string path = writeOrDie(spec, dir.sub(std::string(c.preset) +
                                                  (sharp ? "-s" : "")));
      Safetensors file = loadSafetensors(path + "/model.safetensors");
      std::vector<double> r =
          lineRms(file.f32(c.tensor), file.tensors.at(c.tensor).shape, c.axis);
      double sum[3] = {0, 0, 0};
      int count[3] = {0, 0, 0};
      for (size_t i = 0; i < r.size(); ++i) {
        int k = c.kind(static_cast<int64_t>(i));
        sum[k] += r[i], ++count[k];
      }
      double unit = 1.0 / std::sqrt(64.0);
      double qk = sharp ? 2 * unit : unit;
      EXPECT_NEAR(sum[0] / count[0], qk, 0.12 * qk) << c.tensor << " q";
      EXPECT_NEAR(sum[1] / count[1], qk, 0.12 * qk) << c.tensor << " k";
      EXPECT_NEAR(sum[2] / count[2], unit, 0.12 * unit) << c.tensor << " v";
      for (const auto &[name, t] : file.tensors)
        if (isBias(name) && t.shape[0] >= 64 &&
            name.find("word_embeddings_layernorm") == std::string::npos)
          EXPECT_NEAR(rms(file.f32(name)), sharp ? 0.5 : 0.1,
                      sharp ? 0.15 : 0.03)
              << name;
    }
  }
  // Separate projections.
  ModelSpec q = preset("tiny-qwen2");
  q.sharp = true;
  Safetensors file =
      loadSafetensors(writeOrDie(q, dir.sub("q")) + "/model.safetensors");
  double unit = 1.0 / std::sqrt(64.0);
  EXPECT_NEAR(rms(file.f32("model.layers.0.self_attn.q_proj.weight")),
              2 * unit, 0.1 * unit);
  EXPECT_NEAR(rms(file.f32("model.layers.0.self_attn.k_proj.weight")),
              2 * unit, 0.1 * unit);
  EXPECT_NEAR(rms(file.f32("model.layers.0.self_attn.v_proj.weight")), unit,
              0.1 * unit);
  EXPECT_NEAR(rms(file.f32("model.layers.0.self_attn.q_proj.bias")), 0.5,
              0.15);
  // Qwen3's q_norm / k_norm undo the projections' scale: sharp doubles
  // their gains (mean and spread) instead, and its o_proj bias is sharp too.
  for (bool sharp : {false, true}) {
    ModelSpec q3 = preset("tiny-qwen3-bias");
    q3.sharp = sharp;
    Safetensors f3 = loadSafetensors(
        writeOrDie(q3, dir.sub(sharp ? "q3s" : "q3")) + "/model.safetensors");
    expectQkNormGains(f3, 3, 0.0, sharp ? 2.0 : 1.0,
                      sharp ? "qwen3 sharp" : "qwen3");
    EXPECT_NEAR(rms(f3.f32("model.layers.0.self_attn.o_proj.bias")),
                sharp ? 0.5 : 0.1, sharp ? 0.15 : 0.03);
  }
}

TEST(WriterFamilies, NormGains) {
  TempDir dir;
  // RMSNorm / LayerNorm gains 1 + N(0, 0.1); Gemma stores w of (1 + w).
  Safetensors g = loadSafetensors(
      writeOrDie(preset("tiny-gemma"), dir.sub("g")) + "/model.safetensors");
  Safetensors l = loadSafetensors(
      writeOrDie(preset("tiny-mistral"), dir.sub("m")) + "/model.safetensors");
  Safetensors b = loadSafetensors(
      writeOrDie(preset("tiny-bloom"), dir.sub("b")) + "/model.safetensors");
  auto meanOf = [](const std::vector<float> &v) {
    double s = 0;
    for (float x : v)
      s += x;
    return s / static_cast<double>(v.size());
  };
  EXPECT_NEAR(meanOf(g.f32("model.layers.0.input_layernorm.weight")), 0.0,
              0.05);
  EXPECT_NEAR(meanOf(l.f32("model.layers.0.input_layernorm.weight")), 1.0,
              0.05);
  EXPECT_NEAR(meanOf(b.f32("transformer.h.0.input_layernorm.weight")), 1.0,
              0.05);
  EXPECT_NEAR(meanOf(b.f32("transformer.h.0.input_layernorm.bias")), 0.0,
              0.05);
  // bloom's embedding std is the scale of its embedding LayerNorm (0.25 in
  // the tied preset); the embeddings themselves are N(0, 1).
  EXPECT_NEAR(meanOf(b.f32("transformer.word_embeddings_layernorm.weight")),
              0.25, 0.0125);
  EXPECT_NEAR(rms(b.f32("transformer.word_embeddings_layernorm.bias")), 0.025,
              0.01);
  EXPECT_NEAR(rms(b.f32("transformer.word_embeddings.weight")), 1.0, 0.05);
  ModelSpec unit = preset("tiny-bloom");
  unit.embeddingStd = 1.0;
  Safetensors u =
      loadSafetensors(writeOrDie(unit, dir.sub("u")) + "/model.safetensors");
  EXPECT_NEAR(meanOf(u.f32("transformer.word_embeddings_layernorm.weight")),
              1.0, 0.05);
  EXPECT_NEAR(rms(u.f32("transformer.word_embeddings_layernorm.bias")), 0.1,
              0.03);
}

/// The gemma2 / gemma3 (1 + w) norms store w with a real spread, N(0, 0.3);
/// Gemma 3's q_norm / k_norm w + 1 is N(1, 0.3), with --sharp N(2, 0.6), as
/// qwen3's gains.
TEST(WriterFamilies, Gemma2And3NormGains) {
  TempDir dir;
  Safetensors g2 = loadSafetensors(
      writeOrDie(preset("tiny-gemma2"), dir.sub("g2")) + "/model.safetensors");
  std::vector<float> all;
  for (int l = 0; l < 3; ++l)
    for (const char *norm :
         {"input_layernorm", "post_attention_layernorm",
          "pre_feedforward_layernorm", "post_feedforward_layernorm"}) {
      std::vector<float> v = g2.f32("model.layers." + std::to_string(l) + "." +
                                    norm + ".weight");
      all.insert(all.end(), v.begin(), v.end());
    }
  double mean, sd;
  meanAndStd(all, mean, sd);
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(sd, 0.3, 0.03);
  for (bool sharp : {false, true}) {
    ModelSpec spec = preset("tiny-gemma3");
    spec.sharp = sharp;
    Safetensors g3 = loadSafetensors(
        writeOrDie(spec, dir.sub(sharp ? "g3s" : "g3")) + "/model.safetensors");
    expectQkNormGains(g3, 6, 1.0, sharp ? 2.0 : 1.0,
                      sharp ? "gemma3 sharp" : "gemma3");
  }
}

/// tiny-gemma3-mm is tiny-gemma3's text model under language_model., bit
/// for bit, beside two vision tensors.
TEST(WriterFamilies, Gemma3MultimodalHoldsTheTextModel) {
  TempDir dir;
  for (bool tied : {true, false}) {
    ModelSpec text = preset("tiny-gemma3"), mm = preset("tiny-gemma3-mm");
    text.tieEmbeddings = mm.tieEmbeddings = tied;
    Safetensors a = loadSafetensors(
        writeOrDie(text, dir.sub(tied ? "t" : "tu")) + "/model.safetensors");
    Safetensors b = loadSafetensors(
        writeOrDie(mm, dir.sub(tied ? "m" : "mu")) + "/model.safetensors");
    size_t vision = 0;
    for (const auto &[name, t] : b.tensors) {
      if (name.rfind("language_model.", 0) != 0) {
        ++vision;
        continue;
      }
      std::string inner = name.substr(std::strlen("language_model."));
      ASSERT_TRUE(a.tensors.count(inner)) << name;
      EXPECT_EQ(b.f32(name), a.f32(inner)) << name;
    }
    EXPECT_EQ(vision, 2u);
    EXPECT_EQ(b.tensors.size(), a.tensors.size() + 2);
    EXPECT_EQ(b.tensors.count("language_model.lm_head.weight"), tied ? 0u : 1u);
    Json c = loadConfig(dir.sub(tied ? "m" : "mu"));
    EXPECT_EQ(c.contains("tie_word_embeddings"), !tied);
    EXPECT_EQ(c.at("text_config").contains("tie_word_embeddings"), !tied);
  }
}

//===----------------------------------------------------------------------===//
// The command line
//===----------------------------------------------------------------------===//


std::string tool() { return std::string(ATTN_TOOLS_DIR) + "/attn-make-model"; }

TEST(WriterFamiliesCli, FlagsAFamilyHasNoSettingForAreErrorsNamingThem) {
  TempDir dir;
  struct Case {
    const char *args;
    const char *expected;
  };
  const Case cases[] = {
      {"--preset tiny-llama --sliding-window 8",
       "--sliding-window applies only to mistral, mixtral, qwen2, qwen3, "
       "smollm3, gemma2 and gemma3_text models"},
      {"--preset tiny-mistral --max-window-layers 1",
       "--max-window-layers applies only to qwen2 and qwen3 models"},
      {"--preset tiny-gpt_neox --rope-scaling linear:2",
       "--rope-scaling applies only to llama, mistral, qwen2, qwen3, "
       "smollm3, gemma, gemma2, gemma3_text and phi3 models"},
      {"--preset tiny-phi3 --rope-scaling linear:2",
       "phi3 rope_scaling must be longrope"},
      {"--preset tiny-phi3 --rope-scaling longrope:16,short=1/2,long=1/3",
       "longrope short_factor has 2 numbers; the 16 rotary dims need 8"},
      {"--preset tiny-qwen2 --attention-bias",
       "--attention-bias applies only to qwen3, smollm3, gemma2 and "
       "gemma3_text models"},
      {"--preset tiny-gemma --no-attention-bias",
       "--no-attention-bias applies only to qwen3, smollm3, gemma2 and "
       "gemma3_text models"},
      {"--preset tiny-qwen2 --layer-types full_attention,full_attention",
       "--layer-types applies only to qwen3, smollm3, gemma2 and gemma3_text "
       "models"},
      {"--preset tiny-qwen3 --no-rope-layers 1,1,0",
       "--no-rope-layers applies only to smollm3 models"},
      {"--preset tiny-llama --no-rope-layer-interval 2",
       "--no-rope-layer-interval applies only to smollm3 models"},
      {"--preset tiny-smollm3 --no-rope-layers 1,0",
       "no_rope_layers needs one entry per layer (3), got 2"},
      {"--preset tiny-smollm3 --no-rope-layers 1,0,x,1",
       "--no-rope-layers expects an integer, got 'x'"},
      {"--preset tiny-qwen3 --layer-types full_attention,sliding_attention",
       "layer_types needs one entry per layer (3), got 2"},
      {"--preset tiny-qwen3 --activation gelu",
       "--activation: qwen3 models use silu"},
      {"--preset tiny-gemma --attn-softcap 5",
       "--attn-softcap applies only to gemma2 and gemma3_text models"},
      {"--preset tiny-qwen3 --final-softcap null",
       "--final-softcap applies only to gemma2 and gemma3_text models"},
      {"--preset tiny-gemma --query-pre-attn-scalar 16",
       "--query-pre-attn-scalar applies only to gemma2 and gemma3_text"},
      {"--preset tiny-gemma2 --sliding-window-pattern 3",
       "--sliding-window-pattern applies only to gemma3_text models"},
      {"--preset tiny-gemma2 --rope-local-theta 100",
       "--rope-local-theta applies only to gemma3_text models"},
      {"--preset tiny-gemma2 --multimodal",
       "--multimodal applies only to gemma3_text models"},
      {"--preset tiny-gemma2 --attn-softcap 0",
       "--attn-softcap expects a positive number or null, got '0'"},
      {"--preset tiny-gemma3 --activation silu",
       "--activation: gemma3_text models use gelu_pytorch_tanh"},
      {"--preset tiny-opt --prefix transformer.",
       "--prefix applies only to gpt2 models"},
      {"--preset tiny-bloom --max-positions 128",
       "--max-positions applies only to"},
      {"--preset tiny-bloom --ffn 128", "--ffn: bloom has no ffn setting"},
      {"--preset tiny-opt --norm-eps 1e-6", "--norm-eps applies only to"},
      {"--preset tiny-gptj --rope-theta 1e6", "--rope-theta applies only to"},
      {"--preset tiny-gpt_neox --kv-heads 2", "--kv-heads applies only to"},
      {"--preset tiny-opt --head-dim 8", "--head-dim applies only to"},
      {"--preset tiny-llama --rotary-pct 0.5",
       "--rotary-pct applies only to gpt_neox models"},
      {"--preset tiny-gpt_neox --partial-rotary-factor 0.5",
       "--partial-rotary-factor applies only to phi3 models"},
      {"--preset tiny-phi3 --rotary-dim 8",
       "--rotary-dim applies only to gptj models"},
      {"--preset tiny-gptj --no-parallel-residual",
       "--no-parallel-residual applies only to gpt_neox models"},
      {"--preset tiny-xglm --no-layer-norm-before",
       "--no-layer-norm-before applies only to opt models"},
      {"--preset tiny-opt --no-scale-embedding",
       "--no-scale-embedding applies only to xglm models"},
      {"--preset tiny-qwen2 --extra-buffers",
       "--extra-buffers applies only to gpt2 and llama models"},
      {"--preset tiny-bloom --activation gelu",
       "--activation: bloom has no activation setting"},
      {"--preset tiny-gemma --activation silu",
       "--activation: gemma models use gelu_pytorch_tanh"},
      {"--preset tiny-gpt2 --no-tie", "--no-tie: gpt2 always ties"},
      {"--preset tiny-llama --rope-scaling ntk:2",
       "--rope-scaling: unknown rope scaling type 'ntk'"},
      {"--preset tiny-llama --sharp=1", "--sharp takes no value"},
  };
  for (const Case &c : cases) {
    CommandResult r =
        run(tool() + " " + c.args + " --out " + dir.sub("x") + " --quiet");
    EXPECT_EQ(r.exitCode, 1) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("attn-make-model: error: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos)
        << c.args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
        << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.sub("x/model.safetensors")));
}

TEST(WriterFamiliesCli, FlagsAndTheApiWriteTheSameFiles) {
  TempDir dir;
  struct Case {
    const char *args;
    const char *preset;
    std::function<void(ModelSpec &)> edit;
  };
  const std::vector<Case> cases = {
      {"--preset tiny-qwen2 --sliding-window 8 --max-window-layers 1 "
       "--rope-scaling yarn:2:32,beta_fast=16 --sharp --dtype BF16 --seed 3",
       "tiny-qwen2",
       [](ModelSpec &s) {
         s.slidingWindow = 8, s.maxWindowLayers = 1;
         s.ropeScaling.type = RopeScaling::Type::Yarn;
         s.ropeScaling.factor = 2, s.ropeScaling.originalMaxPositions = 32;
         s.ropeScaling.betaFast = 16;
         s.sharp = true, s.dtype = DType::BF16, s.seed = 3;
       }},
      {"--preset tiny-mistral --sliding-window 0 --head-dim 16 --kv-heads 1 "
       "--rope-scaling llama3:8:1:4:16 --tie",
       "tiny-mistral",
       [](ModelSpec &s) {
         s.slidingWindow = 0, s.headDim = 16, s.kvHeads = 1;
         s.ropeScaling.type = RopeScaling::Type::Llama3;
         s.ropeScaling.factor = 8, s.ropeScaling.lowFreqFactor = 1;
         s.ropeScaling.highFreqFactor = 4;
         s.ropeScaling.originalMaxPositions = 16;
         s.tieEmbeddings = true;
       }},
      {"--preset tiny-gpt_neox --rotary-pct 0.5 --no-parallel-residual "
       "--rope-theta 5000 --norm-eps 1e-6 --activation gelu_new",
       "tiny-gpt_neox",
       [](ModelSpec &s) {
         s.rotaryFraction = 0.5, s.parallelResidual = false;
         s.ropeTheta = 5000, s.normEps = 1e-6, s.activation = "gelu_new";
       }},
      {"--preset tiny-phi3 --partial-rotary-factor 0.5 --no-tie-embeddings",
       "tiny-phi3", [](ModelSpec &s) { s.rotaryFraction = 0.5; }},
      {"--preset tiny-phi3-partial --rope-scaling longrope:16",
       "tiny-phi3-longrope", [](ModelSpec &) {}},
      {"--preset tiny-phi3-longrope --partial-rotary-factor 0.5 "
       "--rope-scaling longrope:24,short=1/1/1/1,long=1/2/4/8 --sharp",
       "tiny-phi3",
       [](ModelSpec &s) {
         s.rotaryFraction = 0.5, s.sharp = true;
         s.ropeScaling.type = RopeScaling::Type::LongRope;
         s.ropeScaling.originalMaxPositions = 24;
         s.ropeScaling.shortFactor = {1, 1, 1, 1};
         s.ropeScaling.longFactor = {1, 2, 4, 8};
       }},
      {"--preset tiny-gptj --rotary-dim 4 --ffn 96", "tiny-gptj",
       [](ModelSpec &s) { s.rotaryDim = 4, s.ffn = 96; }},
      {"--preset tiny-opt --no-layer-norm-before --no-tie",
       "tiny-opt",
       [](ModelSpec &s) {
         s.layerNormBefore = false;
         s.tieEmbeddings = false;
       }},
      {"--preset tiny-xglm --no-scale-embedding --layers 1 --heads 2",
       "tiny-xglm",
       [](ModelSpec &s) { s.scaleEmbedding = false, s.layers = 1, s.heads = 2; }},
      {"--preset tiny-bloom --heads 8 --hidden 96 --vocab 50", "tiny-bloom",
       [](ModelSpec &s) { s.heads = 8, s.hidden = 96, s.vocab = 50; }},
      {"--preset tiny-qwen3 --sliding-window 4 --layer-types "
       "full_attention,sliding_attention,sliding_attention --attention-bias "
       "--kv-heads 1 --head-dim 16 --rope-theta 10000 --rope-scaling linear:2 "
       "--tie --sharp",
       "tiny-qwen3",
       [](ModelSpec &s) {
         s.slidingWindow = 4;
         s.layerTypes = {"full_attention", "sliding_attention",
                         "sliding_attention"};
         s.attentionBias = true, s.kvHeads = 1, s.headDim = 16;
         s.ropeTheta = 10000;
         s.ropeScaling.type = RopeScaling::Type::Linear;
         s.ropeScaling.factor = 2;
         s.tieEmbeddings = true, s.sharp = true;
       }},
      {"--preset tiny-gemma2 --attn-softcap null --final-softcap 30 "
       "--query-pre-attn-scalar 32 --layer-types "
       "sliding_attention,sliding_attention,full_attention --sliding-window 4 "
       "--attention-bias --tie --rope-scaling linear:2 --sharp",
       "tiny-gemma2",
       [](ModelSpec &s) {
         s.attnSoftcap = 0, s.finalSoftcap = 30, s.queryPreAttnScalar = 32;
         s.layerTypes = {"sliding_attention", "sliding_attention",
                         "full_attention"};
         s.slidingWindow = 4, s.attentionBias = true, s.tieEmbeddings = true;
         s.ropeScaling.type = RopeScaling::Type::Linear;
         s.ropeScaling.factor = 2;
         s.sharp = true;
       }},
      {"--preset tiny-gemma3 --sliding-window-pattern 2 --rope-local-theta "
       "500 --rope-theta 20000 --attn-softcap 20 --multimodal --no-tie "
       "--kv-heads 1",
       "tiny-gemma3",
       [](ModelSpec &s) {
         s.slidingWindowPattern = 2, s.ropeLocalTheta = 500;
         s.ropeTheta = 20000, s.attnSoftcap = 20, s.multimodal = true;
         s.tieEmbeddings = false, s.kvHeads = 1;
       }},
      {"--preset tiny-gemma3-mm --no-multimodal", "tiny-gemma3",
       [](ModelSpec &) {}},
      {"--preset tiny-qwen3-bias --no-attention-bias --max-window-layers 2",
       "tiny-qwen3-bias",
       [](ModelSpec &s) { s.attentionBias = false, s.maxWindowLayers = 2; }},
      {"--preset tiny-gemma --head-dim 64 --no-tie --embedding-std 0.5",
       "tiny-gemma",
       [](ModelSpec &s) {
         s.headDim = 64, s.tieEmbeddings = false, s.embeddingStd = 0.5;
       }},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string cli = dir.sub("cli" + std::to_string(i));
    CommandResult r = run(tool() + " " + cases[i].args + " --out " + cli);
    ASSERT_EQ(r.exitCode, 0) << cases[i].args << "\n" << r.output;
    EXPECT_NE(r.output.find(std::string(", ") +
                            familyName(preset(cases[i].preset).family) + ", "),
              std::string::npos)
        << r.output;
    ModelSpec spec = preset(cases[i].preset);
    cases[i].edit(spec);
    std::string api = writeOrDie(spec, dir.sub("api" + std::to_string(i)));
    EXPECT_EQ(readFile(cli + "/config.json"), readFile(api + "/config.json"))
        << cases[i].args;
    EXPECT_EQ(readFile(cli + "/model.safetensors"),
              readFile(api + "/model.safetensors"))
        << cases[i].args;
    checkFolder(spec, api, cases[i].args);
  }
}

TEST(WriterFamiliesCli, ListPresets) {
  CommandResult r = run(tool() + " --list-presets");
  ASSERT_EQ(r.exitCode, 0);
  std::string expected;
  for (const std::string &name : presetNames())
    expected += name + "\n";
  EXPECT_EQ(r.output, expected);
}

} // namespace
