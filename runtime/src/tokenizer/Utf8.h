//===- Utf8.h - UTF-8 validation, iteration and lossy decoding --*- C++ -*-===//
//
// The tokenizer's text is UTF-8 throughout. Prompts are validated once on the
// way in (an invalid byte is an error naming its offset); decoded token bytes
// are made valid the way Hugging Face does (Rust's String::from_utf8_lossy:
// each maximal ill-formed subsequence becomes one U+FFFD).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_UTF8_H
#define ATTNRT_TOKENIZER_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnrt {

/// U+FFFD REPLACEMENT CHARACTER.
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

/// The length of the well-formed UTF-8 sequence at text[pos] (1 to 4), or 0
/// when the bytes there are not one (overlong forms, surrogates, code points
/// past U+10FFFF and truncated sequences are not).
size_t utf8SequenceLength(std::string_view text, size_t pos);

/// The byte offset of the first ill-formed sequence, or npos when `text` is
/// valid UTF-8.
size_t findInvalidUtf8(std::string_view text);

/// The length of the character starting at text[pos] of valid UTF-8, from its
/// lead byte alone.
inline size_t utf8CharLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/// The start of the character before text[pos] (pos > 0) of valid UTF-8.
inline size_t previousCharStart(std::string_view text, size_t pos) {
  do
    --pos;
  while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
  return pos;
}

/// Appends the UTF-8 encoding of code point `cp` (at most U+10FFFF).
void appendUtf8(std::string &out, uint32_t cp);

/// The code point of the valid character at text[pos].
uint32_t decodeUtf8(std::string_view text, size_t pos);

/// Appends `bytes` to `out` with every maximal ill-formed subsequence
/// replaced by U+FFFD (String::from_utf8_lossy).
void appendUtf8Lossy(std::string &out, std::string_view bytes);

/// Unicode White_Space (Rust's char::is_whitespace, which the added tokens'
/// lstrip/rstrip and the Strip normalizer use).
inline bool isUnicodeWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_UTF8_H
