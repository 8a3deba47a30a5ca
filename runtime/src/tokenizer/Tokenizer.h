//===- Tokenizer.h - Hugging Face tokenizers in the runtime ----*- C++ -*-===//
//
// A tokenizer.json (with tokenizer_config.json and generation_config.json
// when present) loaded into the pipeline Hugging Face tokenizers runs:
//
//   text -> added tokens (matched first, never split)
//        -> normalizer -> pre-tokenizer -> BPE model -> post-processor (BOS/EOS)
//   ids  -> pieces -> decoder -> text
//
// Anything outside what is implemented (another model, normalizer,
// pre-tokenizer, decoder or post-processor type, truncation or padding) is an
// error naming it, never ignored. A Tokenizer is immutable after load and
// safe to share between threads.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_TOKENIZER_H
#define ATTNRT_TOKENIZER_TOKENIZER_H

#include "tokenizer/Bpe.h"
#include "tokenizer/Decoders.h"
#include "tokenizer/TextSplit.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

/// The text of the files a tokenizer is read from. Empty strings stand for
/// absent files (only tokenizer.json is required). `*Name` prefix errors.
struct TokenizerSources {
  std::string tokenizerJson, tokenizerJsonName = "tokenizer.json";
  std::string tokenizerConfig, tokenizerConfigName = "tokenizer_config.json";
  std::string generationConfig,
      generationConfigName = "generation_config.json";
};

struct AddedToken {
  int32_t id = -1;
  std::string content;
  /// What a normalized token is matched as: its content through the
  /// normalizer (Hugging Face's AddedVocabulary).
  std::string normalizedContent;
  bool singleWord = false, lstrip = false, rstrip = false;
  bool normalized = false, special = false;
};

/// Leftmost-longest matching of added tokens (a byte trie).
class AddedTokenMatcher {
public:
  void build(const std::vector<AddedToken> &tokens, bool normalized,
             bool includeSpecial);
  bool empty() const { return nodes.size() <= 1; }
  /// The longest token starting at text[pos]: its index in the token list
  /// and length, or -1.
  int32_t longestAt(std::string_view text, size_t pos, size_t &length) const;

private:
  struct Node {
    int32_t token = -1;
    std::vector<std::pair<unsigned char, int32_t>> children; // sorted
  };
  std::vector<Node> nodes;
  bool firstByte[256] = {};
};

class Tokenizer {
public:
  /// Loads the files of a model folder (tokenizer.json required), or the
  /// tokenizer metadata of a GGUF file (a path ending in ".gguf").
  static std::unique_ptr<Tokenizer> loadDirectory(const std::string &dir,
                                                  std::string &error);
  static std::unique_ptr<Tokenizer> load(const TokenizerSources &sources,
                                         std::string &error);

  enum EncodeFlags : unsigned {
    /// The post-processor's tokens (BOS, EOS), as add_special_tokens=True.
    AddSpecial = 1,
    /// Special added tokens written in the text are matched (Hugging Face's
    /// default); without it they are ordinary text.
    ParseSpecial = 2,
  };
  /// Appends the ids of `text` to `ids`. Fails on invalid UTF-8 (naming the
  /// byte offset) or on a regex engine failure.
  bool encode(std::string_view text, unsigned flags,
              std::vector<int32_t> &ids, std::string &error) const;

  /// The text of `ids`. Fails on an id that is not in the vocabulary.
  /// transformers' clean-up of spaces before punctuation follows
  /// tokenizer_config.json's clean_up_tokenization_spaces unless `cleanUp`
  /// is false.
  bool decode(const int32_t *ids, size_t count, bool skipSpecial,
              std::string &text, std::string &error,
              bool cleanUp = true) const {
    return decodeWindow(ids, count, skipSpecial, DecodeWindow(), text, error,
                        cleanUp);
  }
  /// decode of one window of a longer sequence (DecodeStream).
  bool decodeWindow(const int32_t *ids, size_t count, bool skipSpecial,
                    const DecodeWindow &window, std::string &text,
                    std::string &error, bool cleanUp = true) const;
  /// Bytes at the end of a window's text that tokens after it could still
  /// change (a Strip at the very end, the clean-up of " ." and the like).
  size_t undecidedSuffix(std::string_view text) const;
  /// Whether the decoder joins `id` with a neighbouring byte piece.
  bool joinsNeighbours(int32_t id) const;

  /// One past the largest id (model vocabulary and added tokens).
  int32_t idLimit() const { return limit; }
  /// The piece (token string) of `id`, or nullptr.
  const std::string *piece(int32_t id) const;
  bool isSpecial(int32_t id) const;
  /// The id of a token string (added tokens first), or -1.
  int32_t tokenId(std::string_view token) const;

  int32_t bosId() const { return bos; }
  /// The ids that end generation: generation_config.json's eos_token_id
  /// (a number or a list) when given, else the tokenizer's eos_token.
  const std::vector<int32_t> &eosIds() const { return eos; }
  /// Ids the post-processor puts before and after the text.
  const std::vector<int32_t> &prefixIds() const { return prefix; }
  const std::vector<int32_t> &suffixIds() const { return suffix; }

private:
  bool loadAll(const TokenizerSources &sources, std::string &error);
  bool loadAddedTokens(const Json &root, const std::string &where,
                       std::string &error);
  bool loadPostProcessor(const Json &json, const std::string &where,
                         std::string &error);
  bool applyConfig(const Json &config, const std::string &where,
                   std::string &error);
  bool applyGenerationConfig(const Json &config, const std::string &where,
                             std::string &error);

  struct Scratch;
  void encodeSection(std::string_view text, bool atStart, unsigned flags,
                     Scratch &scratch, std::vector<int32_t> &ids) const;
  void encodeNormalized(std::string_view text, bool atStart, unsigned flags,
                        Scratch &scratch, std::vector<int32_t> &ids) const;
  /// Splits `text` around the added tokens of `matcher`, calling
  /// onText(begin, end) and onToken(index) in order.
  template <typename OnText, typename OnToken>
  void splitAdded(std::string_view text, const AddedTokenMatcher &matcher,
                  OnText &&onText, OnToken &&onToken) const;

  BpeModel model;
  Normalizer normalizer;
  PreTokenizer preTokenizer;
  Decoder decoder;
  std::vector<AddedToken> added;
  StringMap addedByContent;                  // content -> index into added
  std::vector<int32_t> addedById;            // id -> index into added, or -1
  AddedTokenMatcher rawMatcher, rawMatcherNoSpecial;   // normalized: false
  AddedTokenMatcher normMatcher, normMatcherNoSpecial; // normalized: true
  std::vector<int32_t> prefix, suffix;
  bool templateFromPostProcessor = false;
  int32_t limit = 0;
  int32_t bos = -1;
  std::vector<int32_t> eos;
  bool cleanUpSpaces = false;
};

/// Incremental decoding for streaming output (Hugging Face's DecodeStream):
/// each step decodes a short window of recent ids and returns only the new
/// text, and nothing while the text so far ends in an incomplete UTF-8
/// sequence (a U+FFFD at its end), so a character split across tokens is
/// printed whole once its last byte arrives.
///
/// The stream decodes a window of the ids since the last cut and prints what
/// the window adds. A window is cut (the next starts empty) only where the
/// whole decode splits exactly: its text is complete UTF-8, nothing at its
/// end is undecided, it does not end inside a run of byte pieces, and at the
/// start of the sequence it has printed something (a leading Strip is
/// settled). So the pieces add up to decode() of all the ids, with one
/// exception Hugging Face shares: a run of byte pieces that is valid UTF-8
/// and then turns invalid cannot take back what was printed.
class DecodeStream {
public:
  DecodeStream(const Tokenizer &tokenizer, bool skipSpecial)
      : tokenizer(tokenizer), skipSpecial(skipSpecial) {}
  /// Appends the new text after `id` to `out` (maybe nothing).
  bool step(int32_t id, std::string &out, std::string &error);
  /// Appends what is still held back (an incomplete sequence at the end of
  /// generation becomes U+FFFD) and starts over.
  bool flush(std::string &out, std::string &error);
  void reset();

private:
  /// Appends text[printed.size(), end) to `out`.
  void print(size_t end, std::string &out);

  const Tokenizer &tokenizer;
  bool skipSpecial;
  std::vector<int32_t> window;
  bool atStart = true;
  std::string printed; // the part of the window's text already printed
  std::string text;
};

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_TOKENIZER_H
