//===- Decoders.cpp - token pieces back to text ---------------------------===//

#include "tokenizer/Decoders.h"

#include "Support.h"
#include "tokenizer/Regex.h"
#include "tokenizer/TextSplit.h"
#include "tokenizer/Utf8.h"

#include <algorithm>

namespace attnrt {

namespace {

class ByteLevelDecoder : public DecoderStep {
public:
  void apply(std::vector<std::string> &tokens, const DecodeWindow &,
             bool &fused) const override {
    fused = true;
    std::string bytes;
    for (const std::string &token : tokens) {
      // A token with a character outside the table (an added token written
      // in plain text) contributes its own UTF-8 bytes.
      size_t start = bytes.size();
      bool mapped = true;
      for (size_t pos = 0; pos < token.size() && mapped;) {
        size_t n = utf8SequenceLength(token, pos);
        int byte = n ? byteLevelByte(decodeUtf8(token, pos)) : -1;
        if (byte < 0)
          mapped = false;
        else
          bytes += static_cast<char>(byte);
        pos += n ? n : 1;
      }
      if (!mapped) {
        bytes.resize(start);
        bytes.append(token);
      }
    }
    std::string text;
    appendUtf8Lossy(text, bytes);
    tokens.assign(1, std::move(text));
  }
};

} // namespace

int bytePieceValue(std::string_view token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
    return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    char c = token[i];
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
    if (digit < 0)
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

namespace {

class ByteFallbackDecoder : public DecoderStep {
public:
  bool isByteFallback() const override { return true; }
  void apply(std::vector<std::string> &tokens, const DecodeWindow &,
             bool &) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string run;
    auto flush = [&]() {
      if (run.empty())
        return;
      if (findInvalidUtf8(run) == std::string::npos)
        out.push_back(run);
      else
        for (size_t i = 0; i < run.size(); ++i)
          out.emplace_back(kReplacementChar);
      run.clear();
    };
    for (std::string &token : tokens) {
      int byte = bytePieceValue(token);
      if (byte >= 0) {
        run += static_cast<char>(byte);
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens.swap(out);
  }
};

class FuseDecoder : public DecoderStep {
public:
  void apply(std::vector<std::string> &tokens, const DecodeWindow &,
             bool &fused) const override {
    fused = true;
    std::string all;
    for (const std::string &token : tokens)
      all += token;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder : public DecoderStep {
public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content(std::move(content)), start(start), stop(stop) {}
  void apply(std::vector<std::string> &tokens, const DecodeWindow &window,
             bool &fused) const override {
    for (size_t t = 0; t < tokens.size(); ++t) {
      std::string &token = tokens[t];
      // After a Fuse the first piece begins the window and the last ends it:
      // only the whole sequence's start and end are stripped.
      bool atStart = !(fused && window.continuation && t == 0);
      bool atEnd = !(fused && !window.final && t + 1 == tokens.size());
      size_t begin = 0;
      for (size_t i = 0; atStart && i < start &&
                         token.compare(begin, content.size(), content) == 0;
           ++i)
        begin += content.size();
      size_t end = token.size();
      for (size_t i = 0; atEnd && i < stop && end >= begin + content.size() &&
                         token.compare(end - content.size(), content.size(),
                                       content) == 0;
           ++i)
        end -= content.size();
      token = token.substr(begin, end - begin);
    }
  }
  size_t undecidedSuffix(std::string_view text) const override {
    size_t end = text.size();
    for (size_t i = 0; i < stop && end >= content.size() &&
                       text.compare(end - content.size(), content.size(),
                                    content) == 0;
         ++i)
      end -= content.size();
    return text.size() - end;
  }

private:
  std::string content;
  size_t start, stop;
};

class ReplaceDecoder : public DecoderStep {
public:
  ReplaceDecoder(Regex pattern, std::string content)
      : pattern(std::move(pattern)), content(std::move(content)) {}
  void apply(std::vector<std::string> &tokens, const DecodeWindow &,
             bool &) const override {
    if (!pattern.isValid())
      return;
    Regex::Scratch scratch(pattern);
    std::string out;
    for (std::string &token : tokens) {
      out.clear();
      size_t previous = 0;
      pattern.forEachMatch(token, scratch, [&](size_t b, size_t e) {
        out.append(token, previous, b - previous);
        out.append(content);
        previous = e;
      });
      out.append(token, previous, std::string::npos);
      token.swap(out);
    }
  }

private:
  Regex pattern;
  std::string content;
};

class MetaspaceDecoder : public DecoderStep {
public:
  MetaspaceDecoder(std::string replacement, bool stripFirst)
      : replacement(std::move(replacement)), stripFirst(stripFirst) {}
  void apply(std::vector<std::string> &tokens, const DecodeWindow &window,
             bool &) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string &token = tokens[i];
      bool first = i == 0 && !window.continuation;
      for (size_t pos = 0; pos < token.size();) {
        if (token.compare(pos, replacement.size(), replacement) == 0) {
          // Hugging Face drops every replacement of the first token when a
          // prefix was prepended, and turns the others into spaces.
          if (!(first && stripFirst))
            out += ' ';
          pos += replacement.size();
        } else {
          out += token[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

private:
  std::string replacement;
  bool stripFirst;
};

} // namespace

/// A required non-negative integer member.
static bool readCount(const Json &json, const char *key, const std::string &where,
                      size_t &out, std::string &error) {
  const Json *value = jsonFind(json, key);
  int64_t n;
  if (!value || !jsonInteger(*value, n) || n < 0 || n > 1000000) {
    error = where + "." + key + " is missing or not a small non-negative "
                                "integer";
    return false;
  }
  out = static_cast<size_t>(n);
  return true;
}

bool Decoder::loadStep(const Json &json, const std::string &where,
                       std::string &error) {
  const Json *typeJson = jsonFind(json, "type");
  if (!typeJson || !typeJson->is_string()) {
    error = where + " is not an object with a string \"type\"";
    return false;
  }
  std::string type = typeJson->get<std::string>();
  auto text = [&](const char *key, std::string &out) {
    const Json *value = jsonFind(json, key);
    if (value && value->is_string()) {
      out = value->get<std::string>();
      return true;
    }
    error = where + "." + key + " is missing or not a string";
    return false;
  };
  // The members each decoder type has (a misspelt one is an error).
  auto only = [&](std::initializer_list<std::string_view> allowed) {
    return onlyMembers(json, allowed, where, "a " + type, error);
  };
  bool membersOk =
      type == "Sequence"    ? only({"type", "decoders"})
      : type == "ByteLevel" ? only({"type", "add_prefix_space", "trim_offsets",
                                    "use_regex"})
      : type == "ByteFallback" || type == "Fuse" ? only({"type"})
      : type == "Strip"   ? only({"type", "content", "start", "stop"})
      : type == "Replace" ? only({"type", "pattern", "content"})
      : type == "Metaspace"
          ? only({"type", "replacement", "prepend_scheme", "split",
                  "add_prefix_space", "str_rep"})
          : true;
  if (!membersOk)
    return false;
  if (type == "Sequence") {
    const Json *list = jsonFind(json, "decoders");
    if (!list || !list->is_array()) {
      error = where + ".decoders is missing or not an array";
      return false;
    }
    for (size_t i = 0; i < list->size(); ++i)
      if (!loadStep((*list)[i], where + format(".decoders[%zu]", i), error))
        return false;
    return true;
  }
  if (type == "ByteLevel") {
    steps.push_back(std::make_unique<ByteLevelDecoder>());
    return true;
  }
  if (type == "ByteFallback") {
    steps.push_back(std::make_unique<ByteFallbackDecoder>());
    return true;
  }
  if (type == "Fuse") {
    steps.push_back(std::make_unique<FuseDecoder>());
    return true;
  }
  if (type == "Strip") {
    std::string content;
    size_t start, stop;
    if (!text("content", content) ||
        !readCount(json, "start", where, start, error) ||
        !readCount(json, "stop", where, stop, error))
      return false;
    if (content.empty() || utf8SequenceLength(content, 0) != content.size()) {
      error = where + ".content must be one character";
      return false;
    }
    steps.push_back(std::make_unique<StripDecoder>(content, start, stop));
    return true;
  }
  if (type == "Replace") {
    Regex pattern;
    std::string content;
    if (!loadPattern(jsonFind(json, "pattern"), where, pattern, error) ||
        !text("content", content))
      return false;
    steps.push_back(
        std::make_unique<ReplaceDecoder>(std::move(pattern), std::move(content)));
    return true;
  }
  if (type == "Metaspace") {
    std::string replacement;
    if (!text("replacement", replacement))
      return false;
    if (replacement.empty() ||
        utf8SequenceLength(replacement, 0) != replacement.size()) {
      error = where + ".replacement must be one character";
      return false;
    }
    bool stripFirst = true;
    const Json *scheme = jsonFind(json, "prepend_scheme");
    if (scheme && scheme->is_string()) {
      stripFirst = *scheme != "never";
    } else if (const Json *add = jsonFind(json, "add_prefix_space");
               add && add->is_boolean()) {
      stripFirst = add->get<bool>();
    }
    steps.push_back(
        std::make_unique<MetaspaceDecoder>(std::move(replacement), stripFirst));
    return true;
  }
  error = where + " type " + quote(type) +
          " is not supported (supported: Sequence, ByteLevel, ByteFallback, "
          "Fuse, Strip, Replace, Metaspace)";
  return false;
}

bool Decoder::load(const Json &json, std::string &error) {
  steps.clear();
  present = !json.is_null();
  return !present || loadStep(json, "decoder", error);
}

void Decoder::decode(std::vector<std::string> &tokens, std::string &out,
                     const DecodeWindow &window) const {
  out.clear();
  if (!present) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i || window.continuation)
        out += ' ';
      out += tokens[i];
    }
    return;
  }
  bool fused = false;
  for (const auto &step : steps)
    step->apply(tokens, window, fused);
  for (const std::string &token : tokens)
    out += token;
}

size_t Decoder::undecidedSuffix(std::string_view text) const {
  size_t longest = 0;
  for (const auto &step : steps)
    longest = std::max(longest, step->undecidedSuffix(text));
  return longest;
}

bool Decoder::joinsBytePieces() const {
  for (const auto &step : steps)
    if (step->isByteFallback())
      return true;
  return false;
}

} // namespace attnrt
