//===- TokenizerApi.cpp - the C API of the tokenizer ----------------------===//

#include "attnrt/attnrt.h"

#include "Support.h"
#include "tokenizer/Tokenizer.h"

#include <algorithm>
#include <cstring>

using namespace attnrt;

struct attnrt_tokenizer {
  std::unique_ptr<Tokenizer> impl;
};

struct attnrt_detokenizer {
  explicit attnrt_detokenizer(const Tokenizer &tokenizer, bool skipSpecial)
      : stream(tokenizer, skipSpecial) {}
  DecodeStream stream;
  std::string text;
};

static int fail(int code, const std::string &message, char *error,
                size_t errorSize) {
  copyError(message, error, errorSize);
  return code;
}

extern "C" {

attnrt_tokenizer *attnrt_tokenizer_load(const char *model_dir, char *error,
                                        size_t error_size) {
  return guarded<attnrt_tokenizer *>(
      error, error_size, nullptr, [&]() -> attnrt_tokenizer * {
        if (!model_dir) {
          copyError("attnrt_tokenizer_load: null folder", error, error_size);
          return nullptr;
        }
        std::string message;
        auto impl = Tokenizer::loadDirectory(model_dir, message);
        if (!impl) {
          copyError(message, error, error_size);
          return nullptr;
        }
        auto *tokenizer = new attnrt_tokenizer();
        tokenizer->impl = std::move(impl);
        return tokenizer;
      });
}

void attnrt_tokenizer_free(attnrt_tokenizer *tokenizer) { delete tokenizer; }

int attnrt_tokenize(const attnrt_tokenizer *tokenizer, const char *text,
                    size_t length, int flags, int32_t *tokens,
                    int64_t max_tokens, int64_t *n_tokens, char *error,
                    size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!tokenizer || (!text && length > 0) || !n_tokens || max_tokens < 0 ||
        (max_tokens > 0 && !tokens) ||
        (flags & ~ATTNRT_TOKENIZE_DEFAULT) != 0)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_tokenize: null tokenizer, text, tokens or n_tokens, "
                  "or unknown flags",
                  error, error_size);
    unsigned mode = 0;
    if (flags & ATTNRT_TOKENIZE_ADD_SPECIAL)
      mode |= Tokenizer::AddSpecial;
    if (flags & ATTNRT_TOKENIZE_PARSE_SPECIAL)
      mode |= Tokenizer::ParseSpecial;
    std::vector<int32_t> ids;
    std::string message;
    if (!tokenizer->impl->encode(std::string_view(text ? text : "", length),
                                 mode, ids, message))
      return fail(ATTNRT_ERROR_ARGUMENT, message, error, error_size);
    *n_tokens = static_cast<int64_t>(ids.size());
    size_t copied = std::min(ids.size(), static_cast<size_t>(max_tokens));
    if (copied)
      std::memcpy(tokens, ids.data(), copied * sizeof(int32_t));
    return ATTNRT_OK;
  });
}

int attnrt_detokenize(const attnrt_tokenizer *tokenizer, const int32_t *tokens,
                      int64_t n, int skip_special, char *text, size_t text_size,
                      size_t *length, char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!tokenizer || (!tokens && n > 0) || n < 0 || !length ||
        (text_size > 0 && !text))
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_detokenize: null tokenizer, tokens, text or length, "
                  "or n < 0",
                  error, error_size);
    std::string decoded, message;
    if (!tokenizer->impl->decode(tokens, static_cast<size_t>(n),
                                 skip_special != 0, decoded, message))
      return fail(ATTNRT_ERROR_TOKEN, message, error, error_size);
    *length = decoded.size();
    if (text_size > 0) {
      size_t copied = std::min(decoded.size(), text_size - 1);
      std::memcpy(text, decoded.data(), copied);
      text[copied] = '\0';
    }
    return ATTNRT_OK;
  });
}

int64_t attnrt_tokenizer_vocab_size(const attnrt_tokenizer *tokenizer) {
  return tokenizer ? tokenizer->impl->idLimit() : 0;
}

int32_t attnrt_tokenizer_bos(const attnrt_tokenizer *tokenizer) {
  return tokenizer ? tokenizer->impl->bosId() : -1;
}

int64_t attnrt_tokenizer_eos(const attnrt_tokenizer *tokenizer, int32_t *ids,
                             int64_t max) {
  if (!tokenizer)
    return 0;
  const std::vector<int32_t> &eos = tokenizer->impl->eosIds();
  for (int64_t i = 0; ids && i < max && i < static_cast<int64_t>(eos.size());
       ++i)
    ids[i] = eos[static_cast<size_t>(i)];
  return static_cast<int64_t>(eos.size());
}

int attnrt_tokenizer_is_eos(const attnrt_tokenizer *tokenizer, int32_t token) {
  if (!tokenizer)
    return 0;
  const std::vector<int32_t> &eos = tokenizer->impl->eosIds();
  return std::find(eos.begin(), eos.end(), token) != eos.end();
}

const char *attnrt_tokenizer_piece(const attnrt_tokenizer *tokenizer,
                                   int32_t token) {
  if (!tokenizer)
    return nullptr;
  const std::string *piece = tokenizer->impl->piece(token);
  return piece ? piece->c_str() : nullptr;
}

attnrt_detokenizer *attnrt_detokenizer_create(const attnrt_tokenizer *tokenizer,
                                              int skip_special, char *error,
                                              size_t error_size) {
  return guarded<attnrt_detokenizer *>(
      error, error_size, nullptr, [&]() -> attnrt_detokenizer * {
        if (!tokenizer) {
          copyError("attnrt_detokenizer_create: null tokenizer", error,
                    error_size);
          return nullptr;
        }
        return new attnrt_detokenizer(*tokenizer->impl, skip_special != 0);
      });
}

void attnrt_detokenizer_free(attnrt_detokenizer *detokenizer) {
  delete detokenizer;
}

const char *attnrt_detokenizer_step(attnrt_detokenizer *detokenizer,
                                    int32_t token, size_t *length, char *error,
                                    size_t error_size) {
  return guarded<const char *>(
      error, error_size, nullptr, [&]() -> const char * {
        if (!detokenizer) {
          copyError("attnrt_detokenizer_step: null detokenizer", error,
                    error_size);
          return nullptr;
        }
        detokenizer->text.clear();
        std::string message;
        if (!detokenizer->stream.step(token, detokenizer->text, message)) {
          copyError(message, error, error_size);
          return nullptr;
        }
        if (length)
          *length = detokenizer->text.size();
        return detokenizer->text.c_str();
      });
}

const char *attnrt_detokenizer_flush(attnrt_detokenizer *detokenizer,
                                     size_t *length, char *error,
                                     size_t error_size) {
  return guarded<const char *>(
      error, error_size, nullptr, [&]() -> const char * {
        if (!detokenizer) {
          copyError("attnrt_detokenizer_flush: null detokenizer", error,
                    error_size);
          return nullptr;
        }
        detokenizer->text.clear();
        std::string message;
        if (!detokenizer->stream.flush(detokenizer->text, message)) {
          copyError(message, error, error_size);
          return nullptr;
        }
        if (length)
          *length = detokenizer->text.size();
        return detokenizer->text.c_str();
      });
}

} // extern "C"
