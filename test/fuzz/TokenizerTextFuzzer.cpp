//===- TokenizerTextFuzzer.cpp - encode and decode on arbitrary bytes -----===//
//
// The input's first byte picks a built-in tokenizer (GPT-2 style byte-level
// or LLaMA style SentencePiece) and the flags; the rest is text. Encoding
// must reject invalid UTF-8 naming the first bad byte (found here by an
// independent check) and accept valid text; the ids must be in the
// vocabulary; the byte-level tokenizer must give the text back exactly and
// the SentencePiece one as its rules define; streaming the ids must add up
// to the decode. Then the same bytes read as token ids must decode to valid
// UTF-8, streamed or not.
//
//===----------------------------------------------------------------------===//

#include "TokenizerFuzzUtil.h"

using namespace attnrt;
using namespace attn::fuzz;

namespace {

/// The offset of the first byte that is not well-formed UTF-8, by a check
/// written apart from the runtime's (code point ranges, not the byte table).
size_t firstInvalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                                : (c >> 3) == 30               ? 4
                                                               : 0;
    if (n == 0 || i + n > s.size())
      return i;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      unsigned d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80)
        return i;
      cp = cp << 6 | (d & 0x3F);
    }
    static const uint32_t minimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < minimum[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n;
  }
  return std::string_view::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const auto byteLevel = loadFixed(byteLevelTokenizerJson());
  static const auto sentencePiece = loadFixed(sentencePieceTokenizerJson());
  ByteReader input(data, size);
  uint8_t mode = input.byte();
  bool useByteLevel = mode & 1;
  unsigned flags = (mode & 2 ? Tokenizer::AddSpecial : 0) |
                   (mode & 4 ? Tokenizer::ParseSpecial : 0);
  const Tokenizer &tokenizer = useByteLevel ? *byteLevel : *sentencePiece;
  std::string_view text = input.rest();

  std::vector<int32_t> ids;
  std::string error;
  bool ok = tokenizer.encode(text, flags, ids, error);
  size_t bad = firstInvalid(text);
  if (bad != std::string_view::npos) {
    FUZZ_CHECK(!ok && ids.empty(), "invalid UTF-8 at %zu was accepted", bad);
    FUZZ_CHECK(error == "invalid UTF-8 at byte " + std::to_string(bad) +
                            " of the text",
               "error for byte %zu: %s", bad, error.c_str());
  } else {
    FUZZ_CHECK(ok, "valid text rejected: %s", error.c_str());
    checkEncoded(tokenizer, ids);
    std::string decoded;
    FUZZ_CHECK(tokenizer.decode(ids.data(), ids.size(), true, decoded, error),
               "decode: %s", error.c_str());
    if (useByteLevel) {
      // Byte-level BPE loses nothing; special tokens come back as text when
      // not skipped.
      std::string withSpecial;
      FUZZ_CHECK(tokenizer.decode(ids.data(), ids.size(), false, withSpecial,
                                  error),
                 "decode: %s", error.c_str());
      FUZZ_CHECK(withSpecial == text, "byte-level round trip lost text");
    } else if (text.find("\xE2\x96\x81") == std::string_view::npos &&
               text.find("<s>") == std::string_view::npos) {
      // SentencePiece: spaces become U+2581 and back, byte fallback covers
      // every character, and the decoder strips the prepended space.
      FUZZ_CHECK(decoded == text, "SentencePiece round trip: %zu vs %zu bytes",
                 decoded.size(), text.size());
    }
  }

  // The input as token ids: any id sequence decodes to valid UTF-8.
  std::vector<int32_t> arbitrary;
  ByteReader reader(data, size);
  while (reader.remaining() >= 2)
    arbitrary.push_back(reader.value<uint16_t>() % tokenizer.idLimit());
  checkStream(tokenizer, arbitrary, false);
  return 0;
}
