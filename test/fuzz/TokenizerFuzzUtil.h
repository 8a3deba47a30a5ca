//===- TokenizerFuzzUtil.h - small tokenizers and checks for the fuzzers --===//
//
// Tokenizers small enough to rebuild in code, covering both BPE forms: a
// GPT-2 style byte-level one (every byte a piece, a few merges, a special
// token) and a LLaMA style SentencePiece one (Prepend/Replace normalizer,
// byte fallback, its decoder chain) — and the properties every loaded
// tokenizer must have on any text.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_FUZZ_TOKENIZERFUZZUTIL_H
#define ATTN_TEST_FUZZ_TOKENIZERFUZZUTIL_H

#include "FuzzUtil.h"

#include "Json.h"
#include "tokenizer/TextSplit.h"
#include "tokenizer/Tokenizer.h"
#include "tokenizer/Utf8.h"

#include <string>
#include <vector>

namespace attn::fuzz {

inline std::string byteLevelTokenizerJson() {
  using attnrt::Json;
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b)
    vocab[attnrt::byteLevelChar(static_cast<unsigned char>(b))] = b;
  const char *merges[] = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "i n",
                          "\xC4\xA0 a", "e r", "a n", "\xC4\xA0 \xC4\xA0"};
  Json mergeList = Json::array();
  int next = 256;
  for (const char *merge : merges) {
    std::string m = merge;
    size_t space = m.find(' ');
    std::string joined = m.substr(0, space) + m.substr(space + 1);
    if (!vocab.contains(joined))
      vocab[joined] = next++;
    mergeList.push_back(m);
  }
  vocab["<|endoftext|>"] = next;
  Json tokenizer = {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", next}, {"content", "<|endoftext|>"}, {"single_word", false},
         {"lstrip", false}, {"rstrip", false}, {"normalized", true},
         {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", mergeList}}}};
  return tokenizer.dump();
}

inline std::string sentencePieceTokenizerJson() {
  using attnrt::Json;
  Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  char piece[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(piece, sizeof(piece), "<0x%02X>", b);
    vocab[piece] = 3 + b;
  }
  int next = 259;
  const char *words[] = {"\xE2\x96\x81", "a", "b", "e", "t", "h",
                         "\xE2\x96\x81t", "he", "\xE2\x96\x81the", "\xC3\xA9"};
  for (const char *word : words)
    vocab[word] = next++;
  Json merges = {"\xE2\x96\x81 t", "h e", "\xE2\x96\x81t he"};
  Json tokenizer = {
      {"version", "1.0"},
      {"added_tokens",
       {{{"id", 1}, {"content", "<s>"}, {"single_word", false},
         {"lstrip", false}, {"rstrip", false}, {"normalized", false},
         {"special", true}}}},
      {"normalizer",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"},
           {"pattern", {{"String", " "}}},
           {"content", "\xE2\x96\x81"}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single",
         {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens",
         {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         {{{"type", "Replace"},
           {"pattern", {{"String", "\xE2\x96\x81"}}},
           {"content", " "}},
          {{"type", "ByteFallback"}},
          {{"type", "Fuse"}},
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", merges},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"fuse_unk", true}}}};
  return tokenizer.dump();
}

inline std::unique_ptr<attnrt::Tokenizer> loadFixed(const std::string &json) {
  attnrt::TokenizerSources sources;
  sources.tokenizerJson = json;
  std::string error;
  auto tokenizer = attnrt::Tokenizer::load(sources, error);
  FUZZ_CHECK(tokenizer, "the built-in tokenizer loads: %s", error.c_str());
  return tokenizer;
}

inline bool isValidUtf8(std::string_view text) {
  return attnrt::findInvalidUtf8(text) == std::string_view::npos;
}

/// Streams `ids` through a DecodeStream; the pieces must be valid UTF-8 and,
/// for `ids` that encode valid text, add up to the whole decode.
inline void checkStream(const attnrt::Tokenizer &tokenizer,
                        const std::vector<int32_t> &ids, bool mustAddUp) {
  attnrt::DecodeStream stream(tokenizer, false);
  std::string all, piece, error, whole;
  for (int32_t id : ids) {
    piece.clear();
    FUZZ_CHECK(stream.step(id, piece, error), "stream step: %s", error.c_str());
    all += piece;
  }
  piece.clear();
  FUZZ_CHECK(stream.flush(piece, error), "stream flush: %s", error.c_str());
  all += piece;
  FUZZ_CHECK(isValidUtf8(all), "streamed text is not valid UTF-8");
  FUZZ_CHECK(tokenizer.decode(ids.data(), ids.size(), false, whole, error),
             "decode: %s", error.c_str());
  FUZZ_CHECK(isValidUtf8(whole), "decoded text is not valid UTF-8");
  if (mustAddUp)
    FUZZ_CHECK(all == whole, "streamed %zu bytes, decoded %zu", all.size(),
               whole.size());
}

/// Every id an encode returns is in the vocabulary, and decodes.
inline void checkEncoded(const attnrt::Tokenizer &tokenizer,
                         const std::vector<int32_t> &ids) {
  for (int32_t id : ids)
    FUZZ_CHECK(id >= 0 && id < tokenizer.idLimit() && tokenizer.piece(id),
               "encode returned id %d outside the vocabulary", id);
  checkStream(tokenizer, ids, true);
}

} // namespace attn::fuzz

#endif // ATTN_TEST_FUZZ_TOKENIZERFUZZUTIL_H
