//===- StringMap.h - string to id lookup without allocation ----*- C++ -*-===//
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

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_STRINGMAP_H
