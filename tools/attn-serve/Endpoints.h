//===- Endpoints.h - attn-serve's route handlers ----------------*- C++ -*-===//
//
// The handlers behind the route table: each parses its body (Protocol.h),
// does what needs the tokenizer or the chat template on the handler's own
// thread (both are immutable and shared), and, for generation, submits a
// job to the scheduler and answers from its events, as one JSON body or as
// server-sent events.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SERVE_ENDPOINTS_H
#define ATTN_SERVE_ENDPOINTS_H

#include "Http.h"
#include "Protocol.h"
#include "Scheduler.h"

#include <atomic>
#include <chrono>
#include <memory>

namespace attn::serve {

/// What the handlers know of the served model.
struct ServedModel {
  const attnrt_tokenizer *tokenizer = nullptr;
  /// Null when the model has none; chatTemplateError says why.
  const attnrt_chat_template *chatTemplate = nullptr;
  std::string chatTemplateError;
  /// The id /v1/models lists and responses carry.
  std::string id;
  int64_t vocab = 0, context = 0, slots = 0;
  int64_t created = 0;
};

class Endpoints {
public:
  Endpoints(ServedModel model, Scheduler &scheduler, const HttpServer &http);

  void completions(const HttpRequest &request, HttpResponse &response);
  void chatCompletions(const HttpRequest &request, HttpResponse &response);
  /// GET /v1/models and GET /v1/models/ID.
  void models(const HttpRequest &request, HttpResponse &response);
  void health(const HttpRequest &request, HttpResponse &response);
  void tokenize(const HttpRequest &request, HttpResponse &response);
  void detokenize(const HttpRequest &request, HttpResponse &response);
  /// Counters in the Prometheus text format.
  void metrics(const HttpRequest &request, HttpResponse &response);

  /// Waits up to `timeout` for the streamed responses to end (after the
  /// scheduler's shutdown they only have their last chunks to write), so
  /// that stopping the HTTP server does not cut one short.
  void waitForStreams(std::chrono::milliseconds timeout) const;

private:
  void generate(GenerationRequest request, HttpResponse &response);
  /// The prompt as tokens (and its text for echo), or false with the error.
  bool promptTokens(const GenerationRequest &request, std::vector<int32_t> &tokens,
                    std::string &text, ApiError &error);
  std::string newId(const char *prefix);
  uint64_t newSeed();

  const ServedModel model;
  Scheduler &scheduler;
  const HttpServer &http;
  const uint64_t randomBase;
  std::atomic<uint64_t> counter{0};
  /// Streamed responses not yet finished.
  std::shared_ptr<std::atomic<int>> streams = std::make_shared<std::atomic<int>>(0);
};

/// An error as the response.
void setError(HttpResponse &response, const ApiError &error);

} // namespace attn::serve

#endif // ATTN_SERVE_ENDPOINTS_H
