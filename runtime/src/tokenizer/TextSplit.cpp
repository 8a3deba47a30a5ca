//===- TextSplit.cpp - normalizers and pre-tokenizers ---------------------===//

#include "tokenizer/TextSplit.h"

#include "Support.h"
#include "tokenizer/Utf8.h"

#include <algorithm>
#include <functional>
#include <optional>

#include <utf8proc.h>

namespace attnrt {

//===----------------------------------------------------------------------===//
// Shared pieces
//===----------------------------------------------------------------------===//

/// GPT-2's split regex, which ByteLevel applies when use_regex is true.
static constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

namespace {
/// The byte-to-unicode table of GPT-2 (bytes_to_unicode in its encoder.py):
/// printable Latin-1 bytes stand for themselves, the others for U+0100 on,
/// in byte order.
struct ByteLevelTable {
  std::string chars[256];
  int bytes[324];
  ByteLevelTable() {
    std::fill(std::begin(bytes), std::end(bytes), -1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      appendUtf8(chars[b], cp);
      bytes[cp] = b;
    }
  }
};
const ByteLevelTable &byteLevelTable() {
  static const ByteLevelTable table;
  return table;
}
} // namespace

const std::string &byteLevelChar(unsigned char byte) {
  return byteLevelTable().chars[byte];
}

int byteLevelByte(uint32_t codePoint) {
  return codePoint < 324 ? byteLevelTable().bytes[codePoint] : -1;
}

/// The "type" of a tokenizer.json component, or an error naming `where`.
static bool readType(const Json &json, const std::string &where,
                     std::string &type, std::string &error) {
  const Json *value = jsonFind(json, "type");
  if (!json.is_object() || !value || !value->is_string()) {
    error = where + " is " +
            (json.is_object() ? "an object without a string \"type\""
                              : std::string(jsonKindName(json)) +
                                    ", not an object");
    return false;
  }
  type = value->get<std::string>();
  return true;
}

/// A boolean member; `fallback` when absent or null, required without one.
static bool readBool(const Json &json, const char *key,
                     std::optional<bool> fallback, const std::string &where,
                     bool &out, std::string &error) {
  const Json *value = jsonFind(json, key);
  if (!value || value->is_null()) {
    if (!fallback) {
      error = where + "." + key + " is missing (true or false)";
      return false;
    }
    out = *fallback;
    return true;
  }
  if (!value->is_boolean()) {
    error = where + "." + key + " is " + jsonKindName(*value) +
            ", not true or false";
    return false;
  }
  out = value->get<bool>();
  return true;
}

/// A required string member.
static bool readString(const Json &json, const char *key,
                       const std::string &where, std::string &out,
                       std::string &error) {
  const Json *value = jsonFind(json, key);
  if (!value || !value->is_string()) {
    error = where + "." + key + " is " +
            (value ? std::string(jsonKindName(*value)) + ", not a string"
                   : std::string("missing"));
    return false;
  }
  out = value->get<std::string>();
  return true;
}

bool onlyMembers(const Json &json, std::initializer_list<std::string_view> allowed,
                 const std::string &where, const std::string &what,
                 std::string &error) {
  std::string unknown;
  if (jsonOnlyMembers(json, allowed, unknown))
    return true;
  std::string list;
  for (std::string_view name : allowed)
    list += (list.empty() ? "" : ", ") + std::string(name);
  error = where + " has an unknown member " + quote(unknown) + " (" + what +
          " has " + list + ")";
  return false;
}

bool loadPattern(const Json *json, const std::string &where, Regex &regex,
                 std::string &error) {
  std::string message;
  if (json && json->is_object() && json->size() == 1) {
    const Json *text = jsonFind(*json, "String");
    const Json *pattern = jsonFind(*json, "Regex");
    if (text && text->is_string()) {
      // An empty string matches nothing (Hugging Face), so no regex at all.
      if (text->get_ref<const std::string &>().empty())
        return true;
      if (regex.compileLiteral(text->get<std::string>(), message))
        return true;
    } else if (pattern && pattern->is_string()) {
      if (regex.compile(pattern->get<std::string>(), message))
        return true;
      error = where + ".pattern.Regex " +
              quote(pattern->get_ref<const std::string &>()) + ": " + message;
      return false;
    }
  }
  if (message.empty())
    message = "must be {\"String\": ...} or {\"Regex\": ...}";
  error = where + ".pattern " + message;
  return false;
}

/// Every match of `regex` in `text` and the gaps between them, in order, as
/// (begin, end, isMatch); an invalid regex (an empty String pattern) has no
/// matches.
static void findSpans(const Regex &regex, std::string_view text,
                      SplitScratch::Stage &scratch, bool &regexFailed,
                      std::vector<std::pair<size_t, size_t>> &spans,
                      std::vector<bool> &isMatch) {
  spans.clear();
  isMatch.clear();
  size_t previous = 0;
  if (regex.isValid() && !text.empty()) {
    bool ok = regex.forEachMatch(text, *scratch.match, [&](size_t b, size_t e) {
      if (b != previous) {
        spans.emplace_back(previous, b);
        isMatch.push_back(false);
      }
      spans.emplace_back(b, e);
      isMatch.push_back(true);
      previous = e;
    });
    regexFailed |= !ok;
  }
  if (previous != text.size() || text.empty()) {
    spans.emplace_back(previous, text.size());
    isMatch.push_back(false);
  }
}

enum class SplitBehavior {
  Removed,
  Isolated,
  MergedWithPrevious,
  MergedWithNext,
  Contiguous
};

/// Applies a Split behaviour to the spans of `findSpans` (tokenizers'
/// NormalizedString::split) and emits the non-empty kept pieces of `text`.
static void emitSplit(std::string_view text, bool atStart,
                      const std::vector<std::pair<size_t, size_t>> &spans,
                      std::vector<bool> isMatch, SplitBehavior behavior,
                      bool invert, PieceSink &emit) {
  if (invert)
    isMatch.flip();
  struct Out {
    size_t begin, end;
    bool removed;
  };
  std::vector<Out> out;
  out.reserve(spans.size());
  bool previous = false;
  switch (behavior) {
  case SplitBehavior::Removed:
  case SplitBehavior::Isolated:
    for (size_t i = 0; i < spans.size(); ++i)
      out.push_back({spans[i].first, spans[i].second,
                     behavior == SplitBehavior::Removed && isMatch[i]});
    break;
  case SplitBehavior::MergedWithPrevious:
    for (size_t i = 0; i < spans.size(); ++i) {
      if (isMatch[i] && !previous && !out.empty())
        out.back().end = spans[i].second;
      else
        out.push_back({spans[i].first, spans[i].second, false});
      previous = isMatch[i];
    }
    break;
  case SplitBehavior::MergedWithNext:
    for (size_t i = spans.size(); i-- > 0;) {
      if (isMatch[i] && !previous && !out.empty())
        out.back().begin = spans[i].first;
      else
        out.push_back({spans[i].first, spans[i].second, false});
      previous = isMatch[i];
    }
    std::reverse(out.begin(), out.end());
    break;
  case SplitBehavior::Contiguous:
    for (size_t i = 0; i < spans.size(); ++i) {
      if (isMatch[i] == previous && !out.empty())
        out.back().end = spans[i].second;
      else
        out.push_back({spans[i].first, spans[i].second, false});
      previous = isMatch[i];
    }
    break;
  }
  for (const Out &piece : out)
    if (!piece.removed && piece.end > piece.begin)
      emit(text.substr(piece.begin, piece.end - piece.begin),
           atStart && piece.begin == 0);
}

//===----------------------------------------------------------------------===//
// Normalizers
//===----------------------------------------------------------------------===//

namespace {

class PrependNormalizer : public NormalizerStep {
public:
  explicit PrependNormalizer(std::string prefix) : prefix(std::move(prefix)) {}
  void apply(std::string &text, SplitScratch::Stage &, bool &) const override {
    if (!text.empty())
      text.insert(0, prefix);
  }

private:
  std::string prefix;
};

class ReplaceNormalizer : public NormalizerStep {
public:
  ReplaceNormalizer(Regex pattern, std::string content)
      : pattern(std::move(pattern)), content(std::move(content)) {}
  void apply(std::string &text, SplitScratch::Stage &scratch,
             bool &regexFailed) const override {
    if (!pattern.isValid())
      return;
    std::string &out = scratch.text;
    out.clear();
    size_t previous = 0;
    bool ok = pattern.forEachMatch(text, *scratch.match, [&](size_t b, size_t e) {
      out.append(text, previous, b - previous);
      out.append(content);
      previous = e;
    });
    regexFailed |= !ok;
    out.append(text, previous, std::string::npos);
    text.swap(out);
  }
  const Regex *regex() const override { return &pattern; }

private:
  Regex pattern;
  std::string content;
};

/// NFC, NFD, NFKC or NFKD by utf8proc's tables.
class UnicodeFormNormalizer : public NormalizerStep {
public:
  explicit UnicodeFormNormalizer(utf8proc_option_t options)
      : options(options) {}
  void apply(std::string &text, SplitScratch::Stage &scratch,
             bool &) const override {
    // ASCII characters are the same in every form and never join the
    // character before them, so the text is normalized a run of non-ASCII
    // characters at a time, each with the ASCII character before it (which
    // may start a composition: "e" + U+0301).
    auto skip = [&](size_t at, bool ascii) {
      while (at < text.size() &&
             (static_cast<unsigned char>(text[at]) < 0x80) == ascii)
        ++at;
      return at;
    };
    size_t run = skip(0, true);
    if (run == text.size())
      return;
    std::string &out = scratch.text;
    out.clear();
    size_t done = 0; // text[0, done) is in `out`
    while (run < text.size()) {
      size_t begin = run > done ? run - 1 : run;
      size_t end = skip(run, false);
      out.append(text, done, begin - done);
      normalizeRun(std::string_view(text).substr(begin, end - begin),
                   scratch.codePoints, out);
      done = end;
      run = skip(end, true);
    }
    out.append(text, done, std::string::npos);
    text.swap(out);
  }

private:
  /// Appends the normalized `run` (valid UTF-8) to `out`: utf8proc_map's
  /// steps into `buffer`, which is kept between calls. Decompose (the first
  /// call may only size the buffer), then compose and re-encode as UTF-8 in
  /// place, which writes a NUL after the text (the + 1).
  void normalizeRun(std::string_view run, std::vector<int32_t> &buffer,
                    std::string &out) const {
    auto input = reinterpret_cast<const utf8proc_uint8_t *>(run.data());
    auto length = static_cast<utf8proc_ssize_t>(run.size());
    utf8proc_ssize_t count = 0;
    for (int pass = 0; pass < 2; ++pass) {
      count = utf8proc_decompose(input, length, buffer.data(),
                                 static_cast<utf8proc_ssize_t>(buffer.size()),
                                 options);
      if (count >= 0 && static_cast<size_t>(count) < buffer.size())
        break;
      buffer.resize(static_cast<size_t>(std::max<utf8proc_ssize_t>(count, 0)) +
                    1);
    }
    utf8proc_ssize_t bytes =
        count < 0 ? count : utf8proc_reencode(buffer.data(), count, options);
    if (bytes < 0) { // Not reached: the text is valid UTF-8.
      out.append(run);
      return;
    }
    out.append(reinterpret_cast<const char *>(buffer.data()),
               static_cast<size_t>(bytes));
  }

  utf8proc_option_t options;
};

/// Each character mapped by Rust's char::to_lowercase, as Hugging Face's
/// NormalizedString::lowercase does: no context, so a final capital sigma
/// becomes σ, not ς.
class LowercaseNormalizer : public NormalizerStep {
public:
  void apply(std::string &text, SplitScratch::Stage &scratch,
             bool &) const override {
    std::string &out = scratch.text;
    out.clear();
    for (size_t i = 0; i < text.size();) {
      unsigned char lead = static_cast<unsigned char>(text[i]);
      if (lead < 0x80) {
        out += static_cast<char>(lead >= 'A' && lead <= 'Z' ? lead + 32 : lead);
        ++i;
        continue;
      }
      uint32_t cp = decodeUtf8(text, i);
      i += utf8CharLength(lead);
      // utf8proc has the simple (one character) mappings; the full mapping
      // Rust uses differs only for U+0130 (SpecialCasing: "i" + U+0307).
      if (cp == 0x130)
        out += "i\xCC\x87";
      else
        appendUtf8(out, static_cast<uint32_t>(utf8proc_tolower(
                            static_cast<utf8proc_int32_t>(cp))));
    }
    text.swap(out);
  }
};

/// Leading and/or trailing whitespace (char::is_whitespace) removed.
class StripNormalizer : public NormalizerStep {
public:
  StripNormalizer(bool left, bool right) : left(left), right(right) {}
  void apply(std::string &text, SplitScratch::Stage &, bool &) const override {
    size_t end = text.size();
    if (right)
      while (end > 0) {
        size_t at = previousCharStart(text, end);
        if (!isUnicodeWhitespace(decodeUtf8(text, at)))
          break;
        end = at;
      }
    size_t begin = 0;
    if (left)
      while (begin < end && isUnicodeWhitespace(decodeUtf8(text, begin)))
        begin += utf8CharLength(static_cast<unsigned char>(text[begin]));
    text.erase(end);
    text.erase(0, begin);
  }

private:
  bool left, right;
};

} // namespace

bool Normalizer::loadStep(const Json &json, const std::string &where,
                          std::string &error) {
  std::string type;
  if (!readType(json, where, type, error))
    return false;
  if (type == "Sequence") {
    if (!onlyMembers(json, {"type", "normalizers"}, where, "a Sequence", error))
      return false;
    const Json *list = jsonFind(json, "normalizers");
    if (!list || !list->is_array()) {
      error = where + ".normalizers is missing or not an array";
      return false;
    }
    for (size_t i = 0; i < list->size(); ++i)
      if (!loadStep((*list)[i], where + format(".normalizers[%zu]", i), error))
        return false;
    return true;
  }
  if (type == "Prepend") {
    if (!onlyMembers(json, {"type", "prepend"}, where, "a Prepend", error))
      return false;
    std::string prefix;
    if (!readString(json, "prepend", where, prefix, error))
      return false;
    steps.push_back(std::make_unique<PrependNormalizer>(std::move(prefix)));
    return true;
  }
  if (type == "Replace") {
    Regex pattern;
    std::string content;
    if (!onlyMembers(json, {"type", "pattern", "content"}, where, "a Replace",
                     error) ||
        !loadPattern(jsonFind(json, "pattern"), where, pattern, error) ||
        !readString(json, "content", where, content, error))
      return false;
    steps.push_back(
        std::make_unique<ReplaceNormalizer>(std::move(pattern), std::move(content)));
    return true;
  }
  // Unicode normalization forms: canonical or compatibility decomposition,
  // composed again or not.
  static const std::pair<const char *, int> forms[] = {
      {"NFC", UTF8PROC_COMPOSE},
      {"NFD", UTF8PROC_DECOMPOSE},
      {"NFKC", UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
      {"NFKD", UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
  };
  for (const auto &[name, options] : forms)
    if (type == name) {
      if (!onlyMembers(json, {"type"}, where, "an " + type, error))
        return false;
      steps.push_back(std::make_unique<UnicodeFormNormalizer>(
          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options)));
      return true;
    }
  if (type == "Lowercase") {
    if (!onlyMembers(json, {"type"}, where, "a Lowercase", error))
      return false;
    steps.push_back(std::make_unique<LowercaseNormalizer>());
    return true;
  }
  if (type == "Strip") {
    bool left, right;
    if (!onlyMembers(json, {"type", "strip_left", "strip_right"}, where,
                     "a Strip", error) ||
        !readBool(json, "strip_left", std::nullopt, where, left, error) ||
        !readBool(json, "strip_right", std::nullopt, where, right, error))
      return false;
    steps.push_back(std::make_unique<StripNormalizer>(left, right));
    return true;
  }
  error = where + " type " + quote(type) +
          " is not supported (supported: Sequence, Prepend, Replace, NFC, "
          "NFD, NFKC, NFKD, Lowercase, Strip)";
  return false;
}

bool Normalizer::load(const Json &json, std::string &error) {
  steps.clear();
  return json.is_null() || loadStep(json, "normalizer", error);
}

void Normalizer::prepareScratch(SplitScratch &scratch) const {
  scratch.normalizer.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    if (const Regex *regex = steps[i]->regex(); regex && regex->isValid())
      scratch.normalizer[i].match = std::make_unique<Regex::Scratch>(*regex);
}

void Normalizer::apply(std::string &text, SplitScratch &scratch) const {
  for (size_t i = 0; i < steps.size(); ++i)
    steps[i]->apply(text, scratch.normalizer[i], scratch.regexFailed);
}

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

namespace {

/// Appends the byte-level characters of `bytes` to `out`.
void mapBytes(std::string_view bytes, std::string &out) {
  out.clear();
  for (unsigned char b : bytes)
    out.append(byteLevelChar(b));
}

class ByteLevelStage : public PreTokenizerStage {
public:
  ByteLevelStage(bool addPrefixSpace, bool useRegex)
      : addPrefixSpace(addPrefixSpace) {
    if (useRegex) {
      std::string error;
      bool ok = pattern.compile(kGpt2Pattern, error);
      (void)ok; // A fixed, tested pattern.
    }
  }

  void split(std::string_view piece, bool atStart, SplitScratch::Stage &scratch,
             bool &regexFailed, PieceSink &emit) const override {
    std::string_view text = piece;
    if (addPrefixSpace && (text.empty() || text.front() != ' ')) {
      scratch.text.assign(" ");
      scratch.text.append(piece);
      text = scratch.text;
    }
    if (!pattern.isValid()) {
      mapBytes(text, scratch.piece);
      if (!scratch.piece.empty())
        emit(scratch.piece, atStart);
      return;
    }
    // Isolated: every match and every gap is a piece (the pattern leaves no
    // gaps, but a match-limit failure could).
    size_t previous = 0;
    auto piece2 = [&](size_t b, size_t e) {
      mapBytes(text.substr(b, e - b), scratch.piece);
      emit(scratch.piece, atStart && b == 0);
    };
    bool ok = pattern.forEachMatch(text, *scratch.match, [&](size_t b, size_t e) {
      if (b > previous)
        piece2(previous, b);
      if (e > b)
        piece2(b, e);
      previous = e;
    });
    regexFailed |= !ok;
    if (previous < text.size())
      piece2(previous, text.size());
  }
  const Regex *regex() const override { return &pattern; }

private:
  bool addPrefixSpace;
  Regex pattern;
};

class MetaspaceStage : public PreTokenizerStage {
public:
  enum class Prepend { Always, First, Never };
  MetaspaceStage(std::string replacement, Prepend prepend, bool split)
      : replacement(std::move(replacement)), prepend(prepend),
        splitPieces(split) {}

  void split(std::string_view piece, bool atStart, SplitScratch::Stage &scratch,
             bool &, PieceSink &emit) const override {
    std::string &text = scratch.text;
    text.clear();
    for (char c : piece) {
      if (c == ' ')
        text.append(replacement);
      else
        text += c;
    }
    bool startsWith = text.compare(0, replacement.size(), replacement) == 0;
    if (!startsWith && (prepend == Prepend::Always ||
                        (prepend == Prepend::First && atStart)))
      text.insert(0, replacement);
    if (!splitPieces) {
      if (!text.empty())
        emit(text, atStart);
      return;
    }
    // Split on the replacement, each occurrence starting a piece
    // (MergedWithNext).
    std::vector<std::pair<size_t, size_t>> &spans = scratch.spans;
    std::vector<bool> isMatch;
    spans.clear();
    size_t previous = 0;
    for (size_t at = text.find(replacement); at != std::string::npos;
         at = text.find(replacement, at + replacement.size())) {
      if (at != previous) {
        spans.emplace_back(previous, at);
        isMatch.push_back(false);
      }
      spans.emplace_back(at, at + replacement.size());
      isMatch.push_back(true);
      previous = at + replacement.size();
    }
    if (previous != text.size() || text.empty()) {
      spans.emplace_back(previous, text.size());
      isMatch.push_back(false);
    }
    emitSplit(text, atStart, spans, isMatch, SplitBehavior::MergedWithNext,
              false, emit);
  }

private:
  std::string replacement;
  Prepend prepend;
  bool splitPieces;
};

class SplitStage : public PreTokenizerStage {
public:
  SplitStage(Regex pattern, SplitBehavior behavior, bool invert)
      : pattern(std::move(pattern)), behavior(behavior), invert(invert) {}

  void split(std::string_view piece, bool atStart, SplitScratch::Stage &scratch,
             bool &regexFailed, PieceSink &emit) const override {
    std::vector<bool> isMatch;
    findSpans(pattern, piece, scratch, regexFailed, scratch.spans, isMatch);
    emitSplit(piece, atStart, scratch.spans, std::move(isMatch), behavior,
              invert, emit);
  }
  const Regex *regex() const override { return &pattern; }

private:
  Regex pattern;
  SplitBehavior behavior;
  bool invert;
};

/// Hands each piece of stage `next - 1` on to stage `next`.
class NextStage final : public PieceSink {
public:
  NextStage(const std::function<void(size_t, std::string_view, bool)> &run,
            size_t next)
      : run(run), next(next) {}
  void operator()(std::string_view piece, bool atStart) override {
    run(next, piece, atStart);
  }

private:
  const std::function<void(size_t, std::string_view, bool)> &run;
  size_t next;
};

} // namespace

bool PreTokenizer::loadStage(const Json &json, const std::string &where,
                             std::string &error) {
  std::string type;
  if (!readType(json, where, type, error))
    return false;
  if (type == "Sequence") {
    if (!onlyMembers(json, {"type", "pretokenizers"}, where, "a Sequence",
                     error))
      return false;
    const Json *list = jsonFind(json, "pretokenizers");
    if (!list || !list->is_array()) {
      error = where + ".pretokenizers is missing or not an array";
      return false;
    }
    for (size_t i = 0; i < list->size(); ++i)
      if (!loadStage((*list)[i], where + format(".pretokenizers[%zu]", i),
                     error))
        return false;
    return true;
  }
  if (type == "ByteLevel") {
    bool addPrefixSpace, useRegex;
    if (!onlyMembers(json, {"type", "add_prefix_space", "trim_offsets", "use_regex"},
                     where, "a ByteLevel", error) ||
        !readBool(json, "add_prefix_space", true, where, addPrefixSpace,
                  error) ||
        !readBool(json, "use_regex", true, where, useRegex, error))
      return false;
    stages.push_back(std::make_unique<ByteLevelStage>(addPrefixSpace, useRegex));
    return true;
  }
  if (type == "Metaspace") {
    std::string replacement;
    if (!onlyMembers(json,
                     {"type", "replacement", "prepend_scheme", "split",
                      "add_prefix_space", "str_rep"},
                     where, "a Metaspace", error) ||
        !readString(json, "replacement", where, replacement, error))
      return false;
    if (findInvalidUtf8(replacement) != std::string::npos ||
        replacement.empty() ||
        utf8SequenceLength(replacement, 0) != replacement.size()) {
      error = where + ".replacement must be one character";
      return false;
    }
    MetaspaceStage::Prepend prepend;
    const Json *scheme = jsonFind(json, "prepend_scheme");
    if (scheme && !scheme->is_null()) {
      std::string name = scheme->is_string() ? scheme->get<std::string>() : "";
      if (name == "always")
        prepend = MetaspaceStage::Prepend::Always;
      else if (name == "first")
        prepend = MetaspaceStage::Prepend::First;
      else if (name == "never")
        prepend = MetaspaceStage::Prepend::Never;
      else {
        error = where + ".prepend_scheme must be \"always\", \"first\" or "
                        "\"never\"";
        return false;
      }
    } else {
      // Files written before prepend_scheme existed say add_prefix_space.
      bool add;
      if (!readBool(json, "add_prefix_space", true, where, add, error))
        return false;
      prepend = add ? MetaspaceStage::Prepend::Always
                    : MetaspaceStage::Prepend::Never;
    }
    bool split;
    if (!readBool(json, "split", true, where, split, error))
      return false;
    stages.push_back(
        std::make_unique<MetaspaceStage>(std::move(replacement), prepend, split));
    return true;
  }
  if (type == "Split") {
    Regex pattern;
    if (!onlyMembers(json, {"type", "pattern", "behavior", "invert"}, where,
                     "a Split", error) ||
        !loadPattern(jsonFind(json, "pattern"), where, pattern, error))
      return false;
    std::string behaviorName;
    if (!readString(json, "behavior", where, behaviorName, error))
      return false;
    static const std::pair<const char *, SplitBehavior> behaviors[] = {
        {"Removed", SplitBehavior::Removed},
        {"Isolated", SplitBehavior::Isolated},
        {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
        {"MergedWithNext", SplitBehavior::MergedWithNext},
        {"Contiguous", SplitBehavior::Contiguous},
    };
    const SplitBehavior *behavior = nullptr;
    for (const auto &[name, value] : behaviors)
      if (behaviorName == name)
        behavior = &value;
    if (!behavior) {
      error = where + ".behavior " + quote(behaviorName) +
              " is not one of Removed, Isolated, MergedWithPrevious, "
              "MergedWithNext, Contiguous";
      return false;
    }
    bool invert;
    if (!readBool(json, "invert", false, where, invert, error))
      return false;
    stages.push_back(
        std::make_unique<SplitStage>(std::move(pattern), *behavior, invert));
    return true;
  }
  error = where + " type " + quote(type) +
          " is not supported (supported: Sequence, ByteLevel, Metaspace, "
          "Split)";
  return false;
}

bool PreTokenizer::load(const Json &json, std::string &error) {
  stages.clear();
  return json.is_null() || loadStage(json, "pre_tokenizer", error);
}

void PreTokenizer::prepareScratch(SplitScratch &scratch) const {
  scratch.pre.resize(stages.size());
  for (size_t i = 0; i < stages.size(); ++i)
    if (const Regex *regex = stages[i]->regex(); regex && regex->isValid())
      scratch.pre[i].match = std::make_unique<Regex::Scratch>(*regex);
}

void PreTokenizer::run(std::string_view section, bool atStart,
                       SplitScratch &scratch, PieceSink &emit) const {
  std::function<void(size_t, std::string_view, bool)> runFrom =
      [&](size_t stage, std::string_view piece, bool start) {
        if (stage == stages.size()) {
          emit(piece, start);
          return;
        }
        NextStage next(runFrom, stage + 1);
        stages[stage]->split(piece, start, scratch.pre[stage],
                             scratch.regexFailed, next);
      };
  if (!section.empty())
    runFrom(0, section, atStart);
}

} // namespace attnrt
