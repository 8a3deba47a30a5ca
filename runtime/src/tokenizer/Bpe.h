//===- Bpe.h - the byte-pair-encoding model of tokenizer.json --*- C++ -*-===//
//
// Hugging Face's `BPE` model: a word (one pre-tokenized piece) is split into
// characters, each mapped to its vocabulary id (or to `<0xNN>` byte pieces
// with byte_fallback, or to the unknown token, fused when fuse_unk), and then
// adjacent pairs are merged lowest rank first, leftmost first among equal
// ranks, with a priority queue, exactly as tokenizers' Word::merge_all does.
// With ignore_merges a word that is itself in the vocabulary is one token.
// Results are cached per word (words up to 256 bytes, up to 100,000 words),
// shared between threads.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_BPE_H
#define ATTNRT_TOKENIZER_BPE_H

#include "Json.h"
#include "tokenizer/StringMap.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnrt {

class BpeModel {
public:
  /// Reads tokenizer.json's "model" object. Errors name the key, the merge
  /// index or the piece: "model.merges[12]: 'ab' is not in the vocabulary".
  bool load(const Json &model, std::string &error);

  /// Appends the ids of `word` to `out`. `scratch` is per thread.
  struct Scratch;
  void encodeWord(std::string_view word, Scratch &scratch,
                  std::vector<int32_t> &out) const;

  /// One past the largest id of the vocabulary.
  int32_t idLimit() const { return static_cast<int32_t>(pieces.size()); }
  /// The piece of `id`, or nullptr when no piece has that id.
  const std::string *piece(int32_t id) const {
    return id >= 0 && id < idLimit() && present[id] ? &pieces[id] : nullptr;
  }
  /// The id of `piece`, or -1.
  int32_t find(std::string_view piece) const { return vocab.find(piece); }

  struct Scratch {
    struct Symbol {
      int32_t id;
      int32_t prev, next; // -1 at the ends
      bool removed;       // merged into its left neighbour
    };
    struct Merge {
      uint32_t rank;
      uint32_t pos;
      int32_t id;          // the merged piece
      int32_t left, right; // the pair as queued
    };
    std::vector<Symbol> symbols;
    std::vector<Merge> heap;
    std::vector<int32_t> ids;
    std::string key;
  };

private:
  void mergeWord(std::string_view word, Scratch &scratch,
                 std::vector<int32_t> &out) const;
  /// (rank, merged id) of the pair (left, right), or nullopt.
  bool findMerge(int32_t left, int32_t right, uint32_t &rank,
                 int32_t &merged) const;

  std::vector<std::string> pieces; // By id; "" where present[id] is false.
  std::vector<bool> present;
  StringMap vocab;
  PairMap merges; // (left << 32 | right) -> (rank << 32 | merged id)
  int32_t unkId = -1;
  int32_t byteIds[256];
  bool byteFallback = false;
  bool fuseUnk = false;
  bool ignoreMerges = false;
  std::string prefix, suffix; // continuing_subword_prefix, end_of_word_suffix

  static constexpr size_t kMaxCachedWordBytes = 256;
  static constexpr size_t kMaxCachedWords = 100000;
  mutable std::shared_mutex cacheMutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;
};

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_BPE_H
