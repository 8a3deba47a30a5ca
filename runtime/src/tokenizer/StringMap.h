//===- StringMap.h - the tokenizer's lookup tables -------------*- C++ -*-===//
//
// The vocabulary is looked up once per character, per byte-fallback byte and
// per cached word: with std::unordered_map<std::string, ...> under C++17 each
// lookup would build a std::string. This open-addressing table is keyed by
// string_view into strings the owner keeps alive (the id-to-piece table), and
// never changes after it is built, so any number of threads may read it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_STRINGMAP_H
#define ATTNRT_TOKENIZER_STRINGMAP_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace attnrt {

/// 64-bit FNV-1a folded with a final mix: fast on short pieces, spreads well.
inline uint64_t hashBytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  h ^= h >> 32;
  return h * 0x9e3779b97f4a7c15ull;
}

class StringMap {
public:
  /// Sizes the table for `count` keys (load factor at most 1/2).
  void reserve(size_t count) {
    size_t capacity = 16;
    while (capacity < 2 * count)
      capacity *= 2;
    slots.assign(capacity, Slot());
    used = 0;
  }

  /// Inserts `key` (which must outlive the map) -> `value`; returns false and
  /// leaves the map unchanged when the key is present.
  bool insert(std::string_view key, int32_t value) {
    if (slots.empty() || 2 * (used + 1) > slots.size())
      grow();
    uint64_t h = hashBytes(key);
    size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot &slot = slots[i];
      if (slot.value < 0) {
        slot = Slot{h, key, value};
        ++used;
        return true;
      }
      if (slot.hash == h && slot.key == key)
        return false;
    }
  }

  /// The value of `key`, or -1.
  int32_t find(std::string_view key) const {
    if (slots.empty())
      return -1;
    uint64_t h = hashBytes(key);
    size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot &slot = slots[i];
      if (slot.value < 0)
        return -1;
      if (slot.hash == h && slot.key == key)
        return slot.value;
    }
  }

  size_t size() const { return used; }

private:
  struct Slot {
    uint64_t hash = 0;
    std::string_view key;
    int32_t value = -1; // -1: empty.
  };

  void grow() {
    std::vector<Slot> old = std::move(slots);
    reserve(old.empty() ? 8 : old.size());
    for (const Slot &slot : old)
      if (slot.value >= 0)
        insert(slot.key, slot.value);
  }

  std::vector<Slot> slots;
  size_t used = 0;
};

/// The merge table: (left id, right id) -> (rank, merged id), looked up for
/// every adjacent pair of every word. Open addressing over 64-bit keys
/// (std::unordered_map's node chasing was half the time of a merge).
class PairMap {
public:
  void reserve(size_t count) {
    size_t capacity = 16;
    while (capacity < 2 * count)
      capacity *= 2;
    keys.assign(capacity, kEmpty);
    values.assign(capacity, 0);
    shift = 64 - __builtin_ctzll(capacity);
    used = 0;
  }

  /// Inserts or overwrites.
  void set(uint64_t key, uint64_t value) {
    if (keys.empty() || 2 * (used + 1) > keys.size())
      grow();
    size_t mask = keys.size() - 1;
    for (size_t i = slot(key);; i = (i + 1) & mask) {
      if (keys[i] == key) {
        values[i] = value;
        return;
      }
      if (keys[i] == kEmpty) {
        keys[i] = key;
        values[i] = value;
        ++used;
        return;
      }
    }
  }

  bool find(uint64_t key, uint64_t &value) const {
    if (keys.empty())
      return false;
    size_t mask = keys.size() - 1;
    for (size_t i = slot(key);; i = (i + 1) & mask) {
      if (keys[i] == key) {
        value = values[i];
        return true;
      }
      if (keys[i] == kEmpty)
        return false;
    }
  }

private:
  // No pair of valid ids (each below 2^31) has all bits set.
  static constexpr uint64_t kEmpty = ~uint64_t(0);

  size_t slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> shift);
  }

  void grow() {
    std::vector<uint64_t> oldKeys = std::move(keys), oldValues = std::move(values);
    reserve(oldKeys.empty() ? 8 : oldKeys.size());
    for (size_t i = 0; i < oldKeys.size(); ++i)
      if (oldKeys[i] != kEmpty)
        set(oldKeys[i], oldValues[i]);
  }

  std::vector<uint64_t> keys, values;
  unsigned shift = 60;
  size_t used = 0;
};

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_STRINGMAP_H
