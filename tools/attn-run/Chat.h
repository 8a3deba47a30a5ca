//===- Chat.h - attn-run --chat: an interactive conversation ----*- C++ -*-===//
//
// attn-run MODEL_DIR --chat: user turns from stdin (one line each; EOF ends
// the conversation), the whole conversation rendered with the model's chat
// template each turn, the reply streamed to stdout. The session's KV cache
// is kept between turns: only the tokens past the longest common prefix of
// the previous turn's tokens are prefilled (docs/runtime.md, "attn-run
// --chat").
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_RUN_CHAT_H
#define ATTN_TOOLS_ATTN_RUN_CHAT_H

#include "attnrt/attnrt.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace attn::tools {

struct ChatOptions {
  /// A first system message, when not empty.
  std::string system;
  /// Tokens per reply; -1: until the end of the turn or the context.
  int64_t maxTokens = -1;
  /// Print each turn's prompt, cached and prefilled token counts to stderr.
  bool verbose = false;
  bool ignoreEos = false;
};

/// Runs the conversation; returns the exit code (errors are printed as the
/// tool's one-line errors).
int runChat(const char *tool, attnrt_model *model,
            const attnrt_tokenizer *tokenizer,
            const attnrt_chat_template *chatTemplate, attnrt_sampler *sampler,
            const ChatOptions &options, FILE *in);

} // namespace attn::tools

#endif // ATTN_TOOLS_ATTN_RUN_CHAT_H
