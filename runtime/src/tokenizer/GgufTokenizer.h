//===- GgufTokenizer.h - a GGUF file's tokenizer as tokenizer.json -*- C++ -*-===//
//
// The tokenizer.json and tokenizer_config.json a GGUF file's tokenizer.ggml.*
// metadata stands for, so the runtime's one tokenizer implementation reads
// it. llama.cpp's converter stores a byte-level BPE vocabulary
// ("tokenizer.ggml.model" = "gpt2") as its tokens by id, their types
// (control tokens are the special added tokens, user-defined ones the other
// added tokens), the merges, and the name of the pre-tokenizer
// ("tokenizer.ggml.pre"): each name stands for the normalizer,
// pre-tokenizer and merge rule of the family's own tokenizer.json, copied
// here from those files. A SentencePiece vocabulary ("llama") is its pieces,
// their scores and types; its merges are derived from the scores as
// transformers derives them from a tokenizer.model, and its normalizer and
// decoder are LLaMA-2's (or, without tokenizer.ggml.add_space_prefix,
// Gemma's). A model or pre-tokenizer name not in the table is an error
// naming it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TOKENIZER_GGUFTOKENIZER_H
#define ATTNRT_TOKENIZER_GGUFTOKENIZER_H

#include "Gguf.h"
#include "tokenizer/Tokenizer.h"

#include <string>

namespace attnrt {

/// Fills `sources` from `file`'s metadata. Errors name the file and key.
bool ggufTokenizerSources(const GgufFile &file, TokenizerSources &sources,
                          std::string &error);

/// The tokenizer_config.json of `file`'s metadata alone: bos_token and
/// eos_token as text, and chat_template from tokenizer.chat_template (what
/// a chat template reads; any tokenizer model).
bool ggufTokenizerConfig(const GgufFile &file, std::string &json,
                         std::string &error);

/// The tokenizer.ggml.pre name whose parts are exactly tokenizer.json's
/// `normalizer` and `pre_tokenizer` (JSON texts) and its model's
/// `ignore_merges`, or "" when no name stands for them (what a GGUF writer
/// records).
std::string ggufPreTokenizerName(const std::string &normalizer,
                                 const std::string &preTokenizer,
                                 bool ignoreMerges);

/// Whether tokenizer.json's `normalizer`, `pre_tokenizer` and `decoder`
/// (JSON texts) are those a SentencePiece vocabulary in GGUF stands for,
/// and if so whether they add the prefix space (what a GGUF writer records
/// as tokenizer.ggml.add_space_prefix).
bool ggufSentencePieceForm(const std::string &normalizer,
                           const std::string &preTokenizer,
                           const std::string &decoder, bool &addSpacePrefix);

} // namespace attnrt

#endif // ATTNRT_TOKENIZER_GGUFTOKENIZER_H
