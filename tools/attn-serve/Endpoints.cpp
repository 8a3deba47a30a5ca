//===- Endpoints.cpp - attn-serve's route handlers ------------------------===//

#include "Endpoints.h"

#include "RuntimeModel.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>

using nlohmann::json;

namespace attn::serve {

namespace {

/// How long a stream waits for events before it checks that its client is
/// still there (a closed socket reads as EOF): the delay before a client
/// that left while its request waited in the queue is noticed.
constexpr std::chrono::milliseconds kStreamPoll(200);

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void setJson(HttpResponse &response, const json &body) {
  response.status = 200;
  response.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string tooLong(int64_t context, int64_t prompt, int64_t completion, bool chat, bool atLeast) {
  const char *where = chat ? "messages" : "prompt";
  return "This model's maximum context length is " + std::to_string(context) +
         " tokens. However, you requested " + std::to_string(prompt + completion) + " tokens (" +
         std::to_string(prompt) + " in the " + where + ", " + (atLeast ? "at least " : "") +
         std::to_string(completion) + " for the completion). Please reduce the length of the " +
         where + " or the completion.";
}

/// A streamed response's state, shared by the calls of its producer.
struct Stream {
  explicit Stream(std::shared_ptr<std::atomic<int>> live) : live(std::move(live)) { ++*this->live; }
  ~Stream() { --*live; }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  std::shared_ptr<std::atomic<int>> live;
  std::unique_ptr<Ticket> ticket;
  ResponseHeader header;
  bool chat = false, includeUsage = false, started = false;
  std::string echo;
  std::vector<Event> events;

  std::string chunk(const std::string &text, const std::string &finishReason) const {
    if (!chat)
      return sseEvent(completionChunk(header, text, finishReason));
    return sseEvent(chatChunk(header, false, finishReason.empty() ? &text : nullptr, finishReason));
  }

  StreamStep next(const StreamWrite &write, const StreamAlive &alive) {
    if (!started) {
      started = true;
      // OpenAI's first chat chunk carries the role and no text.
      std::string empty;
      if (chat && !write(sseEvent(chatChunk(header, true, &empty, ""))))
        return StreamStep::Abort;
      if (!echo.empty() && !write(chunk(echo, "")))
        return StreamStep::Abort;
    }
    events.clear();
    if (!ticket->next(events, kStreamPoll))
      return alive() ? StreamStep::More : StreamStep::Abort;
    for (const Event &event : events) {
      switch (event.kind) {
      case Event::Kind::Text:
        if (!write(chunk(event.text, "")))
          return StreamStep::Abort;
        break;
      case Event::Kind::Done: {
        bool ok = write(chunk("", event.finishReason));
        if (includeUsage)
          ok = ok && write(sseEvent(
                         usageChunk(header, chat, {event.promptTokens, event.completionTokens})));
        ok = ok && write(kSseDone);
        return ok ? StreamStep::Done : StreamStep::Abort;
      }
      case Event::Kind::Error: {
        // The status line has gone: the error travels as an event, which
        // OpenAI's clients raise.
        ApiError error;
        error.status = event.status;
        error.message = event.text;
        error.type = event.status == 503 ? "server_error" : "internal_error";
        bool ok = write(sseEvent(errorBody(error))) && write(kSseDone);
        return ok ? StreamStep::Done : StreamStep::Abort;
      }
      }
    }
    return StreamStep::More;
  }
};

} // namespace

void setError(HttpResponse &response, const ApiError &error) {
  response.status = error.status;
  response.contentType = "application/json";
  response.body = errorBody(error);
  response.stream = nullptr;
}

Endpoints::Endpoints(ServedModel model, Scheduler &scheduler, const HttpServer &http)
    : model(std::move(model)), scheduler(scheduler), http(http),
      randomBase(
          (static_cast<uint64_t>(std::random_device()()) << 32) ^ std::random_device()() ^
          static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

std::string Endpoints::newId(const char *prefix) {
  char hex[40];
  uint64_t n = counter.fetch_add(1);
  std::snprintf(hex, sizeof(hex), "%016" PRIx64 "%08" PRIx64, splitmix64(randomBase ^ n),
                static_cast<uint64_t>(n & 0xffffffffu));
  return std::string(prefix) + hex;
}

uint64_t Endpoints::newSeed() { return splitmix64(randomBase + 0x51ed * counter.fetch_add(1)); }

void Endpoints::completions(const HttpRequest &request, HttpResponse &response) {
  GenerationRequest parsed;
  ApiError error;
  if (!parseCompletionRequest(request.body, parsed, error))
    return setError(response, error);
  generate(std::move(parsed), response);
}

void Endpoints::chatCompletions(const HttpRequest &request, HttpResponse &response) {
  GenerationRequest parsed;
  ApiError error;
  if (!parseChatRequest(request.body, parsed, error))
    return setError(response, error);
  generate(std::move(parsed), response);
}

bool Endpoints::promptTokens(const GenerationRequest &request, std::vector<int32_t> &tokens,
                             std::string &text, ApiError &error) {
  char message[1024];
  std::string input;
  int flags = ATTNRT_TOKENIZE_DEFAULT;
  if (request.chat) {
    if (!model.chatTemplate) {
      error = invalidRequest("this model has no chat template (" + model.chatTemplateError +
                                 "): use /v1/completions, or start attn-serve with "
                                 "--chat-template FILE",
                             "messages", "no_chat_template");
      return false;
    }
    std::vector<attnrt_chat_message> messages;
    for (size_t i = 0; i < request.messages.size(); ++i) {
      const ChatMessage &m = request.messages[i];
      if (m.role.find('\0') != std::string::npos || m.content.find('\0') != std::string::npos) {
        error =
            invalidRequest("messages[" + std::to_string(i) + "] holds a NUL character", "messages");
        return false;
      }
      messages.push_back({m.role.c_str(), m.content.c_str()});
    }
    size_t length = 0;
    int64_t n = static_cast<int64_t>(messages.size());
    if (attnrt_chat_template_apply(model.chatTemplate, messages.data(), n, 1, nullptr, 0, &length,
                                   message, sizeof(message)) != ATTNRT_OK) {
      error = invalidRequest(std::string("the chat template failed: ") + message, "messages");
      return false;
    }
    input.resize(length + 1);
    if (attnrt_chat_template_apply(model.chatTemplate, messages.data(), n, 1, input.data(),
                                   input.size(), &length, message, sizeof(message)) != ATTNRT_OK) {
      error = invalidRequest(std::string("the chat template failed: ") + message, "messages");
      return false;
    }
    input.resize(length);
    // The template writes the special tokens (BOS included) itself, as
    // transformers' apply_chat_template(tokenize=True) expects.
    flags = ATTNRT_TOKENIZE_PARSE_SPECIAL;
  } else if (request.promptIsTokens) {
    tokens = request.promptTokens;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] >= model.vocab) {
        error = invalidRequest("prompt token " + std::to_string(tokens[i]) + " at index " +
                                   std::to_string(i) + " is outside the vocabulary [0, " +
                                   std::to_string(model.vocab) + ")",
                               "prompt");
        return false;
      }
    if (request.echo) {
      size_t length = 0;
      bool known = true;
      for (int32_t id : tokens)
        known = known && attnrt_tokenizer_piece(model.tokenizer, id);
      if (known &&
          attnrt_detokenize(model.tokenizer, tokens.data(), static_cast<int64_t>(tokens.size()), 1,
                            nullptr, 0, &length, message, sizeof(message)) == ATTNRT_OK) {
        text.resize(length + 1);
        attnrt_detokenize(model.tokenizer, tokens.data(), static_cast<int64_t>(tokens.size()), 1,
                          text.data(), text.size(), &length, message, sizeof(message));
        text.resize(length);
      }
    }
    return true;
  } else {
    input = request.prompt;
    text = request.prompt;
  }

  int64_t count = 0;
  if (attnrt_tokenize(model.tokenizer, input.data(), input.size(), flags, nullptr, 0, &count,
                      message, sizeof(message)) != ATTNRT_OK) {
    error = invalidRequest(std::string("cannot tokenize the ") +
                               (request.chat ? "conversation" : "prompt") + ": " + message,
                           request.chat ? "messages" : "prompt");
    return false;
  }
  tokens.resize(static_cast<size_t>(count));
  if (count > 0 &&
      attnrt_tokenize(model.tokenizer, input.data(), input.size(), flags, tokens.data(), count,
                      &count, message, sizeof(message)) != ATTNRT_OK) {
    error = invalidRequest(std::string("cannot tokenize: ") + message);
    return false;
  }
  return true;
}

void Endpoints::generate(GenerationRequest request, HttpResponse &response) {
  std::vector<int32_t> prompt;
  std::string promptText;
  ApiError error;
  if (!promptTokens(request, prompt, promptText, error))
    return setError(response, error);
  const char *where = request.chat ? "messages" : "prompt";
  int64_t length = static_cast<int64_t>(prompt.size());
  if (length == 0)
    return setError(response,
                    invalidRequest(std::string("the ") + where +
                                       " encodes to no tokens (this tokenizer adds no BOS)",
                                   where));
  // At least one token must fit after the prompt.
  if (length >= model.context)
    return setError(response, invalidRequest(tooLong(model.context, length, 1, request.chat, true),
                                             where, "context_length_exceeded"));
  int64_t maxTokens = model.context - length;
  if (request.maxTokens > 0) {
    if (request.maxTokens > maxTokens)
      return setError(
          response,
          invalidRequest(tooLong(model.context, length, request.maxTokens, request.chat, false),
                         request.chat ? "max_completion_tokens" : "max_tokens",
                         "context_length_exceeded"));
    maxTokens = request.maxTokens;
  }

  Job job;
  job.prompt = prompt;
  job.maxTokens = maxTokens;
  job.stop = request.stop;
  attnrt_sampler_params params = attnrt_sampler_default_params();
  params.temperature = request.temperature;
  params.top_k = request.topK;
  params.top_p = request.topP;
  params.seed = request.haveSeed ? request.seed : newSeed();
  char message[1024];
  job.sampler.reset(attnrt_sampler_create(&params, model.vocab, message, sizeof(message)));
  if (!job.sampler)
    return setError(response, invalidRequest(message));
  std::string failure;
  job.text = RuntimeText::create(model.tokenizer, prompt, failure);
  if (!job.text) {
    ApiError internal;
    internal.status = 500;
    internal.type = "internal_error";
    internal.message = failure;
    return setError(response, internal);
  }

  std::unique_ptr<Ticket> ticket = scheduler.submit(std::move(job), failure);
  if (!ticket) {
    ApiError busy;
    busy.status = 503;
    busy.type = "server_error";
    busy.message = failure;
    busy.code = "server_overloaded";
    response.headers.emplace_back("Retry-After", "1");
    return setError(response, busy);
  }

  ResponseHeader header;
  header.id = newId(request.chat ? "chatcmpl-" : "cmpl-");
  header.created = static_cast<int64_t>(std::time(nullptr));
  header.model = model.id;
  std::string echo = request.echo && !request.chat ? promptText : std::string();

  if (request.stream) {
    auto stream = std::make_shared<Stream>(streams);
    stream->ticket = std::move(ticket);
    stream->header = std::move(header);
    stream->chat = request.chat;
    stream->includeUsage = request.includeUsage;
    stream->echo = std::move(echo);
    response.status = 200;
    response.contentType = "text/event-stream";
    response.headers.emplace_back("Cache-Control", "no-cache");
    // The producer owns the stream: when the response goes (done, or the
    // client left), the ticket goes and the scheduler frees the slot.
    response.stream = [stream](const StreamWrite &write, const StreamAlive &alive) {
      return stream->next(write, alive);
    };
    return;
  }

  // Not streamed: this thread waits for the whole answer.
  std::string text = echo;
  std::vector<Event> events;
  for (;;) {
    events.clear();
    if (!ticket->next(events, std::chrono::milliseconds(1000)))
      continue;
    for (const Event &event : events) {
      if (event.kind == Event::Kind::Text) {
        text += event.text;
      } else if (event.kind == Event::Kind::Done) {
        Usage usage{event.promptTokens, event.completionTokens};
        response.status = 200;
        response.body = request.chat ? chatResponse(header, text, event.finishReason, usage)
                                     : completionResponse(header, text, event.finishReason, usage);
        return;
      } else {
        ApiError failed;
        failed.status = event.status;
        failed.type = event.status == 503 ? "server_error" : "internal_error";
        failed.message = event.text;
        return setError(response, failed);
      }
    }
  }
}

void Endpoints::waitForStreams(std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (streams->load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void Endpoints::models(const HttpRequest &request, HttpResponse &response) {
  json entry = {{"id", model.id},
                {"object", "model"},
                {"created", model.created},
                {"owned_by", "attn"},
                {"meta", {{"context_length", model.context}, {"vocab_size", model.vocab}}}};
  const std::string prefix = "/v1/models/";
  if (request.path.compare(0, prefix.size(), prefix) == 0) {
    std::string id = request.path.substr(prefix.size());
    if (id != model.id) {
      ApiError error =
          invalidRequest("The model '" + id + "' does not exist", "model", "model_not_found");
      error.status = 404;
      return setError(response, error);
    }
    return setJson(response, entry);
  }
  setJson(response, {{"object", "list"}, {"data", json::array({entry})}});
}

void Endpoints::health(const HttpRequest &, HttpResponse &response) {
  setJson(response, {{"status", "ok"}});
}

void Endpoints::tokenize(const HttpRequest &request, HttpResponse &response) {
  TokenizeRequest parsed;
  ApiError error;
  if (!parseTokenizeRequest(request.body, parsed, error))
    return setError(response, error);
  int flags = (parsed.addSpecial ? ATTNRT_TOKENIZE_ADD_SPECIAL : 0) |
              (parsed.parseSpecial ? ATTNRT_TOKENIZE_PARSE_SPECIAL : 0);
  char message[1024];
  int64_t count = 0;
  std::vector<int32_t> tokens;
  const std::string &text = parsed.content;
  if (attnrt_tokenize(model.tokenizer, text.data(), text.size(), flags, nullptr, 0, &count, message,
                      sizeof(message)) != ATTNRT_OK)
    return setError(response, invalidRequest(message, "content"));
  tokens.resize(static_cast<size_t>(count));
  if (count > 0)
    attnrt_tokenize(model.tokenizer, text.data(), text.size(), flags, tokens.data(), count, &count,
                    message, sizeof(message));
  setJson(response, {{"tokens", tokens}});
}

void Endpoints::detokenize(const HttpRequest &request, HttpResponse &response) {
  std::vector<int32_t> tokens;
  ApiError error;
  if (!parseDetokenizeRequest(request.body, tokens, error))
    return setError(response, error);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!attnrt_tokenizer_piece(model.tokenizer, tokens[i]))
      return setError(response, invalidRequest("token " + std::to_string(tokens[i]) + " at index " +
                                                   std::to_string(i) + " is not in the tokenizer",
                                               "tokens[" + std::to_string(i) + "]"));
  std::string text;
  if (!tokens.empty()) {
    char message[1024];
    size_t length = 0;
    int64_t n = static_cast<int64_t>(tokens.size());
    if (attnrt_detokenize(model.tokenizer, tokens.data(), n, 0, nullptr, 0, &length, message,
                          sizeof(message)) != ATTNRT_OK)
      return setError(response, invalidRequest(message, "tokens"));
    text.resize(length + 1);
    attnrt_detokenize(model.tokenizer, tokens.data(), n, 0, text.data(), text.size(), &length,
                      message, sizeof(message));
    text.resize(length);
  }
  setJson(response, {{"content", text}});
}

void Endpoints::metrics(const HttpRequest &, HttpResponse &response) {
  SchedulerStats s = scheduler.stats();
  std::string text;
  auto metric = [&](const char *name, const char *type, const char *help, double value) {
    char line[512];
    std::snprintf(line, sizeof(line), "# HELP attn_%s %s\n# TYPE attn_%s %s\nattn_%s %.17g\n", name,
                  help, name, type, name, value);
    text += line;
  };
  metric("requests_admitted_total", "counter", "Requests that got a slot.",
         static_cast<double>(s.admitted));
  metric("requests_finished_total", "counter", "Requests that ran to their end.",
         static_cast<double>(s.finished));
  metric("requests_cancelled_total", "counter", "Requests whose client left.",
         static_cast<double>(s.cancelled));
  metric("requests_failed_total", "counter", "Requests that ended with an error.",
         static_cast<double>(s.failed));
  metric("requests_rejected_total", "counter", "Requests refused with 503.",
         static_cast<double>(s.rejected));
  metric("prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
         static_cast<double>(s.promptTokens));
  metric("prefill_seconds_total", "counter", "Time in prefill calls.", s.prefillSeconds);
  metric("generated_tokens_total", "counter", "Tokens sampled.",
         static_cast<double>(s.generatedTokens));
  metric("decode_steps_total", "counter", "Batched decode calls.",
         static_cast<double>(s.decodeSteps));
  metric("decode_tokens_total", "counter", "Sessions run by batched decode calls.",
         static_cast<double>(s.decodeTokens));
  metric("decode_seconds_total", "counter", "Time in batched decode calls.", s.decodeSeconds);
  metric("slots_busy", "gauge", "Slots running a request.", s.busySlots);
  metric("slots_total", "gauge", "Slots (--parallel).", static_cast<double>(model.slots));
  metric("requests_queued", "gauge", "Requests waiting for a slot.", static_cast<double>(s.queued));
  metric("http_threads", "gauge", "Threads of the connection pool.",
         static_cast<double>(http.threads()));
  response.status = 200;
  response.contentType = "text/plain; version=0.0.4";
  response.body = std::move(text);
}

} // namespace attn::serve
