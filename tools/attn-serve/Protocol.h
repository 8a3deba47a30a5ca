//===- Protocol.h - attn-serve's OpenAI requests and responses --*- C++ -*-===//
//
// The JSON side of the server, with no model and no HTTP: request bodies are
// parsed and checked into plain structs (an ApiError naming the field on the
// first problem), responses and stream chunks are built as the OpenAI API
// shapes them. Everything here is a pure function of its arguments, so the
// request fuzzer (test/fuzz/ServeRequestFuzzer.cpp) and the unit tests call
// it directly.
//
// What is checked here is what needs no model: types, ranges, the fields the
// server refuses (n > 1, logprobs, tools, penalties, ...). The context length
// and the vocabulary are checked by the caller, which knows the model.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SERVE_PROTOCOL_H
#define ATTN_SERVE_PROTOCOL_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attn::serve {

/// An error as the OpenAI API reports it: an HTTP status and the body
/// {"error": {"message", "type", "param", "code"}}; empty param and code are
/// written as null.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;
  std::string code;
};

ApiError invalidRequest(std::string message, std::string param = {}, std::string code = {});
/// The JSON body of `error`.
std::string errorBody(const ApiError &error);

/// The most stop sequences a request may give (as the OpenAI API allows).
constexpr size_t kMaxStopSequences = 4;
/// Bodies nested deeper than this are refused before they are parsed, so no
/// recursive walk of a parsed value can run out of stack.
constexpr int kMaxJsonDepth = 64;

struct ChatMessage {
  std::string role;
  std::string content;
};

/// A checked request of POST /v1/completions (chat = false) or
/// POST /v1/chat/completions (chat = true).
struct GenerationRequest {
  bool chat = false;
  /// Completions: the prompt as text, or as token ids (promptIsTokens).
  std::string prompt;
  std::vector<int32_t> promptTokens;
  bool promptIsTokens = false;
  /// Chat: the conversation, text parts of a content array joined by "\n".
  std::vector<ChatMessage> messages;
  /// max_tokens (chat: max_completion_tokens, else max_tokens); -1: up to the
  /// context.
  int64_t maxTokens = -1;
  /// OpenAI's defaults: temperature 1, top_p 1; top_k 0 keeps every token.
  float temperature = 1.0f;
  float topP = 1.0f;
  int32_t topK = 0;
  bool haveSeed = false;
  uint64_t seed = 0;
  /// Non-empty stop sequences, at most kMaxStopSequences.
  std::vector<std::string> stop;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with the usage.
  bool includeUsage = false;
  /// Completions: the prompt's text comes first in the returned text.
  bool echo = false;
  /// The request's "model" (not checked: the server serves one model).
  std::string model;
};

/// Parses and checks the body of POST /v1/completions into `request`; false
/// with `error` (status 400) on the first problem.
bool parseCompletionRequest(std::string_view body, GenerationRequest &request, ApiError &error);
/// The same for POST /v1/chat/completions.
bool parseChatRequest(std::string_view body, GenerationRequest &request, ApiError &error);

/// POST /tokenize, as llama-server: {"content": text, "add_special": false,
/// "parse_special": true}.
struct TokenizeRequest {
  std::string content;
  bool addSpecial = false;
  bool parseSpecial = true;
};
bool parseTokenizeRequest(std::string_view body, TokenizeRequest &request, ApiError &error);

/// POST /detokenize: {"tokens": [ids]}; ids are in [0, 2^31) here, the
/// caller checks them against the vocabulary.
bool parseDetokenizeRequest(std::string_view body, std::vector<int32_t> &tokens, ApiError &error);

/// The deepest nesting of arrays and objects in `text` (strings skipped), for
/// the check before parsing. Malformed text gives some depth; the parser
/// reports what is wrong with it.
int jsonNestingDepth(std::string_view text);

//===--------------------------- Responses -------------------------------===//

/// What every response and chunk of one request shares.
struct ResponseHeader {
  std::string id; /// "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
};

/// The whole answer of a request that did not stream.
std::string completionResponse(const ResponseHeader &header, const std::string &text,
                               const std::string &finishReason, const Usage &usage);
std::string chatResponse(const ResponseHeader &header, const std::string &text,
                         const std::string &finishReason, const Usage &usage);

/// One chunk of a stream (the JSON after "data: "). finishReason empty:
/// null, the stream goes on.
std::string completionChunk(const ResponseHeader &header, const std::string &text,
                            const std::string &finishReason);
/// A chat chunk: the first one carries the role ("assistant") and "" as its
/// content, later ones the content only, the last one an empty delta and the
/// finish reason.
std::string chatChunk(const ResponseHeader &header, bool role, const std::string *content,
                      const std::string &finishReason);
/// The last chunk when stream_options.include_usage is set: no choices, the
/// usage.
std::string usageChunk(const ResponseHeader &header, bool chat, const Usage &usage);

/// "data: JSON\n\n", one server-sent event.
std::string sseEvent(const std::string &json);
/// "data: [DONE]\n\n", the end of every stream.
extern const char *const kSseDone;

} // namespace attn::serve

#endif // ATTN_SERVE_PROTOCOL_H
