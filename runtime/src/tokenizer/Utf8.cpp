//===- Utf8.cpp - UTF-8 validation, iteration and lossy decoding ----------===//

#include "tokenizer/Utf8.h"

namespace attnrt {

/// How many bytes of a sequence starting at text[pos] are a valid prefix of a
/// well-formed sequence, and whether the sequence is complete. Follows the
/// table of well-formed sequences (Unicode 15, table 3-7).
static size_t wellFormedPrefix(std::string_view text, size_t pos,
                               bool &complete) {
  auto byte = [&](size_t i) -> int {
    return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i])
                                 : -1;
  };
  complete = false;
  int b0 = byte(0);
  if (b0 < 0)
    return 0;
  if (b0 < 0x80) {
    complete = true;
    return 1;
  }
  size_t length;
  int lo = 0x80, hi = 0xBF; // The range of the second byte.
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0)
      lo = 0xA0;
    if (b0 == 0xED)
      hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0)
      lo = 0x90;
    if (b0 == 0xF4)
      hi = 0x8F;
  } else {
    return 0; // Not a lead byte.
  }
  for (size_t i = 1; i < length; ++i) {
    int b = byte(i);
    int low = i == 1 ? lo : 0x80, high = i == 1 ? hi : 0xBF;
    if (b < low || b > high)
      return i;
  }
  complete = true;
  return length;
}

size_t utf8SequenceLength(std::string_view text, size_t pos) {
  bool complete;
  size_t n = wellFormedPrefix(text, pos, complete);
  return complete ? n : 0;
}

size_t findInvalidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs are the common case: skip them eight bytes at a time.
    while (pos + 8 <= text.size()) {
      uint64_t word;
      __builtin_memcpy(&word, text.data() + pos, 8);
      if (word & 0x8080808080808080ull)
        break;
      pos += 8;
    }
    if (pos >= text.size())
      break;
    size_t n = utf8SequenceLength(text, pos);
    if (n == 0)
      return pos;
    pos += n;
  }
  return std::string_view::npos;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t decodeUtf8(std::string_view text, size_t pos) {
  auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>(text[pos + i]));
  };
  uint32_t b0 = b(0);
  if (b0 < 0x80)
    return b0;
  if (b0 < 0xE0)
    return (b0 & 0x1F) << 6 | (b(1) & 0x3F);
  if (b0 < 0xF0)
    return (b0 & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
  return (b0 & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 |
         (b(3) & 0x3F);
}

void appendUtf8Lossy(std::string &out, std::string_view bytes) {
  size_t pos = 0, run = 0; // [run, pos) is valid and not yet copied.
  while (pos < bytes.size()) {
    bool complete;
    size_t n = wellFormedPrefix(bytes, pos, complete);
    if (complete) {
      pos += n;
      continue;
    }
    out.append(bytes.data() + run, pos - run);
    out.append(kReplacementChar);
    pos += n == 0 ? 1 : n; // A maximal subpart is at least one byte.
    run = pos;
  }
  out.append(bytes.data() + run, pos - run);
}

} // namespace attnrt
