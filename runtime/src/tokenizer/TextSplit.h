//===- TextSplit.h - normalizers and pre-tokenizers ------------*- C++ -*-===//
//
// What happens to text between the added tokens and the BPE model, as in
// Hugging Face tokenizers (offsets are not tracked: only ids are needed):
//
//  - a normalizer rewrites a whole section: Prepend, Replace, the Unicode
//    normalization forms NFC, NFD, NFKC, NFKD (utf8proc), Lowercase, Strip,
//    Sequence;
//  - a pre-tokenizer cuts a section into pieces and may rewrite them:
//    ByteLevel (GPT-2's split regex, or none, then bytes to the printable
//    characters of GPT-2's byte-to-unicode table), Metaspace (spaces to U+2581,
//    a prepended U+2581, an optional split before each), Split (a regex or a
//    string, with its behaviour and invert flag), Sequence.
//
// Pre-tokenizers are stages of one chain, run depth first: each stage hands
// every piece it makes to the next stage at once, so no list of all pieces is
// built. A piece carries whether it begins at offset 0 of the original text,
// which Metaspace's prepend_scheme "first" needs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_TEXTSPLIT_H
#define ATTNRT_TOKENIZER_TEXTSPLIT_H

#include "Json.h"
#include "tokenizer/Regex.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

/// A callable taking (piece, atStart), by reference, for the stages.
class PieceSink {
public:
  virtual void operator()(std::string_view piece, bool atStart) = 0;

protected:
  ~PieceSink() = default;
};

/// Per-call working memory of the normalizer and the pre-tokenizer chain:
/// regex match data and buffers for the text a step rewrites, one set per
/// step. `regexFailed` records a PCRE2 failure (match limit), which the
/// caller reports.
struct SplitScratch {
  struct Stage {
    std::unique_ptr<Regex::Scratch> match;
    std::string text, piece;
    std::vector<std::pair<size_t, size_t>> spans;
    std::vector<int32_t> codePoints; // Unicode normalization
  };
  std::vector<Stage> normalizer, pre;
  bool regexFailed = false;
};

//===----------------------------------------------------------------------===//
// Normalizers
//===----------------------------------------------------------------------===//

class NormalizerStep {
public:
  virtual ~NormalizerStep() = default;
  /// Rewrites `text` in place.
  virtual void apply(std::string &text, SplitScratch::Stage &scratch,
                     bool &regexFailed) const = 0;
  /// Steps that hold a regex need match data.
  virtual const Regex *regex() const { return nullptr; }
};

class Normalizer {
public:
  /// Reads tokenizer.json's "normalizer" (null: none).
  bool load(const Json &json, std::string &error);
  bool empty() const { return steps.empty(); }
  void apply(std::string &text, SplitScratch &scratch) const;
  void prepareScratch(SplitScratch &scratch) const;

private:
  bool loadStep(const Json &json, const std::string &where,
                std::string &error);
  std::vector<std::unique_ptr<NormalizerStep>> steps;
};

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

class PreTokenizerStage {
public:
  virtual ~PreTokenizerStage() = default;
  /// Cuts `piece` and calls `emit` for every non-empty result.
  virtual void split(std::string_view piece, bool atStart,
                     SplitScratch::Stage &scratch, bool &regexFailed,
                     PieceSink &emit) const = 0;
  virtual const Regex *regex() const { return nullptr; }
};

class PreTokenizer {
public:
  /// Reads tokenizer.json's "pre_tokenizer" (null: the whole section is one
  /// piece).
  bool load(const Json &json, std::string &error);
  /// Runs the chain on one section.
  void run(std::string_view section, bool atStart, SplitScratch &scratch,
           PieceSink &emit) const;
  void prepareScratch(SplitScratch &scratch) const;

private:
  bool loadStage(const Json &json, const std::string &where,
                 std::string &error);
  std::vector<std::unique_ptr<PreTokenizerStage>> stages;
};

/// GPT-2's byte-to-unicode table: the printable character standing for each
/// byte, as UTF-8.
const std::string &byteLevelChar(unsigned char byte);
/// The byte a byte-level character stands for, or -1.
int byteLevelByte(uint32_t codePoint);

/// Fails with "<where> has an unknown member 'k' (a T has a, b, c)" when
/// `json` has a member not in `allowed` (`what` names the component).
bool onlyMembers(const Json &json, std::initializer_list<std::string_view> allowed,
                 const std::string &where, const std::string &what,
                 std::string &error);

/// Reads a {"String": s} or {"Regex": r} pattern into `regex`.
bool loadPattern(const Json *json, const std::string &where, Regex &regex,
                 std::string &error);

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_TEXTSPLIT_H
