//===- ToolSupport.h - shared pieces of the runtime's command-line tools -===//
//
// Argument parsing and file helpers for the tools that sit on the runtime's
// C API (attn-run, attn-tokenize, attn-perplexity): one definition of what a
// number, a token list or a readable text file is, and one error format
// ("<tool>: error: ..." on stderr, exit code 1).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_TOOLSUPPORT_H
#define ATTN_TOOLS_TOOLSUPPORT_H

#include "attnrt/attnrt.h"

#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::tools {

/// Prints "<tool>: error: <message>" to stderr and returns 1.
int fail(const char *tool, const std::string &message);
/// Prints "<tool>: warning: <message>" to stderr.
void warn(const char *tool, const std::string &message);

/// A decimal integer with an optional leading '+', nothing else.
template <typename T> bool parseInteger(std::string_view text, T &value) {
  if (!text.empty() && text[0] == '+')
    text.remove_prefix(1);
  auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && result.ec == std::errc() &&
         result.ptr == text.data() + text.size();
}

/// A finite float.
bool parseFloat(std::string_view text, float &value);

/// "1,2,3" -> ids, each a decimal integer in [0, 2^31); `what` names the
/// option in errors ("--tokens").
bool parseTokenList(const std::string &text, const char *what,
                    std::vector<int32_t> &tokens, std::string &error);

/// The whole of a regular file.
bool readTextFile(const std::string &path, std::string &text,
                  std::string &error);

/// "1,2,3".
std::string joinTokens(const std::vector<int32_t> &tokens);

/// Encodes `text` with `flags`; errors are prefixed with `what` (the option
/// or file the text came from).
bool tokenize(const attnrt_tokenizer *tokenizer, std::string_view text,
              int flags, const std::string &what, std::vector<int32_t> &ids,
              std::string &error);

/// Decodes `ids` to text.
bool detokenize(const attnrt_tokenizer *tokenizer,
                const std::vector<int32_t> &ids, bool skipSpecial,
                std::string &text, std::string &error);

/// The --weight-format values attn-compile takes, for the tools' checks.
inline bool isWeightFormat(const std::string &name) {
  return name == "f32" || name == "bf16" || name == "q8_0" || name == "q4_0";
}
constexpr const char *kWeightFormatChoices = "f32, bf16, q8_0 or q4_0";
/// The --kv-format values attn-compile takes.
inline bool isKvFormat(const std::string &name) {
  return name == "f32" || name == "bf16" || name == "f16";
}
constexpr const char *kKvFormatChoices = "f32, bf16 or f16";

/// How a tool over a model folder compiles and runs it: the options every
/// such tool takes alike, each with a value (--compiler PATH, --cache-dir
/// DIR, --weight-format F, --head-format F, --kv-format F, --threads N).
/// Empty strings and 0 threads are the defaults.
struct FolderOptions {
  std::string compiler, cacheDir, weightFormat, headFormat, kvFormat;
  int64_t threads = 0;

  /// Whether `name` is one of the options above.
  static bool isOption(std::string_view name);
  /// Sets option `name` from `value`; false with the message for a bad value.
  bool parse(std::string_view name, const std::string &value, std::string &error);
};

/// A Hugging Face model folder through attnrt_model_load_dir (compiled on
/// first use) as `options` say; progress lines go to stderr as "<tool>:
/// ...". `inspect` asks for a library with the inspection entry points.
/// Threads are the caller's to set (attnrt_model_set_num_threads).
/// With a `group` of several ranks, one rank's library of the split
/// (attnrt_model_load_dir_parallel), whose progress only rank 0 prints.
attnrt_model *loadModelFolder(const char *tool, const std::string &dir,
                              int64_t context, const FolderOptions &options,
                              std::string &error, bool inspect = false,
                              const attnrt_communicator *group = nullptr);

/// Fails when the tokenizer has ids the model has no logits for.
bool checkTokenizerFits(const attnrt_tokenizer *tokenizer,
                        const attnrt_model *model, const std::string &dir,
                        std::string &error);

struct TokenizerDeleter {
  void operator()(attnrt_tokenizer *t) const { attnrt_tokenizer_free(t); }
};
using TokenizerPtr = std::unique_ptr<attnrt_tokenizer, TokenizerDeleter>;
struct ModelDeleter {
  void operator()(attnrt_model *m) const { attnrt_model_free(m); }
};
using ModelPtr = std::unique_ptr<attnrt_model, ModelDeleter>;
struct SessionDeleter {
  void operator()(attnrt_session *s) const { attnrt_session_free(s); }
};
using SessionPtr = std::unique_ptr<attnrt_session, SessionDeleter>;
struct SamplerDeleter {
  void operator()(attnrt_sampler *s) const { attnrt_sampler_free(s); }
};
using SamplerPtr = std::unique_ptr<attnrt_sampler, SamplerDeleter>;
struct DetokenizerDeleter {
  void operator()(attnrt_detokenizer *d) const { attnrt_detokenizer_free(d); }
};
using DetokenizerPtr = std::unique_ptr<attnrt_detokenizer, DetokenizerDeleter>;

} // namespace attn::tools

#endif // ATTN_TOOLS_TOOLSUPPORT_H
