//===- Decoders.h - token pieces back to text ------------------*- C++ -*-===//
//
// tokenizer.json's "decoder", applied as Hugging Face tokenizers applies it:
// each step maps the list of token strings to a new list (decode_chain), and
// the result is their concatenation. Steps: ByteLevel (byte-level characters
// back to bytes, then lossy UTF-8 over the whole run), ByteFallback (runs of
// <0xNN> pieces to text; an invalid run becomes one U+FFFD per byte), Fuse,
// Strip, Replace, Metaspace, Sequence. Without a decoder the pieces are
// joined with spaces, as Hugging Face does.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_DECODERS_H
#define ATTNRT_TOKENIZER_DECODERS_H

#include "Json.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

/// Where the decoded tokens sit in the whole sequence: streaming decodes a
/// window of it at a time, and the steps whose output depends on the start
/// or the end of the text (Strip, Metaspace's first token, the spaces
/// between tokens without a decoder) must act only where the whole sequence
/// starts or ends.
struct DecodeWindow {
  bool continuation = false; ///< tokens precede the window
  bool final = true;         ///< no tokens follow it
};

class DecoderStep {
public:
  virtual ~DecoderStep() = default;
  /// `fused` is true once an earlier step merged the tokens into one piece:
  /// then the first piece starts the window, not a token.
  virtual void apply(std::vector<std::string> &tokens,
                     const DecodeWindow &window, bool &fused) const = 0;
  /// Bytes at the end of `text` that a later token could still change.
  virtual size_t undecidedSuffix(std::string_view) const { return 0; }
  virtual bool isByteFallback() const { return false; }
};

/// The byte of a byte-fallback piece ("<0x41>" -> 0x41), else -1.
int bytePieceValue(std::string_view token);

class Decoder {
public:
  /// Reads tokenizer.json's "decoder" (null: join with spaces).
  bool load(const Json &json, std::string &error);
  /// Replaces `out` with the text of `tokens` (which it consumes).
  void decode(std::vector<std::string> &tokens, std::string &out,
              const DecodeWindow &window = DecodeWindow()) const;
  /// Bytes at the end of a window's text that later tokens could still
  /// change (trailing characters a Strip removes at the very end).
  size_t undecidedSuffix(std::string_view text) const;
  /// Whether runs of <0xNN> pieces are joined (a window must not end inside
  /// one).
  bool joinsBytePieces() const;

private:
  bool loadStep(const Json &json, const std::string &where,
                std::string &error);
  std::vector<std::unique_ptr<DecoderStep>> steps;
  bool present = false;
};

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_DECODERS_H
