//===- ServeRequestFuzzer.cpp - attn-serve's request bodies ---------------===//
//
// The input is an HTTP request body. Every parser of attn-serve
// (tools/attn-serve/Protocol.h: completions, chat completions, tokenize,
// detokenize) must accept or reject it without crashing; an accepted request
// must hold only values the server can run (ranges, at most four non-empty
// stop sequences, token ids in [0, 2^31), a non-empty conversation), and a
// rejected one an error with a message, status 400 and a JSON body of the
// OpenAI shape. Whatever text an accepted request carries, the responses
// built from it are valid JSON.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "Protocol.h"

#include <nlohmann/json.hpp>

#include <string>

using namespace attn::serve;
using nlohmann::json;

namespace {

void checkError(const ApiError &error) {
  FUZZ_CHECK(error.status == 400, "status %d", error.status);
  FUZZ_CHECK(!error.message.empty(), "an error without a message");
  json body = json::parse(errorBody(error), nullptr, false);
  FUZZ_CHECK(!body.is_discarded(), "the error body is not JSON");
  const json &inner = body.at("error");
  FUZZ_CHECK(inner.size() == 4 && inner.at("message").is_string() && inner.at("type").is_string(),
             "error fields");
}

void checkJson(const std::string &text) {
  FUZZ_CHECK(!json::parse(text, nullptr, false).is_discarded(), "not JSON: %s",
             text.substr(0, 200).c_str());
}

void checkGeneration(const GenerationRequest &r) {
  FUZZ_CHECK(r.maxTokens == -1 || r.maxTokens >= 1, "max_tokens %lld",
             static_cast<long long>(r.maxTokens));
  FUZZ_CHECK(r.temperature >= 0 && r.temperature <= 2, "temperature %g", r.temperature);
  FUZZ_CHECK(r.topP > 0 && r.topP <= 1, "top_p %g", r.topP);
  FUZZ_CHECK(r.topK >= 0, "top_k %d", r.topK);
  FUZZ_CHECK(r.stop.size() <= kMaxStopSequences, "%zu stop sequences", r.stop.size());
  for (const std::string &stop : r.stop)
    FUZZ_CHECK(!stop.empty(), "an empty stop sequence");
  if (r.chat) {
    FUZZ_CHECK(!r.messages.empty(), "a conversation without messages");
    FUZZ_CHECK(!r.promptIsTokens, "a chat request with prompt tokens");
  } else if (r.promptIsTokens) {
    FUZZ_CHECK(!r.promptTokens.empty(), "an empty token prompt");
    for (int32_t id : r.promptTokens)
      FUZZ_CHECK(id >= 0, "token %d", id);
  }
  // The text a request carries comes back in responses.
  ResponseHeader header{"cmpl-0", 0, r.model};
  std::string text = r.chat ? (r.messages.empty() ? "" : r.messages[0].content) : r.prompt;
  for (const std::string &stop : r.stop)
    text += stop;
  checkJson(completionResponse(header, text, "stop", {1, 2}));
  checkJson(chatResponse(header, text, "length", {1, 2}));
  checkJson(chatChunk(header, true, &text, ""));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view body(reinterpret_cast<const char *>(data), size);
  ApiError error;

  GenerationRequest request;
  if (parseCompletionRequest(body, request, error)) {
    FUZZ_CHECK(!request.chat, "a completion parsed as chat");
    checkGeneration(request);
  } else {
    checkError(error);
  }
  error = ApiError();
  if (parseChatRequest(body, request, error)) {
    FUZZ_CHECK(request.chat, "a chat request parsed as a completion");
    checkGeneration(request);
  } else {
    checkError(error);
  }

  TokenizeRequest tokenize;
  error = ApiError();
  if (!parseTokenizeRequest(body, tokenize, error))
    checkError(error);
  std::vector<int32_t> tokens;
  error = ApiError();
  if (parseDetokenizeRequest(body, tokens, error)) {
    for (int32_t id : tokens)
      FUZZ_CHECK(id >= 0, "token %d", id);
  } else {
    checkError(error);
  }
  // The depth check stays in bounds on any bytes.
  FUZZ_CHECK(jsonNestingDepth(body) <= static_cast<int>(size), "depth past the input");
  return 0;
}
