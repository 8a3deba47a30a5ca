//===- GgufTokenizer.cpp - a GGUF file's tokenizer as tokenizer.json ------===//

#include "tokenizer/GgufTokenizer.h"

#include "Support.h"
#include "tokenizer/Utf8.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>
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

bool isValidUtf8(std::string_view text) {
  return findInvalidUtf8(text) == std::string_view::npos;
}

/// The TemplateProcessing post-processor that adds `bos` and/or `eos`
/// around a sequence (a pair repeats the pattern), or `fallback` when
/// neither is added.
TokenizerJson templateProcessor(const std::string *bos, const std::string *eos,
                                int64_t bosId, int64_t eosId,
                                const char *fallback) {
  if (!bos && !eos)
    return TokenizerJson::parse(fallback);
  auto special = [](const std::string &text, int typeId) {
    return TokenizerJson{{"SpecialToken", {{"id", text}, {"type_id", typeId}}}};
  };
  auto sequence = [](const char *id, int typeId) {
    return TokenizerJson{{"Sequence", {{"id", id}, {"type_id", typeId}}}};
  };
  TokenizerJson single = TokenizerJson::array(), pair, specials;
  if (bos)
    single.push_back(special(*bos, 0));
  single.push_back(sequence("A", 0));
  if (eos)
    single.push_back(special(*eos, 0));
  pair = single;
  if (bos)
    pair.push_back(special(*bos, 1));
  pair.push_back(sequence("B", 1));
  if (eos)
    pair.push_back(special(*eos, 1));
  specials = TokenizerJson::object();
  if (bos)
    specials[*bos] = {{"id", *bos}, {"ids", {bosId}}, {"tokens", {*bos}}};
  if (eos)
    specials[*eos] = {{"id", *eos}, {"ids", {eosId}}, {"tokens", {*eos}}};
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", pair},
          {"special_tokens", specials}};
}

/// An added token of tokenizer.json.
TokenizerJson addedToken(size_t id, std::string_view content, bool special) {
  return {{"id", id},
          {"content", std::string(content)},
          {"single_word", false},
          {"lstrip", false},
          {"rstrip", false},
          {"normalized", false},
          {"special", special}};
}

/// A flag of tokenizer.ggml.*, `fallback` when the key is missing.
bool optionalBool(const GgufFile &file, const char *key, bool fallback,
                  bool &value, std::string &error) {
  value = fallback;
  return !file.findKey(key) || file.getBool(key, value, error);
}

/// The id of tokenizer.ggml.<name>_token_id when `wanted`: it must be there
/// and name a token.
bool specialTokenId(const GgufFile &file, const char *name, size_t tokens,
                    bool wanted, int64_t &id, std::string &error) {
  id = -1;
  if (!wanted)
    return true;
  std::string key = std::string("tokenizer.ggml.") + name + "_token_id";
  std::string flag = std::string("tokenizer.ggml.add_") + name + "_token";
  uint64_t value;
  if (!file.findKey(key)) {
    error = file.where() +
            (file.findKey(flag) ? "metadata key " + quote(flag) + " is true"
                                : "the tokenizer adds " + std::string(name) +
                                      " by default (there is no " + flag + ")") +
            " but there is no " + key;
    return false;
  }
  if (!file.getUnsigned(key, value, error))
    return false;
  if (value >= tokens) {
    error = file.where() + "metadata key " + quote(key) +
            format(": %llu is not a token id (there are %zu tokens)",
                   static_cast<unsigned long long>(value), tokens);
    return false;
  }
  id = static_cast<int64_t>(value);
  return true;
}

/// SentencePiece's merge order, as transformers' generate_merges
/// (convert_slow_tokenizer.py) derives it from the pieces' scores: every
/// split of a piece into two pieces at a character boundary is a merge
/// scored by the piece; a piece's merges in order of (left id, right id),
/// pieces in id order; then stably by score, longer left piece, longer
/// right piece, all descending. tokenizer.json files of LLaMA-2 and
/// Mistral hold exactly these merges but for the order among the
/// whitespace-run pieces SentencePiece scores alike (-1e9), which
/// tokenizes the same.
std::vector<std::string>
sentencePieceMerges(const std::vector<std::string_view> &pieces,
                    const std::vector<double> &scores) {
  std::unordered_map<std::string_view, size_t> idOf;
  for (size_t id = 0; id < pieces.size(); ++id)
    idOf.emplace(pieces[id], id); // The first of a repeated piece, as a dict.
  struct Merge {
    size_t left, right;
    double score;
    size_t leftChars, rightChars;
    size_t order; // Makes the sort below stable.
  };
  std::vector<Merge> merges, local;
  for (size_t id = 0; id < pieces.size(); ++id) {
    std::string_view piece = pieces[id];
    local.clear();
    size_t chars = 0, total = 0;
    for (size_t pos = 0; pos < piece.size(); pos += utf8SequenceLength(piece, pos))
      ++total;
    for (size_t pos = 0; pos < piece.size();) {
      pos += utf8SequenceLength(piece, pos);
      ++chars;
      if (pos >= piece.size())
        break;
      auto l = idOf.find(piece.substr(0, pos));
      auto r = idOf.find(piece.substr(pos));
      if (l != idOf.end() && r != idOf.end())
        local.push_back(
            {l->second, r->second, scores[id], chars, total - chars, 0});
    }
    std::sort(local.begin(), local.end(), [](const Merge &a, const Merge &b) {
      return std::tie(a.left, a.right) < std::tie(b.left, b.right);
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  for (size_t i = 0; i < merges.size(); ++i)
    merges[i].order = i;
  std::sort(merges.begin(), merges.end(), [](const Merge &a, const Merge &b) {
    return std::tie(a.score, a.leftChars, a.rightChars, b.order) >
           std::tie(b.score, b.leftChars, b.rightChars, a.order);
  });
  std::vector<std::string> out;
  out.reserve(merges.size());
  for (const Merge &m : merges)
    out.push_back(std::string(pieces[m.left]) + " " +
                  std::string(pieces[m.right]));
  return out;
}

// llama.cpp's llama_token_type.
// Unused (5) and byte (6) pieces are plain vocabulary.
constexpr int64_t typeNormal = 1, typeUnknown = 2, typeControl = 3,
                  typeUserDefined = 4, typeByte = 6;

/// The normalizer and decoder of a SentencePiece tokenizer.json (LLaMA-2's
/// and Mistral's with the prefix space, Gemma's without).
const char *spmNormalizer(bool addSpacePrefix) {
  return addSpacePrefix
             ? R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})"
             : R"({"type": "Replace", "pattern": {"String": " "}, "content": "▁"})";
}
const char *spmDecoder(bool addSpacePrefix) {
  return addSpacePrefix
             ? R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})"
             : R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]})";
}

} // namespace

bool ggufTokenizerSources(const GgufFile &file, TokenizerSources &sources,
                          std::string &error) {
  std::string where = file.where();
  std::string_view model;
  if (!file.getString("tokenizer.ggml.model", model, error))
    return false;
  bool sentencePiece = model == "llama";
  if (model != "gpt2" && !sentencePiece) {
    error = where + "metadata key 'tokenizer.ggml.model': " + quote(model) +
            " is not supported (supported: gpt2, byte-level BPE; llama, "
            "SentencePiece BPE)";
    return false;
  }
  // A byte-level BPE names its pre-tokenizer; llama.cpp reads a missing
  // name as "default", GPT-2's. SentencePiece has none.
  const GgufPreTokenizer *split = nullptr;
  if (!sentencePiece) {
    std::string_view pre = "gpt-2";
    if (file.findKey("tokenizer.ggml.pre") &&
        !file.getString("tokenizer.ggml.pre", pre, error))
      return false;
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
  }
  std::vector<std::string_view> tokens, merges;
  std::vector<int64_t> types;
  std::vector<double> scores;
  if (!file.getStringArray("tokenizer.ggml.tokens", tokens, error))
    return false;
  // A per-token array must have one entry per token.
  auto perToken = [&](const char *key, size_t entries) {
    if (entries == tokens.size())
      return true;
    error = where + "metadata key " + quote(key) + " has " +
            std::to_string(entries) + " entries for " +
            std::to_string(tokens.size()) + " tokens";
    return false;
  };
  if (sentencePiece) {
    // The pieces' scores are the merge order (tokenizer.ggml.merges, which
    // some converters also write, is ignored as llama.cpp ignores it).
    if (!file.getFloatArray("tokenizer.ggml.scores", scores, error) ||
        !perToken("tokenizer.ggml.scores", scores.size()))
      return false;
    for (size_t id = 0; id < scores.size(); ++id)
      if (!std::isfinite(scores[id])) {
        error = where + "metadata key 'tokenizer.ggml.scores': the score of "
                        "token " + std::to_string(id) + " is not finite";
        return false;
      }
  } else if (!file.getStringArray("tokenizer.ggml.merges", merges, error)) {
    return false;
  }
  if (file.findKey("tokenizer.ggml.token_type")) {
    if (!file.getIntegerArray("tokenizer.ggml.token_type", types, error) ||
        !perToken("tokenizer.ggml.token_type", types.size()))
      return false;
    for (size_t id = 0; id < types.size(); ++id)
      if (types[id] < typeNormal || types[id] > typeByte) {
        error = where + "metadata key 'tokenizer.ggml.token_type': token " +
                std::to_string(id) + " has type " + std::to_string(types[id]) +
                " (llama.cpp's types are 1 to 6)";
        return false;
      }
  }

  // Byte-level BPE: control and user-defined tokens are added tokens only.
  // SentencePiece (as transformers converts it): every piece is in the
  // vocabulary, control and unknown pieces are also special added tokens,
  // user-defined ones plain added tokens.
  TokenizerJson vocab = TokenizerJson::object(), added = TokenizerJson::array();
  std::unordered_set<std::string_view> seen;
  int64_t unknown = -1;
  for (size_t id = 0; id < tokens.size(); ++id) {
    std::string_view token = tokens[id];
    if (!isValidUtf8(token)) {
      error = where + "metadata key 'tokenizer.ggml.tokens': token " +
              std::to_string(id) + " is not valid UTF-8";
      return false;
    }
    int64_t type = types.empty() ? typeNormal : types[id];
    bool special = type == typeControl || (sentencePiece && type == typeUnknown);
    if (type == typeUnknown && unknown < 0)
      unknown = static_cast<int64_t>(id);
    if (special || type == typeUserDefined) {
      added.push_back(addedToken(id, token, special));
      if (!sentencePiece)
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
  if (sentencePiece) {
    for (std::string &merge : sentencePieceMerges(tokens, scores))
      mergeList.push_back(std::move(merge));
  }
  for (size_t i = 0; i < merges.size(); ++i) {
    if (!isValidUtf8(merges[i])) {
      error = where + "metadata key 'tokenizer.ggml.merges': merge " +
              std::to_string(i) + " is not valid UTF-8";
      return false;
    }
    mergeList.push_back(std::string(merges[i]));
  }

  // BOS/EOS as text (checked to be token ids there), and which of them are
  // added, with llama.cpp's defaults: SentencePiece adds BOS, byte-level
  // BPE neither, unless the file says.
  if (!ggufTokenizerConfig(file, sources.tokenizerConfig, error))
    return false;
  bool addBos, addEos, addSpacePrefix;
  int64_t bos, eos;
  if (!optionalBool(file, "tokenizer.ggml.add_bos_token", sentencePiece,
                    addBos, error) ||
      !optionalBool(file, "tokenizer.ggml.add_eos_token", false, addEos,
                    error) ||
      !optionalBool(file, "tokenizer.ggml.add_space_prefix", sentencePiece,
                    addSpacePrefix, error) ||
      !specialTokenId(file, "bos", tokens.size(), addBos, bos, error) ||
      !specialTokenId(file, "eos", tokens.size(), addEos, eos, error))
    return false;
  if (sentencePiece && file.findKey("tokenizer.ggml.unknown_token_id")) {
    uint64_t id;
    if (!file.getUnsigned("tokenizer.ggml.unknown_token_id", id, error))
      return false;
    if (id >= tokens.size()) {
      error = where + "metadata key 'tokenizer.ggml.unknown_token_id'" +
              format(": %llu is not a token id (there are %zu tokens)",
                     static_cast<unsigned long long>(id), tokens.size());
      return false;
    }
    unknown = static_cast<int64_t>(id);
  }
  std::string bosText = addBos ? std::string(tokens[bos]) : "";
  std::string eosText = addEos ? std::string(tokens[eos]) : "";

  TokenizerJson root;
  root["version"] = "1.0";
  root["added_tokens"] = added;
  root["normalizer"] = TokenizerJson::parse(
      sentencePiece ? spmNormalizer(addSpacePrefix) : split->normalizer);
  root["pre_tokenizer"] =
      sentencePiece ? TokenizerJson() : TokenizerJson::parse(split->preTokenizer);
  root["post_processor"] = templateProcessor(
      addBos ? &bosText : nullptr, addEos ? &eosText : nullptr, bos, eos,
      sentencePiece
          ? "null"
          : R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false})");
  root["decoder"] = TokenizerJson::parse(
      sentencePiece
          ? spmDecoder(addSpacePrefix)
          : R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})");
  root["model"] = {
      {"type", "BPE"},
      {"dropout", nullptr},
      {"unk_token", sentencePiece && unknown >= 0
                        ? TokenizerJson(std::string(tokens[unknown]))
                        : TokenizerJson()},
      {"continuing_subword_prefix", nullptr},
      {"end_of_word_suffix", nullptr},
      {"fuse_unk", sentencePiece},
      {"byte_fallback", sentencePiece},
      {"ignore_merges", split && split->ignoreMerges},
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

bool ggufSentencePieceForm(const std::string &normalizer,
                           const std::string &preTokenizer,
                           const std::string &decoder, bool &addSpacePrefix) {
  TokenizerJson norm = TokenizerJson::parse(normalizer, nullptr, false);
  TokenizerJson pre = TokenizerJson::parse(preTokenizer, nullptr, false);
  TokenizerJson dec = TokenizerJson::parse(decoder, nullptr, false);
  for (bool prefix : {true, false})
    if (norm == TokenizerJson::parse(spmNormalizer(prefix)) &&
        dec == TokenizerJson::parse(spmDecoder(prefix)) && pre.is_null()) {
      addSpacePrefix = prefix;
      return true;
    }
  return false;
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
