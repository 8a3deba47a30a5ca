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
#include <vector>

namespace attnrt {

class DecoderStep {
public:
  virtual ~DecoderStep() = default;
  virtual void apply(std::vector<std::string> &tokens) const = 0;
};

class Decoder {
public:
  /// Reads tokenizer.json's "decoder" (null: join with spaces).
  bool load(const Json &json, std::string &error);
  /// Replaces `out` with the text of `tokens` (which it consumes).
  void decode(std::vector<std::string> &tokens, std::string &out) const;

private:
  bool loadStep(const Json &json, const std::string &where,
                std::string &error);
  std::vector<std::unique_ptr<DecoderStep>> steps;
  bool present = false;
};

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_DECODERS_H
