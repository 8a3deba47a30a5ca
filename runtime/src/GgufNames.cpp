//===- GgufNames.cpp - llama.cpp's names for Hugging Face tensors ---------===//

#include "GgufNames.h"

#include <cctype>
#include <iterator>

namespace attnrt {

namespace {

struct Architecture {
  const char *modelType;
  const char *gguf;
};

const Architecture architectures[] = {
    {"llama", "llama"}, {"mistral", "llama"},      {"mixtral", "llama"},
    {"qwen2", "qwen2"}, {"qwen3", "qwen3"},        {"qwen3_moe", "qwen3moe"},
    {"gpt2", "gpt2"},   {"gemma", "gemma"},        {"gemma2", "gemma2"},
    {"gemma3_text", "gemma3"}, {"phi3", "phi3"},
};

// Per-layer names, "{}" for the layer number; gguf-py's tensor_mapping.py.
struct NamePair {
  const char *hf;
  const char *gguf;
};

// The LLaMA-style checkpoints (llama, mistral, qwen2, qwen3, gemma, phi3).
const NamePair llamaGlobalNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// Their attention (q/k norms: qwen3, gemma3).
const NamePair llamaAttentionNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
};

const NamePair llamaMlpNames[] = {
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// Gemma 2 and 3's sandwich norms: gguf-py maps post_attention_layernorm
// to post_attention_norm for them (to ffn_norm for Gemma), and
// pre_feedforward_layernorm to ffn_norm, the name llama.cpp's FFN norm has.
// Gemma and Gemma 2 files never hold lm_head (the writer refuses an untied
// one); Gemma 3's may.
const NamePair gemma2MlpNames[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// Phi-3 keeps its fused projections: qkv_proj as attn_qkv (rows q, k, v)
// and gate_up_proj as ffn_up (rows gate, then up), as llama.cpp reads them.
const NamePair phi3LayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// Mixtures of experts: the router, and each expert's three matrices, which
// GGUF stacks into one tensor per kind ("blk.N.ffn_gate_exps.weight").
const NamePair mixtralMoeNames[] = {
    {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
};
const NamePair qwenMoeNames[] = {
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
};

struct ExpertNames {
  const char *prefix; // Hugging Face's, before the expert number.
  const char *gate, *up, *down;
};
const ExpertNames mixtralExperts = {"block_sparse_moe.experts.", "w1.weight",
                                    "w3.weight", "w2.weight"};
const ExpertNames qwenExperts = {"mlp.experts.", "gate_proj.weight",
                                 "up_proj.weight", "down_proj.weight"};

// GPT-2 (its checkpoints name tensors with or without "transformer.").
const NamePair gpt2GlobalNames[] = {
    {"transformer.wte.weight", "token_embd.weight"},
    {"transformer.wpe.weight", "position_embd.weight"},
    {"transformer.ln_f.weight", "output_norm.weight"},
    {"transformer.ln_f.bias", "output_norm.bias"},
    {"lm_head.weight", "output.weight"},
};

const NamePair gpt2LayerNames[] = {
    {"ln_1.weight", "attn_norm.weight"},
    {"ln_1.bias", "attn_norm.bias"},
    {"attn.c_attn.weight", "attn_qkv.weight"},
    {"attn.c_attn.bias", "attn_qkv.bias"},
    {"attn.c_proj.weight", "attn_output.weight"},
    {"attn.c_proj.bias", "attn_output.bias"},
    {"ln_2.weight", "ffn_norm.weight"},
    {"ln_2.bias", "ffn_norm.bias"},
    {"mlp.c_fc.weight", "ffn_up.weight"},
    {"mlp.c_fc.bias", "ffn_up.bias"},
    {"mlp.c_proj.weight", "ffn_down.weight"},
    {"mlp.c_proj.bias", "ffn_down.bias"},
};

struct NameList {
  const NamePair *pairs = nullptr;
  size_t count = 0;
};
template <size_t N> constexpr NameList list(const NamePair (&pairs)[N]) {
  return {pairs, N};
}

struct NameTable {
  const char *layerPrefix; // Hugging Face's, before the layer number.
  NameList global;
  // A layer's tensors: two lists, so families share the attention's.
  NameList attention, layer;
  NameList moe; // The router; empty without experts.
  const ExpertNames *experts;
};

// llama files with experts are Mixtral's.
const NameTable llamaTable = {"model.layers.", list(llamaGlobalNames),
                              list(llamaAttentionNames), list(llamaMlpNames),
                              list(mixtralMoeNames), &mixtralExperts};
const NameTable denseTable = {"model.layers.", list(llamaGlobalNames),
                              list(llamaAttentionNames), list(llamaMlpNames),
                              {}, nullptr};
const NameTable qwenMoeTable = {"model.layers.", list(llamaGlobalNames),
                                list(llamaAttentionNames), list(llamaMlpNames),
                                list(qwenMoeNames), &qwenExperts};
const NameTable gemma2Table = {"model.layers.", list(llamaGlobalNames),
                               list(llamaAttentionNames), list(gemma2MlpNames),
                               {}, nullptr};
const NameTable phi3Table = {"model.layers.", list(llamaGlobalNames), {},
                             list(phi3LayerNames), {}, nullptr};
const NameTable gpt2Table = {"transformer.h.", list(gpt2GlobalNames), {},
                             list(gpt2LayerNames), {}, nullptr};

const NameTable *tableOf(std::string_view architecture) {
  if (architecture == "gpt2")
    return &gpt2Table;
  if (architecture == "llama")
    return &llamaTable;
  if (architecture == "qwen3moe")
    return &qwenMoeTable;
  if (architecture == "qwen2" || architecture == "qwen3" ||
      architecture == "gemma")
    return &denseTable;
  if (architecture == "gemma2" || architecture == "gemma3")
    return &gemma2Table;
  if (architecture == "phi3")
    return &phi3Table;
  return nullptr;
}

/// Splits "<prefix><digits>.<rest>" into the layer number and rest.
bool splitLayer(std::string_view name, std::string_view prefix,
                std::string_view &layer, std::string_view &rest) {
  if (name.substr(0, prefix.size()) != prefix)
    return false;
  name.remove_prefix(prefix.size());
  size_t digits = 0;
  while (digits < name.size() &&
         std::isdigit(static_cast<unsigned char>(name[digits])))
    ++digits;
  if (digits == 0 || digits >= name.size() || name[digits] != '.' ||
      (digits > 1 && name[0] == '0'))
    return false;
  layer = name.substr(0, digits);
  rest = name.substr(digits + 1);
  return true;
}

std::string rename(std::string_view architecture, std::string_view name,
                   bool toGguf) {
  const NameTable *table = tableOf(architecture);
  if (!table)
    return "";
  // GPT-2 checkpoints without the "transformer." prefix.
  std::string prefixed;
  if (toGguf && table == &gpt2Table &&
      name.substr(0, 12) != "transformer." && name != "lm_head.weight") {
    prefixed = "transformer." + std::string(name);
    name = prefixed;
  }
  for (size_t i = 0; i < table->global.count; ++i) {
    const NamePair &pair = table->global.pairs[i];
    if (name == (toGguf ? pair.hf : pair.gguf))
      return toGguf ? pair.gguf : pair.hf;
  }
  std::string_view layer, rest;
  if (!splitLayer(name, toGguf ? table->layerPrefix : "blk.", layer, rest))
    return "";
  for (const NameList &names : {table->attention, table->layer, table->moe})
    for (size_t i = 0; i < names.count; ++i) {
      const NamePair &pair = names.pairs[i];
      if (rest == (toGguf ? pair.hf : pair.gguf))
        return (toGguf ? "blk." : table->layerPrefix) + std::string(layer) +
               "." + (toGguf ? pair.gguf : pair.hf);
    }
  return "";
}

// The stacked GGUF names of an expert's three matrices.
const char *const stackedNames[] = {"ffn_gate_exps.weight",
                                    "ffn_up_exps.weight",
                                    "ffn_down_exps.weight"};

const char *expertName(const ExpertNames &e, size_t kind) {
  return kind == 0 ? e.gate : kind == 1 ? e.up : e.down;
}

} // namespace

std::string_view ggufArchitecture(std::string_view modelType) {
  for (const Architecture &a : architectures)
    if (modelType == a.modelType)
      return a.gguf;
  return "";
}

std::string ggufTensorName(std::string_view architecture, std::string_view hf) {
  return rename(architecture, hf, true);
}
std::string hfTensorName(std::string_view architecture, std::string_view gguf) {
  return rename(architecture, gguf, false);
}

bool ggufExpertName(std::string_view architecture, std::string_view hf,
                    std::string &gguf, int64_t &expert) {
  const NameTable *table = tableOf(architecture);
  std::string_view layer, rest, number, tail;
  if (!table || !table->experts ||
      !splitLayer(hf, table->layerPrefix, layer, rest) ||
      !splitLayer(rest, table->experts->prefix, number, tail))
    return false;
  for (size_t kind = 0; kind < 3; ++kind)
    if (tail == expertName(*table->experts, kind)) {
      gguf = "blk." + std::string(layer) + "." + stackedNames[kind];
      expert = std::stoll(std::string(number));
      return true;
    }
  return false;
}

std::string hfExpertName(std::string_view architecture, std::string_view gguf,
                         int64_t expert) {
  const NameTable *table = tableOf(architecture);
  std::string_view layer, rest;
  if (!table || !table->experts || !splitLayer(gguf, "blk.", layer, rest))
    return "";
  for (size_t kind = 0; kind < 3; ++kind)
    if (rest == stackedNames[kind])
      return table->layerPrefix + std::string(layer) + "." +
             table->experts->prefix + std::to_string(expert) + "." +
             expertName(*table->experts, kind);
  return "";
}

bool ggufTransposesMatrix(std::string_view architecture,
                          std::string_view gguf) {
  auto endsWith = [&](std::string_view tail) {
    return gguf.size() >= tail.size() &&
           gguf.substr(gguf.size() - tail.size()) == tail;
  };
  return architecture == "gpt2" &&
         (endsWith(".attn_qkv.weight") || endsWith(".attn_output.weight") ||
          endsWith(".ffn_up.weight") || endsWith(".ffn_down.weight"));
}

bool ggufShiftsNorm(std::string_view architecture, std::string_view gguf) {
  std::string_view tail = "norm.weight";
  return architecture.substr(0, 5) == "gemma" && gguf.size() >= tail.size() &&
         gguf.substr(gguf.size() - tail.size()) == tail;
}

bool ggufPermutesQueryKey(std::string_view architecture) {
  return architecture == "llama";
}

} // namespace attnrt
