//===- Bpe.cpp - the byte-pair-encoding model of tokenizer.json -----------===//

#include "tokenizer/Bpe.h"

#include "Support.h"
#include "tokenizer/TextSplit.h"
#include "tokenizer/Utf8.h"

#include <algorithm>
#include <mutex>

namespace attnrt {

/// Reads an optional member that must be a boolean (null means absent).
static bool readFlag(const Json &object, const char *key, bool &out,
                     std::string &error) {
  const Json *value = jsonFind(object, key);
  if (!value || value->is_null())
    return true;
  if (!value->is_boolean()) {
    error = format("model.%s is %s, not true or false", key,
                   jsonKindName(*value));
    return false;
  }
  out = value->get<bool>();
  return true;
}

/// Reads an optional member that must be a string (null means absent).
static bool readText(const Json &object, const char *key, std::string &out,
                     std::string &error) {
  const Json *value = jsonFind(object, key);
  if (!value || value->is_null())
    return true;
  if (!value->is_string()) {
    error = format("model.%s is %s, not a string", key, jsonKindName(*value));
    return false;
  }
  out = value->get<std::string>();
  return true;
}

bool BpeModel::load(const Json &model, std::string &error) {
  if (!onlyMembers(model,
                   {"type", "dropout", "unk_token", "continuing_subword_prefix",
                    "end_of_word_suffix", "fuse_unk", "byte_fallback",
                    "ignore_merges", "vocab", "merges"},
                   "model", "a BPE model", error))
    return false;
  const Json *vocabJson = jsonFind(model, "vocab");
  if (!vocabJson || !vocabJson->is_object()) {
    error = vocabJson ? format("model.vocab is %s, not an object of piece: id",
                               jsonKindName(*vocabJson))
                      : "model.vocab is missing";
    return false;
  }
  // Ids index a table: bound them by the vocabulary's size so a hostile file
  // cannot ask for a huge one. Real vocabularies are dense.
  size_t count = vocabJson->size();
  int64_t limit = 2 * static_cast<int64_t>(count) + 1024;
  int64_t maxId = -1;
  for (const auto &[name, value] : vocabJson->items()) {
    int64_t id;
    if (!jsonInteger(value, id) || id < 0 || id >= limit) {
      error = "model.vocab: the id of " + quote(name) + " is " +
              (jsonInteger(value, id)
                   ? format("%lld, out of range (a vocabulary of %zu pieces "
                            "has ids in [0, %lld))",
                            static_cast<long long>(id), count,
                            static_cast<long long>(limit))
                   : std::string(jsonKindName(value)) + ", not an integer");
      return false;
    }
    maxId = std::max(maxId, id);
  }
  pieces.assign(static_cast<size_t>(maxId + 1), std::string());
  present.assign(static_cast<size_t>(maxId + 1), false);
  for (const auto &[name, value] : vocabJson->items()) {
    size_t id = value.get<size_t>();
    if (present[id]) {
      error = format("model.vocab: id %zu is given to both ", id) +
              quote(pieces[id]) + " and " + quote(name);
      return false;
    }
    if (name.empty()) {
      error = format("model.vocab: id %zu has an empty piece", id);
      return false;
    }
    pieces[id] = name;
    present[id] = true;
  }
  // Keys point into `pieces`, which no longer changes.
  vocab.reserve(count);
  for (size_t id = 0; id < pieces.size(); ++id)
    if (present[id])
      vocab.insert(pieces[id], static_cast<int32_t>(id));

  if (!readFlag(model, "byte_fallback", byteFallback, error) ||
      !readFlag(model, "fuse_unk", fuseUnk, error) ||
      !readFlag(model, "ignore_merges", ignoreMerges, error) ||
      !readText(model, "continuing_subword_prefix", prefix, error) ||
      !readText(model, "end_of_word_suffix", suffix, error))
    return false;
  if (const Json *dropout = jsonFind(model, "dropout");
      dropout && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    error = "model.dropout is " + dropout->dump() +
            ": BPE dropout (random merges, a training-time augmentation) is "
            "not supported; it must be null";
    return false;
  }
  std::string unk;
  if (!readText(model, "unk_token", unk, error))
    return false;
  if (!unk.empty()) {
    unkId = vocab.find(unk);
    if (unkId < 0) {
      error = "model.unk_token " + quote(unk) + " is not in the vocabulary";
      return false;
    }
  }
  for (int b = 0; b < 256; ++b)
    byteIds[b] = vocab.find(format("<0x%02X>", b));

  const Json *mergesJson = jsonFind(model, "merges");
  if (!mergesJson || !mergesJson->is_array()) {
    error = mergesJson ? format("model.merges is %s, not an array",
                                jsonKindName(*mergesJson))
                       : "model.merges is missing";
    return false;
  }
  merges.reserve(mergesJson->size());
  std::string joined;
  uint32_t rank = 0;
  for (const Json &entry : *mergesJson) {
    std::string where = format("model.merges[%u]: ", rank);
    std::string_view left, right;
    std::string text;
    if (entry.is_string()) {
      // The legacy form "a b": exactly one space (pieces cannot hold one).
      text = entry.get<std::string>();
      size_t space = text.find(' ');
      if (space == std::string::npos ||
          text.find(' ', space + 1) != std::string::npos) {
        error = where + quote(text) +
                " is not two pieces separated by one space";
        return false;
      }
      left = std::string_view(text).substr(0, space);
      right = std::string_view(text).substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
               entry[1].is_string()) {
      left = entry[0].get_ref<const std::string &>();
      right = entry[1].get_ref<const std::string &>();
    } else {
      error = where + "is " + jsonKindName(entry) +
              ", not \"a b\" or [\"a\", \"b\"]";
      return false;
    }
    int32_t leftId = vocab.find(left), rightId = vocab.find(right);
    if (leftId < 0 || rightId < 0) {
      error = where + quote(leftId < 0 ? left : right) +
              " is not in the vocabulary";
      return false;
    }
    // Hugging Face drops the continuing-subword prefix of the right piece.
    if (!prefix.empty() && right.size() < prefix.size()) {
      error = where + quote(right) + " is shorter than the subword prefix " +
              quote(prefix);
      return false;
    }
    joined.assign(left);
    joined.append(right.substr(prefix.size()));
    int32_t mergedId = vocab.find(joined);
    if (mergedId < 0) {
      error = where + "the merged piece " + quote(joined) +
              " is not in the vocabulary";
      return false;
    }
    // A repeated pair keeps its last rank, as in Hugging Face (a map built
    // in file order).
    merges.set(static_cast<uint64_t>(leftId) << 32 | static_cast<uint32_t>(rightId),
               static_cast<uint64_t>(rank) << 32 | static_cast<uint32_t>(mergedId));
    ++rank;
  }
  return true;
}

bool BpeModel::findMerge(int32_t left, int32_t right, uint32_t &rank,
                         int32_t &merged) const {
  uint64_t value;
  if (!merges.find(static_cast<uint64_t>(left) << 32 |
                       static_cast<uint32_t>(right),
                   value))
    return false;
  rank = static_cast<uint32_t>(value >> 32);
  merged = static_cast<int32_t>(value & 0xFFFFFFFFu);
  return true;
}

void BpeModel::encodeWord(std::string_view word, Scratch &scratch,
                          std::vector<int32_t> &out) const {
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    scratch.key.assign(word);
    std::shared_lock<std::shared_mutex> lock(cacheMutex);
    auto it = cache.find(scratch.key);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  scratch.ids.clear();
  mergeWord(word, scratch, scratch.ids);
  out.insert(out.end(), scratch.ids.begin(), scratch.ids.end());
  if (cacheable) {
    std::unique_lock<std::shared_mutex> lock(cacheMutex);
    // Full: later words are merged every time, as Hugging Face does.
    if (cache.size() < kMaxCachedWords)
      cache.emplace(std::string(word), scratch.ids);
  }
}

void BpeModel::mergeWord(std::string_view word, Scratch &scratch,
                         std::vector<int32_t> &out) const {
  if (ignoreMerges) {
    int32_t id = vocab.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // Characters to symbols.
  auto &symbols = scratch.symbols;
  symbols.clear();
  auto add = [&](int32_t id) {
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1, false});
    if (index > 0)
      symbols[index - 1].next = index;
  };
  bool pendingUnk = false;
  std::string &key = scratch.key;
  for (size_t pos = 0; pos < word.size();) {
    size_t length = utf8CharLength(static_cast<unsigned char>(word[pos]));
    bool first = pos == 0, last = pos + length >= word.size();
    std::string_view character = word.substr(pos, length);
    pos += length;
    std::string_view lookup = character;
    if ((!first && !prefix.empty()) || (last && !suffix.empty())) {
      key.assign(first ? "" : prefix);
      key.append(character);
      if (last)
        key.append(suffix);
      lookup = key;
    }
    int32_t id = vocab.find(lookup);
    if (id >= 0) {
      if (pendingUnk)
        add(unkId);
      pendingUnk = false;
      add(id);
      continue;
    }
    if (byteFallback) {
      bool all = true;
      for (unsigned char b : lookup)
        all = all && byteIds[b] >= 0;
      if (all) {
        if (pendingUnk)
          add(unkId);
        pendingUnk = false;
        for (unsigned char b : lookup)
          add(byteIds[b]);
        continue;
      }
    }
    if (unkId >= 0) {
      if (pendingUnk && !fuseUnk)
        add(unkId);
      pendingUnk = true;
    }
    // Without an unknown token the character is dropped, as Hugging Face
    // does.
  }
  if (pendingUnk)
    add(unkId);

  // Merges, lowest rank first, then leftmost.
  auto &heap = scratch.heap;
  heap.clear();
  auto later = [](const Scratch::Merge &a, const Scratch::Merge &b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  auto push = [&](int32_t pos) {
    uint32_t rank;
    int32_t merged;
    int32_t next = symbols[pos].next;
    if (next >= 0 && findMerge(symbols[pos].id, symbols[next].id, rank, merged)) {
      heap.push_back({rank, static_cast<uint32_t>(pos), merged,
                      symbols[pos].id, symbols[next].id});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
    push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Scratch::Merge top = heap.back();
    heap.pop_back();
    Scratch::Symbol &left = symbols[top.pos];
    if (left.removed || left.next < 0)
      continue;
    // A queued pair is stale once either side has merged with a neighbour:
    // unless the pair is still the one queued, it must still merge into the
    // same piece (tokenizers' check, which the fast path implies).
    if (left.id != top.left || symbols[left.next].id != top.right) {
      uint32_t rank;
      int32_t merged;
      if (!findMerge(left.id, symbols[left.next].id, rank, merged) ||
          merged != top.id)
        continue;
    }
    Scratch::Symbol &right = symbols[left.next];
    left.id = top.id;
    right.removed = true;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = static_cast<int32_t>(top.pos);
    if (left.prev >= 0)
      push(left.prev);
    push(static_cast<int32_t>(top.pos));
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next)
    out.push_back(symbols[i].id);
}

} // namespace attnrt
