//===- Chat.cpp - attn-run --chat: an interactive conversation ------------===//

#include "Chat.h"

#include "ToolSupport.h"

#include <cinttypes>
#include <unistd.h>
#include <vector>

namespace attn::tools {

namespace {

struct Turn {
  std::string role, content;
};

/// The conversation through the template, with the generation prompt.
bool render(const attnrt_chat_template *chatTemplate,
            const std::vector<Turn> &turns, std::string &text,
            std::string &error) {
  std::vector<attnrt_chat_message> messages;
  for (const Turn &turn : turns)
    messages.push_back({turn.role.c_str(), turn.content.c_str()});
  char message[1024];
  size_t length = 0;
  int64_t n = static_cast<int64_t>(messages.size());
  if (attnrt_chat_template_apply(chatTemplate, messages.data(), n, 1, nullptr,
                                 0, &length, message,
                                 sizeof message) != ATTNRT_OK) {
    error = message;
    return false;
  }
  text.assign(length + 1, '\0');
  attnrt_chat_template_apply(chatTemplate, messages.data(), n, 1, &text[0],
                             text.size(), &length, message, sizeof message);
  text.resize(length);
  return true;
}

} // namespace

int runChat(const char *tool, attnrt_model *model,
            const attnrt_tokenizer *tokenizer,
            const attnrt_chat_template *chatTemplate, attnrt_sampler *sampler,
            const ChatOptions &options, FILE *in) {
  char error[1024];
  SessionPtr session(attnrt_session_create(model, error, sizeof error));
  if (!session)
    return fail(tool, error);
  int64_t vocab = attnrt_model_vocab_size(model);
  int64_t maxSeq = attnrt_model_max_seq(model);
  std::vector<float> logits(static_cast<size_t>(vocab));
  std::vector<Turn> turns;
  if (!options.system.empty())
    turns.push_back({"system", options.system});
  // The tokens whose keys and values the session holds, in order.
  std::vector<int32_t> cached;
  bool interactive = isatty(fileno(in));
  std::string line, message;
  for (int turn = 1;; ++turn) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    line.clear();
    int c;
    while ((c = std::fgetc(in)) != EOF && c != '\n')
      line += static_cast<char>(c);
    if (c == EOF && line.empty())
      break;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    turns.push_back({"user", line});

    // The template writes the special tokens itself, as transformers'
    // apply_chat_template(tokenize=True) expects: no BOS added here.
    std::string prompt;
    std::vector<int32_t> tokens;
    if (!render(chatTemplate, turns, prompt, message) ||
        !tokenize(tokenizer, prompt, ATTNRT_TOKENIZE_PARSE_SPECIAL,
                  "the conversation", tokens, message))
      return fail(tool, message);
    int64_t n = static_cast<int64_t>(tokens.size());
    if (n >= maxSeq)
      return fail(tool, "the conversation is " + std::to_string(n) +
                            " tokens, the context holds " +
                            std::to_string(maxSeq) + " (--ctx)");
    // Reuse the longest common prefix of the cached tokens. The runtime
    // cannot drop positions from a session's KV cache, so when the new
    // tokens do not extend the cached ones (a template that rewrites an
    // earlier turn, or a reply that tokenizes differently as text), the
    // whole conversation is prefilled again. At least one token is
    // prefilled: its logits start the reply.
    size_t common = 0;
    while (common < cached.size() && common < tokens.size() &&
           cached[common] == tokens[common])
      ++common;
    bool reprefill = common < cached.size() || common == tokens.size();
    if (reprefill) {
      attnrt_session_reset(session.get());
      common = 0;
    }
    int64_t fresh = n - static_cast<int64_t>(common);
    if (attnrt_prefill(session.get(), tokens.data() + common, fresh,
                       logits.data(), 0, error, sizeof error) != ATTNRT_OK)
      return fail(tool, error);
    if (options.verbose)
      std::fprintf(stderr,
                   "chat: turn %d: %" PRId64 " tokens, %zu cached, %" PRId64
                   " prefilled%s\n",
                   turn, n, common, fresh,
                   reprefill && !cached.empty()
                       ? " (the conversation changed before the cached end: "
                         "prefilled again)"
                       : "");
    cached = tokens;

    // The reply: sampled until the end of the turn (an end-of-sequence
    // token of generation_config.json or tokenizer_config.json, where chat
    // models list their end-of-turn token), -n tokens or the context's end.
    DetokenizerPtr detokenizer(
        attnrt_detokenizer_create(tokenizer, 1, error, sizeof error));
    if (!detokenizer)
      return fail(tool, error);
    std::vector<int32_t> reply;
    int64_t room = maxSeq - n;
    int64_t limit = options.maxTokens < 0 ? room
                                          : std::min(options.maxTokens, room);
    for (int64_t i = 0; i < limit; ++i) {
      int32_t token = attnrt_sample(sampler, logits.data(), vocab);
      if (token < 0)
        return fail(tool, "every logit is NaN: nothing to sample");
      if (!options.ignoreEos && attnrt_tokenizer_is_eos(tokenizer, token))
        break;
      reply.push_back(token);
      if (attnrt_tokenizer_piece(tokenizer, token)) {
        size_t length = 0;
        const char *piece = attnrt_detokenizer_step(detokenizer.get(), token,
                                                    &length, error, sizeof error);
        if (!piece)
          return fail(tool, error);
        std::fwrite(piece, 1, length, stdout);
        std::fflush(stdout);
      }
      // The last token is fed only when the conversation can go on.
      if (static_cast<int64_t>(cached.size()) + 1 >= maxSeq)
        break;
      if (attnrt_decode(session.get(), token, logits.data(), error,
                        sizeof error) != ATTNRT_OK)
        return fail(tool, error);
      cached.push_back(token);
    }
    size_t length = 0;
    const char *rest =
        attnrt_detokenizer_flush(detokenizer.get(), &length, error, sizeof error);
    if (!rest)
      return fail(tool, error);
    std::fwrite(rest, 1, length, stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (options.verbose)
      std::fprintf(stderr, "chat: turn %d: %zu generated\n", turn, reply.size());
    // The reply's text (special tokens dropped) is the assistant turn.
    std::string content;
    std::vector<int32_t> known;
    for (int32_t token : reply)
      if (attnrt_tokenizer_piece(tokenizer, token))
        known.push_back(token);
    if (!detokenize(tokenizer, known, true, content, message))
      return fail(tool, message);
    turns.push_back({"assistant", content});
    if (c == EOF)
      break;
  }
  return 0;
}

} // namespace attn::tools
