//===- GgufTokenizer.cpp - a GGUF file's tokenizer as tokenizer.json ------===//

#include "tokenizer/GgufTokenizer.h"

#include "Support.h"
#include "tokenizer/Utf8.h"

#include <nlohmann/json.hpp>

#include <unordered_set>

namespace attnrt {

namespace {

// std::map-backed: ordered_json finds a key by linear search, quadratic
// over a 200,000-token vocabulary.
using TokenizerJson = nlohmann::json;

/// One tokenizer.ggml.pre name: the parts of its family's tokenizer.json
/// that the vocabulary and merges do not say.
struct GgufPreTokenizer {
  const char *name;
  const char *normalizer;    // JSON, "null" for none.
  const char *preTokenizer;  // JSON.
  bool ignoreMerges;
};

// Copied from the tokenizer.json files of GPT-2, Llama 3, Qwen2/Qwen3 and
// gpt-oss (llama.cpp's names for them: "gpt-2", "llama-bpe", "qwen2",
// "gpt-4o").
const GgufPreTokenizer preTokenizers[] = {
    {"gpt-2", "null",
     R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})",
     false},
    {"llama-bpe", "null",
     R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})",
     true},
    {"qwen2", R"({"type": "NFC"})",
     R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})",
     false},
    {"gpt-4o", "null",
     R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})",
     true},
};

// llama.cpp's llama_token_type.
constexpr int64_t typeControl = 3, typeUserDefined = 4;

bool isValidUtf8(std::string_view text) {
  return findInvalidUtf8(text) == std::string_view::npos;
}

} // namespace

bool ggufTokenizerSources(const GgufFile &file, TokenizerSources &sources,
                          std::string &error) {
  std::string where = file.where();
  std::string_view model;
  if (!file.getString("tokenizer.ggml.model", model, error))
    return false;
  if (model != "gpt2") {
    error = where + "metadata key 'tokenizer.ggml.model': " + quote(model) +
            " is not supported yet (supported: gpt2, byte-level BPE)";
    return false;
  }
  // llama.cpp reads a missing pre-tokenizer name as "default", GPT-2's.
  std::string_view pre = "gpt-2";
  if (file.findKey("tokenizer.ggml.pre") &&
      !file.getString("tokenizer.ggml.pre", pre, error))
    return false;
  const GgufPreTokenizer *split = nullptr;
  std::string names;
  for (const GgufPreTokenizer &p : preTokenizers) {
    if (pre == p.name || (pre == "default" && std::string(p.name) == "gpt-2"))
      split = &p;
    names += std::string(names.empty() ? "" : ", ") + p.name;
  }
  if (!split) {
    error = where + "metadata key 'tokenizer.ggml.pre': " + quote(pre) +
            " is not supported (supported: default, " + names + ")";
    return false;
  }
  std::vector<std::string_view> tokens, merges;
  std::vector<int64_t> types;
  if (!file.getStringArray("tokenizer.ggml.tokens", tokens, error) ||
      !file.getStringArray("tokenizer.ggml.merges", merges, error))
    return false;
  if (file.findKey("tokenizer.ggml.token_type")) {
    if (!file.getIntegerArray("tokenizer.ggml.token_type", types, error))
      return false;
    if (types.size() != tokens.size()) {
      error = where + "metadata key 'tokenizer.ggml.token_type' has " +
              std::to_string(types.size()) + " entries for " +
              std::to_string(tokens.size()) + " tokens";
      return false;
    }
  }

  TokenizerJson vocab = TokenizerJson::object(), added = TokenizerJson::array();
  std::unordered_set<std::string_view> seen;
  for (size_t id = 0; id < tokens.size(); ++id) {
    std::string_view token = tokens[id];
    if (!isValidUtf8(token)) {
      error = where + "metadata key 'tokenizer.ggml.tokens': token " +
              std::to_string(id) + " is not valid UTF-8";
      return false;
    }
    int64_t type = types.empty() ? 1 : types[id];
    if (type == typeControl || type == typeUserDefined) {
      added.push_back({{"id", id},
                       {"content", std::string(token)},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type == typeControl}});
      continue;
    }
    if (!seen.insert(token).second) {
      error = where + "metadata key 'tokenizer.ggml.tokens': token " +
              std::to_string(id) + " " + quote(token) + " appears twice";
      return false;
    }
    vocab[std::string(token)] = id;
  }
  TokenizerJson mergeList = TokenizerJson::array();
  for (size_t i = 0; i < merges.size(); ++i) {
    if (!isValidUtf8(merges[i])) {
      error = where + "metadata key 'tokenizer.ggml.merges': merge " +
              std::to_string(i) + " is not valid UTF-8";
      return false;
    }
    mergeList.push_back(std::string(merges[i]));
  }

  // BOS/EOS as text (checked to be token ids there), and whether BOS is
  // added, as the converter records them.
  if (!ggufTokenizerConfig(file, sources.tokenizerConfig, error))
    return false;
  bool addBos = false;
  uint64_t bos = 0;
  if (file.findKey("tokenizer.ggml.add_bos_token") &&
      !file.getBool("tokenizer.ggml.add_bos_token", addBos, error))
    return false;
  if (addBos && !file.findKey("tokenizer.ggml.bos_token_id")) {
    error = where + "metadata key 'tokenizer.ggml.add_bos_token' is true but "
                    "there is no tokenizer.ggml.bos_token_id";
    return false;
  }
  if (addBos && !file.getUnsigned("tokenizer.ggml.bos_token_id", bos, error))
    return false;

  TokenizerJson root;
  root["version"] = "1.0";
  root["added_tokens"] = added;
  root["normalizer"] = TokenizerJson::parse(split->normalizer);
  root["pre_tokenizer"] = TokenizerJson::parse(split->preTokenizer);
  if (addBos) {
    std::string bosText(tokens[bos]);
    root["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", TokenizerJson::array({{{"SpecialToken", {{"id", bosText}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", TokenizerJson::array({{{"SpecialToken", {{"id", bosText}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                              {{"SpecialToken", {{"id", bosText}, {"type_id", 1}}}},
                              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
        {"special_tokens",
         {{bosText, {{"id", bosText}, {"ids", {bos}}, {"tokens", {bosText}}}}}}};
  } else {
    root["post_processor"] = TokenizerJson::parse(
        R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false})");
  }
  root["decoder"] = TokenizerJson::parse(
      R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})");
  root["model"] = {{"type", "BPE"},
                   {"dropout", nullptr},
                   {"unk_token", nullptr},
                   {"continuing_subword_prefix", nullptr},
                   {"end_of_word_suffix", nullptr},
                   {"fuse_unk", false},
                   {"byte_fallback", false},
                   {"ignore_merges", split->ignoreMerges},
                   {"vocab", vocab},
                   {"merges", mergeList}};
  sources.tokenizerJson = root.dump();
  sources.tokenizerJsonName = "GGUF file " + quote(file.path()) +
                              " (its tokenizer metadata as tokenizer.json)";

  sources.tokenizerConfigName =
      "GGUF file " + quote(file.path()) +
      " (its tokenizer metadata as tokenizer_config.json)";
  sources.generationConfig.clear();
  return true;
}

std::string ggufPreTokenizerName(const std::string &normalizer,
                                 const std::string &preTokenizer,
                                 bool ignoreMerges) {
  TokenizerJson norm = TokenizerJson::parse(normalizer, nullptr, false);
  TokenizerJson pre = TokenizerJson::parse(preTokenizer, nullptr, false);
  for (const GgufPreTokenizer &p : preTokenizers)
    if (norm == TokenizerJson::parse(p.normalizer) &&
        pre == TokenizerJson::parse(p.preTokenizer) &&
        ignoreMerges == p.ignoreMerges)
      return p.name;
  return "";
}

bool ggufTokenizerConfig(const GgufFile &file, std::string &json,
                         std::string &error) {
  std::vector<std::string_view> tokens;
  if (!file.getStringArray("tokenizer.ggml.tokens", tokens, error))
    return false;
  TokenizerJson config = TokenizerJson::object();
  for (const char *name : {"bos", "eos"}) {
    std::string key = std::string("tokenizer.ggml.") + name + "_token_id";
    uint64_t id;
    if (!file.findKey(key))
      continue;
    if (!file.getUnsigned(key, id, error))
      return false;
    if (id >= tokens.size()) {
      error = file.where() + "metadata key " + quote(key) +
              format(": %llu is not a token id (there are %zu tokens)",
                     static_cast<unsigned long long>(id), tokens.size());
      return false;
    }
    if (!isValidUtf8(tokens[id])) {
      error = file.where() + "metadata key 'tokenizer.ggml.tokens': token " +
              std::to_string(id) + " is not valid UTF-8";
      return false;
    }
    config[std::string(name) + "_token"] = std::string(tokens[id]);
  }
  if (file.findKey("tokenizer.chat_template")) {
    std::string_view text;
    if (!file.getString("tokenizer.chat_template", text, error))
      return false;
    if (!isValidUtf8(text)) {
      error = file.where() +
              "metadata key 'tokenizer.chat_template' is not valid UTF-8";
      return false;
    }
    config["chat_template"] = std::string(text);
  }
  json = config.dump();
  return true;
}

} // namespace attnrt
