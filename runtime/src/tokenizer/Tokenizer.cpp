//===- Tokenizer.cpp - Hugging Face tokenizers in the runtime -------------===//

#include "tokenizer/Tokenizer.h"

#include "tokenizer/GgufTokenizer.h"

#include "Safetensors.h"
#include "Support.h"
#include "tokenizer/Utf8.h"

#include <algorithm>

namespace attnrt {

//===----------------------------------------------------------------------===//
// Added tokens
//===----------------------------------------------------------------------===//

void AddedTokenMatcher::build(const std::vector<AddedToken> &tokens,
                              bool normalized, bool includeSpecial) {
  nodes.assign(1, Node());
  std::fill(std::begin(firstByte), std::end(firstByte), false);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const AddedToken &token = tokens[i];
    const std::string &text =
        normalized ? token.normalizedContent : token.content;
    // A token the normalizer empties (a Strip of blanks) matches nothing.
    if (token.normalized != normalized || (token.special && !includeSpecial) ||
        text.empty())
      continue;
    firstByte[static_cast<unsigned char>(text[0])] = true;
    int32_t node = 0;
    for (unsigned char c : text) {
      auto &children = nodes[node].children;
      auto it = std::lower_bound(
          children.begin(), children.end(), c,
          [](const std::pair<unsigned char, int32_t> &e, unsigned char v) {
            return e.first < v;
          });
      if (it != children.end() && it->first == c) {
        node = it->second;
        continue;
      }
      int32_t child = static_cast<int32_t>(nodes.size());
      children.insert(it, {c, child});
      nodes.emplace_back(); // Invalidates `children`; not used again.
      node = child;
    }
    nodes[node].token = static_cast<int32_t>(i);
  }
}

int32_t AddedTokenMatcher::longestAt(std::string_view text, size_t pos,
                                     size_t &length) const {
  if (!firstByte[static_cast<unsigned char>(text[pos])])
    return -1;
  int32_t best = -1, node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto &children = nodes[node].children;
    unsigned char c = static_cast<unsigned char>(text[i]);
    auto it = std::lower_bound(
        children.begin(), children.end(), c,
        [](const std::pair<unsigned char, int32_t> &e, unsigned char v) {
          return e.first < v;
        });
    if (it == children.end() || it->first != c)
      break;
    node = it->second;
    if (nodes[node].token >= 0) {
      best = nodes[node].token;
      length = i + 1 - pos;
    }
  }
  return best;
}

/// Whether the character at text[pos] is a word character (\w with Unicode
/// properties), for single_word tokens.
static bool isWordChar(std::string_view text, size_t pos) {
  static const Regex word = [] {
    Regex regex;
    std::string error;
    (void)regex.compile("^\\w", error);
    return regex;
  }();
  thread_local Regex::Scratch scratch(word);
  size_t begin, end;
  bool failed = false;
  size_t length = utf8CharLength(static_cast<unsigned char>(text[pos]));
  return word.find(text.substr(pos, length), 0, scratch, begin, end, failed);
}

template <typename OnText, typename OnToken>
void Tokenizer::splitAdded(std::string_view text,
                           const AddedTokenMatcher &matcher, OnText &&onText,
                           OnToken &&onToken) const {
  size_t startOffset = 0, pos = 0;
  if (!matcher.empty()) {
    while (pos < text.size()) {
      size_t length = 0;
      int32_t index = matcher.longestAt(text, pos, length);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken &token = added[index];
      size_t start = pos, stop = pos + length;
      pos = stop;
      if (token.singleWord) {
        bool wordBefore =
            start > 0 && isWordChar(text, previousCharStart(text, start));
        bool wordAfter = stop < text.size() && isWordChar(text, stop);
        if (wordBefore || wordAfter)
          continue; // Inside a word: not this token.
      }
      if (token.lstrip) {
        size_t b = start;
        while (b > startOffset) {
          size_t p = previousCharStart(text, b);
          if (!isUnicodeWhitespace(decodeUtf8(text, p)))
            break;
          b = p;
        }
        start = b;
      }
      if (token.rstrip) {
        while (stop < text.size() &&
               isUnicodeWhitespace(decodeUtf8(text, stop)))
          stop += utf8CharLength(static_cast<unsigned char>(text[stop]));
        pos = stop;
      }
      if (startOffset < start)
        onText(startOffset, start);
      onToken(index);
      startOffset = stop;
    }
  }
  if (startOffset < text.size())
    onText(startOffset, text.size());
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

/// A special token named in tokenizer_config.json: a string or an
/// AddedToken object {"content": ...}; "" when absent or null.
static bool readTokenName(const Json &config, const char *key,
                          const std::string &where, std::string &name,
                          std::string &error) {
  name.clear();
  const Json *value = jsonFind(config, key);
  if (!value || value->is_null())
    return true;
  if (value->is_string()) {
    name = value->get<std::string>();
    return true;
  }
  const Json *content = jsonFind(*value, "content");
  if (content && content->is_string()) {
    name = content->get<std::string>();
    return true;
  }
  error = where + key + " is " + jsonKindName(*value) +
          ", not a string or {\"content\": ...}";
  return false;
}

bool Tokenizer::loadAddedTokens(const Json &root, const std::string &where,
                                std::string &error) {
  const Json *list = jsonFind(root, "added_tokens");
  if (!list || list->is_null())
    return true;
  if (!list->is_array()) {
    error = where + "added_tokens is " + jsonKindName(*list) +
            ", not an array";
    return false;
  }
  int64_t idBound = static_cast<int64_t>(model.idLimit()) +
                    2 * static_cast<int64_t>(list->size()) + 1024;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json &entry = (*list)[i];
    std::string at = where + format("added_tokens[%zu]", i);
    AddedToken token;
    if (!onlyMembers(entry,
                     {"id", "content", "single_word", "lstrip", "rstrip",
                      "normalized", "special"},
                     at, "an added token", error))
      return false;
    const Json *id = jsonFind(entry, "id");
    const Json *content = jsonFind(entry, "content");
    int64_t n = -1;
    if (!entry.is_object() || !id || !jsonInteger(*id, n) || !content ||
        !content->is_string()) {
      error = at + " is not an object with an integer \"id\" and a string "
                   "\"content\"";
      return false;
    }
    if (n < 0 || n >= idBound) {
      error = at + format(": id %lld is out of range [0, %lld)",
                          static_cast<long long>(n),
                          static_cast<long long>(idBound));
      return false;
    }
    token.id = static_cast<int32_t>(n);
    token.content = content->get<std::string>();
    if (token.content.empty()) {
      error = at + ": \"content\" is empty";
      return false;
    }
    struct Flag {
      const char *key;
      bool *out;
    } flags[] = {{"single_word", &token.singleWord}, {"lstrip", &token.lstrip},
                 {"rstrip", &token.rstrip},          {"normalized", &token.normalized},
                 {"special", &token.special}};
    for (const Flag &flag : flags) {
      const Json *value = jsonFind(entry, flag.key);
      if (!value || value->is_null())
        continue;
      if (!value->is_boolean()) {
        error = at + "." + flag.key + " is not true or false";
        return false;
      }
      *flag.out = value->get<bool>();
    }
    // The model's own piece under the same id must be the same text.
    if (const std::string *piece = model.piece(token.id);
        piece && *piece != token.content) {
      error = at + format(": id %d is ", token.id) + quote(token.content) +
              " here but " + quote(*piece) + " in model.vocab";
      return false;
    }
    added.push_back(std::move(token));
  }
  // Index by id and content, rejecting duplicates.
  int32_t maxId = model.idLimit() - 1;
  for (const AddedToken &token : added)
    maxId = std::max(maxId, token.id);
  addedById.assign(static_cast<size_t>(maxId + 1), -1);
  addedByContent.reserve(added.size());
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken &token = added[i];
    if (addedById[token.id] >= 0) {
      error = where + format("added_tokens: id %d is given to both ", token.id) +
              quote(added[addedById[token.id]].content) + " and " +
              quote(token.content);
      return false;
    }
    if (!addedByContent.insert(token.content, static_cast<int32_t>(i))) {
      error = where + "added_tokens: " + quote(token.content) +
              " is listed twice";
      return false;
    }
    addedById[token.id] = static_cast<int32_t>(i);
  }
  return true;
}

bool Tokenizer::loadPostProcessor(const Json &json, const std::string &where,
                                  std::string &error) {
  if (json.is_null())
    return true;
  const Json *type = jsonFind(json, "type");
  if (!type || !type->is_string()) {
    error = where + " is not an object with a string \"type\"";
    return false;
  }
  if (*type == "ByteLevel")
    return onlyMembers(json, {"type", "add_prefix_space", "trim_offsets", "use_regex"},
                       where, "a ByteLevel", error); // Offsets only: no ids.
  if (*type == "Sequence") {
    if (!onlyMembers(json, {"type", "processors"}, where, "a Sequence", error))
      return false;
    const Json *list = jsonFind(json, "processors");
    if (!list || !list->is_array()) {
      error = where + ".processors is missing or not an array";
      return false;
    }
    for (size_t i = 0; i < list->size(); ++i)
      if (!loadPostProcessor((*list)[i], where + format(".processors[%zu]", i),
                             error))
        return false;
    return true;
  }
  if (*type != "TemplateProcessing") {
    error = where + " type " + quote(type->get<std::string>()) +
            " is not supported (supported: TemplateProcessing, ByteLevel, "
            "Sequence)";
    return false;
  }
  if (templateFromPostProcessor) {
    error = where + " holds a second TemplateProcessing";
    return false;
  }
  templateFromPostProcessor = true;
  if (!onlyMembers(json, {"type", "single", "pair", "special_tokens"}, where,
                   "a TemplateProcessing", error))
    return false;
  const Json *single = jsonFind(json, "single");
  const Json *specials = jsonFind(json, "special_tokens");
  if (!single || !single->is_array()) {
    error = where + ".single is missing or not an array";
    return false;
  }
  bool seenSequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json &item = (*single)[i];
    std::string at = where + format(".single[%zu]", i);
    if (jsonFind(item, "Sequence")) {
      if (seenSequence) {
        error = at + ": a second Sequence in a single-sequence template";
        return false;
      }
      seenSequence = true;
      continue;
    }
    const Json *special = jsonFind(item, "SpecialToken");
    const Json *name = special ? jsonFind(*special, "id") : nullptr;
    if (!name || !name->is_string()) {
      error = at + " is neither {\"Sequence\": ...} nor {\"SpecialToken\": "
                   "{\"id\": ...}}";
      return false;
    }
    const Json *entry =
        specials ? jsonFind(*specials, name->get_ref<const std::string &>())
                 : nullptr;
    const Json *ids = entry ? jsonFind(*entry, "ids") : nullptr;
    if (!ids || !ids->is_array()) {
      error = at + ": special token " +
              quote(name->get_ref<const std::string &>()) +
              " has no \"ids\" in special_tokens";
      return false;
    }
    for (const Json &value : *ids) {
      int64_t id;
      if (!jsonInteger(value, id) || id < 0 || id >= limit ||
          !piece(static_cast<int32_t>(id))) {
        error = at + ": special token " +
                quote(name->get_ref<const std::string &>()) +
                " has an id that is not in the vocabulary";
        return false;
      }
      (seenSequence ? suffix : prefix).push_back(static_cast<int32_t>(id));
    }
  }
  if (!seenSequence) {
    error = where + ".single has no {\"Sequence\": {\"id\": \"A\"}}";
    return false;
  }
  return true;
}

bool Tokenizer::applyConfig(const Json &config, const std::string &where,
                            std::string &error) {
  if (!config.is_object()) {
    error = where + "is " + jsonKindName(config) + ", not an object";
    return false;
  }
  std::string bosName, eosName;
  if (!readTokenName(config, "bos_token", where, bosName, error) ||
      !readTokenName(config, "eos_token", where, eosName, error))
    return false;
  auto idOf = [&](const std::string &name, const char *key, int32_t &id) {
    id = -1;
    if (name.empty())
      return true;
    id = tokenId(name);
    if (id >= 0)
      return true;
    error = where + key + " " + quote(name) + " is not a token of tokenizer.json";
    return false;
  };
  int32_t bosToken, eosToken;
  if (!idOf(bosName, "bos_token", bosToken) || !idOf(eosName, "eos_token", eosToken))
    return false;
  bos = bosToken;
  if (eosToken >= 0)
    eos.assign(1, eosToken);

  const Json *cleanUp = jsonFind(config, "clean_up_tokenization_spaces");
  cleanUpSpaces = cleanUp && cleanUp->is_boolean() && cleanUp->get<bool>();

  // transformers rewrites the template from add_bos_token/add_eos_token: the
  // LLaMA and Gemma tokenizer classes always (defaults true and false), the
  // generic fast tokenizer when the flags are given and tokenizer.json's
  // post-processor is a template.
  const Json *tokenizerClass = jsonFind(config, "tokenizer_class");
  std::string className =
      tokenizerClass && tokenizerClass->is_string() ? tokenizerClass->get<std::string>() : "";
  bool llamaLike = className == "LlamaTokenizer" ||
                   className == "LlamaTokenizerFast" ||
                   className == "CodeLlamaTokenizer" ||
                   className == "CodeLlamaTokenizerFast" ||
                   className == "GemmaTokenizer" ||
                   className == "GemmaTokenizerFast";
  const Json *addBos = jsonFind(config, "add_bos_token");
  const Json *addEos = jsonFind(config, "add_eos_token");
  for (const Json *flag : {addBos, addEos})
    if (flag && !flag->is_null() && !flag->is_boolean()) {
      error = where + std::string(flag == addBos ? "add_bos_token" : "add_eos_token") +
              " is not true or false";
      return false;
    }
  bool given = (addBos && addBos->is_boolean()) || (addEos && addEos->is_boolean());
  if (!llamaLike && !(given && templateFromPostProcessor))
    return true;
  bool withBos = addBos && addBos->is_boolean() ? addBos->get<bool>() : llamaLike;
  bool withEos = addEos && addEos->is_boolean() ? addEos->get<bool>() : false;
  if ((withBos && bosToken < 0) || (withEos && eosToken < 0)) {
    error = where + (withBos && bosToken < 0 ? "add_bos_token" : "add_eos_token") +
            " is true but there is no " +
            (withBos && bosToken < 0 ? "bos_token" : "eos_token");
    return false;
  }
  prefix.clear();
  suffix.clear();
  if (withBos)
    prefix.push_back(bosToken);
  if (withEos)
    suffix.push_back(eosToken);
  return true;
}

bool Tokenizer::applyGenerationConfig(const Json &config,
                                      const std::string &where,
                                      std::string &error) {
  if (!config.is_object()) {
    error = where + "is " + jsonKindName(config) + ", not an object";
    return false;
  }
  const Json *value = jsonFind(config, "eos_token_id");
  if (!value || value->is_null())
    return true;
  std::vector<int32_t> ids;
  auto add = [&](const Json &v) {
    int64_t id;
    if (!jsonInteger(v, id) || id < 0 || id >= limit ||
        !piece(static_cast<int32_t>(id))) {
      error = where + "eos_token_id " + v.dump() +
              " is not a token id of the tokenizer";
      return false;
    }
    ids.push_back(static_cast<int32_t>(id));
    return true;
  };
  if (value->is_array()) {
    for (const Json &v : *value)
      if (!add(v))
        return false;
  } else if (!add(*value)) {
    return false;
  }
  eos = std::move(ids);
  return true;
}

bool Tokenizer::loadAll(const TokenizerSources &sources, std::string &error) {
  std::string where = sources.tokenizerJsonName + ": ";
  Json root;
  JsonLimits limits;
  limits.maxValues = size_t(1) << 23;
  std::string message;
  if (!parseJson(sources.tokenizerJson, root, message, limits)) {
    error = where + "not valid JSON: " + message;
    return false;
  }
  if (!root.is_object()) {
    error = where + "is " + jsonKindName(root) + ", not an object";
    return false;
  }
  // A misspelt member would silently drop a component: only the members
  // tokenizers writes are accepted (truncation and padding configure batch
  // encoding, which transformers resets; they are ignored).
  static const char *const known[] = {
      "version",        "truncation",     "padding", "added_tokens", "normalizer",
      "pre_tokenizer", "post_processor", "decoder", "model"};
  for (const auto &[key, value] : root.items()) {
    bool isKnown = false;
    for (const char *name : known)
      isKnown |= key == name;
    if (!isKnown) {
      error = where + "unknown member " + quote(key) +
              " (tokenizer.json has version, truncation, padding, "
              "added_tokens, normalizer, pre_tokenizer, post_processor, "
              "decoder and model)";
      return false;
    }
  }
  const Json *modelJson = jsonFind(root, "model");
  if (!modelJson || !modelJson->is_object()) {
    error = where + "\"model\" is missing or not an object";
    return false;
  }
  const Json *type = jsonFind(*modelJson, "type");
  // Files from before "type" was written hold a BPE model when they have
  // merges.
  bool isBpe = type ? *type == "BPE" : jsonFind(*modelJson, "merges") != nullptr;
  if (!isBpe) {
    error = where + "model type " +
            (type && type->is_string() ? quote(type->get<std::string>())
                                       : std::string("(none)")) +
            " is not supported (supported: BPE)";
    return false;
  }
  if (!model.load(*modelJson, message) ||
      !normalizer.load(root.value("normalizer", Json()), message) ||
      !preTokenizer.load(root.value("pre_tokenizer", Json()), message) ||
      !decoder.load(root.value("decoder", Json()), message)) {
    error = where + message;
    return false;
  }
  if (!loadAddedTokens(root, where, error))
    return false;
  SplitScratch scratch;
  normalizer.prepareScratch(scratch);
  for (AddedToken &token : added)
    if (token.normalized) {
      token.normalizedContent = token.content;
      normalizer.apply(token.normalizedContent, scratch);
    }
  if (scratch.regexFailed) {
    error = where + "the normalizer's regular expression engine gave up on "
                    "an added token's content (PCRE2 match or depth limit)";
    return false;
  }
  limit = std::max<int32_t>(model.idLimit(),
                            static_cast<int32_t>(addedById.size()));
  if (addedById.size() < static_cast<size_t>(limit))
    addedById.resize(static_cast<size_t>(limit), -1);
  rawMatcher.build(added, false, true);
  rawMatcherNoSpecial.build(added, false, false);
  normMatcher.build(added, true, true);
  normMatcherNoSpecial.build(added, true, false);
  if (!loadPostProcessor(root.value("post_processor", Json()),
                         where + "post_processor", error))
    return false;

  if (!sources.tokenizerConfig.empty()) {
    std::string at = sources.tokenizerConfigName + ": ";
    Json config;
    if (!parseJson(sources.tokenizerConfig, config, message)) {
      error = at + "not valid JSON: " + message;
      return false;
    }
    if (!applyConfig(config, at, error))
      return false;
  }
  if (!sources.generationConfig.empty()) {
    std::string at = sources.generationConfigName + ": ";
    Json config;
    if (!parseJson(sources.generationConfig, config, message)) {
      error = at + "not valid JSON: " + message;
      return false;
    }
    if (!applyGenerationConfig(config, at, error))
      return false;
  }
  return true;
}

std::unique_ptr<Tokenizer> Tokenizer::load(const TokenizerSources &sources,
                                           std::string &error) {
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  if (!tokenizer->loadAll(sources, error))
    return nullptr;
  return tokenizer;
}

std::unique_ptr<Tokenizer> Tokenizer::loadDirectory(const std::string &dir,
                                                    std::string &error) {
  TokenizerSources sources;
  // A GGUF file: its tokenizer.ggml.* metadata (GgufTokenizer.h).
  if (dir.size() > 5 && dir.compare(dir.size() - 5, 5, ".gguf") == 0) {
    GgufFile file;
    if (!file.open(dir, error, /*populate=*/false) ||
        !ggufTokenizerSources(file, sources, error))
      return nullptr;
    return load(sources, error);
  }
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  sources.tokenizerJsonName = base + "tokenizer.json";
  sources.tokenizerConfigName = base + "tokenizer_config.json";
  sources.generationConfigName = base + "generation_config.json";
  if (!readFileText(sources.tokenizerJsonName, true, sources.tokenizerJson, error) ||
      !readFileText(sources.tokenizerConfigName, false, sources.tokenizerConfig,
                error) ||
      !readFileText(sources.generationConfigName, false, sources.generationConfig,
                error))
    return nullptr;
  if (sources.tokenizerJson.empty()) {
    error = sources.tokenizerJsonName + ": the file is empty";
    return nullptr;
  }
  return load(sources, error);
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

struct Tokenizer::Scratch {
  SplitScratch split;
  BpeModel::Scratch bpe;
  std::string normalized;
};

namespace {
/// Feeds every pre-tokenized piece to the model.
class ModelSink final : public PieceSink {
public:
  ModelSink(const BpeModel &model, BpeModel::Scratch &scratch,
            std::vector<int32_t> &ids)
      : model(model), scratch(scratch), ids(ids) {}
  void operator()(std::string_view piece, bool) override {
    model.encodeWord(piece, scratch, ids);
  }

private:
  const BpeModel &model;
  BpeModel::Scratch &scratch;
  std::vector<int32_t> &ids;
};
} // namespace

void Tokenizer::encodeNormalized(std::string_view text, bool atStart, unsigned,
                                 Scratch &scratch,
                                 std::vector<int32_t> &ids) const {
  ModelSink sink(model, scratch.bpe, ids);
  preTokenizer.run(text, atStart, scratch.split, sink);
}

void Tokenizer::encodeSection(std::string_view text, bool atStart,
                              unsigned flags, Scratch &scratch,
                              std::vector<int32_t> &ids) const {
  std::string_view normalized = text;
  if (!normalizer.empty()) {
    scratch.normalized.assign(text);
    normalizer.apply(scratch.normalized, scratch.split);
    normalized = scratch.normalized;
  }
  const AddedTokenMatcher &matcher =
      flags & ParseSpecial ? normMatcher : normMatcherNoSpecial;
  splitAdded(
      normalized, matcher,
      [&](size_t b, size_t e) {
        encodeNormalized(normalized.substr(b, e - b), atStart && b == 0, flags,
                         scratch, ids);
      },
      [&](int32_t index) { ids.push_back(added[index].id); });
}

bool Tokenizer::encode(std::string_view text, unsigned flags,
                       std::vector<int32_t> &ids, std::string &error) const {
  size_t bad = findInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    error = format("invalid UTF-8 at byte %zu of the text", bad);
    return false;
  }
  Scratch scratch;
  normalizer.prepareScratch(scratch.split);
  preTokenizer.prepareScratch(scratch.split);
  size_t first = ids.size();
  if (flags & AddSpecial)
    ids.insert(ids.end(), prefix.begin(), prefix.end());
  const AddedTokenMatcher &matcher =
      flags & ParseSpecial ? rawMatcher : rawMatcherNoSpecial;
  splitAdded(
      text, matcher,
      [&](size_t b, size_t e) {
        encodeSection(text.substr(b, e - b), b == 0, flags, scratch, ids);
      },
      [&](int32_t index) { ids.push_back(added[index].id); });
  if (flags & AddSpecial)
    ids.insert(ids.end(), suffix.begin(), suffix.end());
  if (scratch.split.regexFailed) {
    ids.resize(first);
    error = "the regular expression engine gave up on the text (PCRE2 match "
            "or depth limit)";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

const std::string *Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= limit)
    return nullptr;
  if (addedById[id] >= 0)
    return &added[addedById[id]].content;
  return model.piece(id);
}

bool Tokenizer::isSpecial(int32_t id) const {
  return id >= 0 && id < limit && addedById[id] >= 0 &&
         added[addedById[id]].special;
}

int32_t Tokenizer::tokenId(std::string_view token) const {
  int32_t index = addedByContent.find(token);
  if (index >= 0)
    return added[index].id;
  return model.find(token);
}

/// transformers' clean_up_tokenization: no space before punctuation and
/// English contractions.
static const std::pair<std::string_view, std::string_view> cleanUpRules[] = {
    {" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
    {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
    {" 've", "'ve"}, {" 're", "'re"}};

static void cleanUpTokenization(std::string &text) {
  for (const auto &[from, to] : cleanUpRules) {
    std::string out;
    size_t previous = 0;
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + from.size())) {
      out.append(text, previous, at - previous);
      out.append(to);
      previous = at + from.size();
    }
    out.append(text, previous, std::string::npos);
    text.swap(out);
  }
}

bool Tokenizer::decodeWindow(const int32_t *ids, size_t count, bool skipSpecial,
                             const DecodeWindow &window, std::string &text,
                             std::string &error, bool cleanUp) const {
  std::vector<std::string> tokens;
  tokens.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const std::string *token = piece(ids[i]);
    if (!token) {
      error = format("token id %d at index %zu is not in the tokenizer's "
                     "vocabulary (ids below %d, with gaps)",
                     ids[i], i, limit);
      return false;
    }
    if (skipSpecial && isSpecial(ids[i]))
      continue;
    tokens.push_back(*token);
  }
  decoder.decode(tokens, text, window);
  if (cleanUp && cleanUpSpaces)
    cleanUpTokenization(text);
  return true;
}

size_t Tokenizer::undecidedSuffix(std::string_view text) const {
  size_t longest = decoder.undecidedSuffix(text);
  // A trailing " n" may still become " n't", which the clean-up rewrites.
  if (cleanUpSpaces)
    for (const auto &[from, to] : cleanUpRules)
      for (size_t n = 1; n < from.size(); ++n)
        if (n > longest && text.size() >= n &&
            text.compare(text.size() - n, n, from.substr(0, n)) == 0)
          longest = n;
  return longest;
}

bool Tokenizer::joinsNeighbours(int32_t id) const {
  const std::string *token = piece(id);
  return token && decoder.joinsBytePieces() && bytePieceValue(*token) >= 0;
}

//===----------------------------------------------------------------------===//
// Streaming
//===----------------------------------------------------------------------===//

void DecodeStream::print(size_t end, std::string &out) {
  size_t from = printed.size();
  if (text.compare(0, printed.size(), printed) != 0) {
    // The window's text changed under what was printed (an ill-formed run
    // of byte pieces): go on after it, from a character boundary.
    while (from < text.size() &&
           (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80)
      ++from;
  }
  if (end > from)
    out.append(text, from, end - from);
  printed.assign(text, 0, std::max(end, from));
}

bool DecodeStream::step(int32_t id, std::string &out, std::string &error) {
  window.push_back(id);
  DecodeWindow where;
  where.continuation = !atStart;
  where.final = false;
  if (!tokenizer.decodeWindow(window.data(), window.size(), skipSpecial, where,
                              text, error)) {
    window.pop_back();
    return false;
  }
  // An incomplete character at the end: wait for the rest of its bytes.
  if (text.size() >= kReplacementChar.size() &&
      text.compare(text.size() - kReplacementChar.size(),
                   kReplacementChar.size(), kReplacementChar) == 0)
    return true;
  size_t undecided = tokenizer.undecidedSuffix(text);
  print(text.size() - undecided, out);
  bool cut = undecided == 0 && !(atStart && text.empty()) &&
             !tokenizer.joinsNeighbours(window.back());
  if (cut) {
    window.clear();
    printed.clear();
    atStart = false;
  }
  return true;
}

bool DecodeStream::flush(std::string &out, std::string &error) {
  if (!window.empty()) {
    DecodeWindow where;
    where.continuation = !atStart;
    if (!tokenizer.decodeWindow(window.data(), window.size(), skipSpecial,
                                where, text, error))
      return false;
    print(text.size(), out);
  }
  reset();
  return true;
}

void DecodeStream::reset() {
  window.clear();
  printed.clear();
  atStart = true;
}

} // namespace attnrt
