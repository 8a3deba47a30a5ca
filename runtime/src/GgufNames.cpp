//===- GgufNames.cpp - llama.cpp's names for Hugging Face tensors ---------===//

#include "GgufNames.h"

#include <cctype>

namespace attnrt {

namespace {

struct Architecture {
  const char *modelType;
  const char *gguf;
};

const Architecture architectures[] = {
    {"llama", "llama"},
    {"mistral", "llama"},
    {"qwen2", "qwen2"},
    {"qwen3", "qwen3"},
};

// Per-layer names, "{}" for the layer number; gguf-py's tensor_mapping.py
// for the LLaMA-style checkpoints.
struct NamePair {
  const char *hf;
  const char *gguf;
};

const NamePair globalNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

const NamePair layerNames[] = {
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
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

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

std::string rename(std::string_view name, bool toGguf) {
  for (const NamePair &pair : globalNames)
    if (name == (toGguf ? pair.hf : pair.gguf))
      return toGguf ? pair.gguf : pair.hf;
  std::string_view layer, rest;
  if (!splitLayer(name, toGguf ? "model.layers." : "blk.", layer, rest))
    return "";
  for (const NamePair &pair : layerNames)
    if (rest == (toGguf ? pair.hf : pair.gguf))
      return (toGguf ? "blk." : "model.layers.") + std::string(layer) + "." +
             (toGguf ? pair.gguf : pair.hf);
  return "";
}

} // namespace

std::string_view ggufArchitecture(std::string_view modelType) {
  for (const Architecture &a : architectures)
    if (modelType == a.modelType)
      return a.gguf;
  return "";
}

std::string ggufTensorName(std::string_view hf) { return rename(hf, true); }
std::string hfTensorName(std::string_view gguf) { return rename(gguf, false); }

bool ggufPermutesQueryKey(std::string_view architecture) {
  return architecture == "llama";
}

} // namespace attnrt
