//===- ProtocolTest.cpp - attn-serve's request parsing and response JSON --===//
//
// Requests: every field's type and range check names the field, unknown
// fields pass, unsupported ones are refused. Responses: golden JSON, key
// order included, as the OpenAI API writes it.
//
//===----------------------------------------------------------------------===//

#include "Protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace attn::serve;

namespace {

GenerationRequest completion(const std::string &body) {
  GenerationRequest request;
  ApiError error;
  EXPECT_TRUE(parseCompletionRequest(body, request, error)) << body << ": " << error.message;
  return request;
}

ApiError completionError(const std::string &body) {
  GenerationRequest request;
  ApiError error;
  EXPECT_FALSE(parseCompletionRequest(body, request, error)) << body;
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.type, "invalid_request_error");
  return error;
}

ApiError chatError(const std::string &body) {
  GenerationRequest request;
  ApiError error;
  EXPECT_FALSE(parseChatRequest(body, request, error)) << body;
  EXPECT_EQ(error.status, 400);
  return error;
}

TEST(ServeProtocol, CompletionDefaultsAndFields) {
  GenerationRequest r = completion(R"({"prompt": "Once upon"})");
  EXPECT_FALSE(r.chat);
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_FALSE(r.promptIsTokens);
  EXPECT_EQ(r.maxTokens, -1);
  EXPECT_EQ(r.temperature, 1.0f);
  EXPECT_EQ(r.topP, 1.0f);
  EXPECT_EQ(r.topK, 0);
  EXPECT_FALSE(r.haveSeed);
  EXPECT_FALSE(r.stream);
  EXPECT_TRUE(r.stop.empty());

  r = completion(R"({"model": "m", "prompt": ["x"], "max_tokens": 16.0, "temperature": 0,
                     "top_p": 0.5, "top_k": 40, "seed": -1, "stop": ["a", "", "bc"],
                     "stream": true, "stream_options": {"include_usage": true}, "n": 1,
                     "echo": true, "presence_penalty": 0, "logit_bias": {}, "user": "u",
                     "some_future_field": {"nested": [1, 2]}})");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "x");
  EXPECT_EQ(r.maxTokens, 16);
  EXPECT_EQ(r.temperature, 0.0f);
  EXPECT_EQ(r.topP, 0.5f);
  EXPECT_EQ(r.topK, 40);
  EXPECT_TRUE(r.haveSeed);
  EXPECT_EQ(r.seed, UINT64_MAX);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.includeUsage);
  EXPECT_TRUE(r.echo);

  r = completion(R"({"prompt": [1, 2, 3], "stop": "\n", "seed": 18446744073709551615})");
  EXPECT_TRUE(r.promptIsTokens);
  EXPECT_EQ(r.promptTokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(r.seed, UINT64_MAX);
  r = completion(R"({"prompt": [[7, 8]], "max_tokens": null, "stop": null})");
  EXPECT_EQ(r.promptTokens, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(r.maxTokens, -1);
}

TEST(ServeProtocol, CompletionErrorsNameTheField) {
  EXPECT_NE(completionError("{").message.find("could not parse the JSON body"), std::string::npos);
  EXPECT_NE(completionError("[1]").message.find("must be a JSON object"), std::string::npos);
  EXPECT_EQ(completionError("{}").param, "prompt");
  EXPECT_EQ(completionError(R"({"prompt": 5})").param, "prompt");
  EXPECT_EQ(completionError(R"({"prompt": []})").param, "prompt");
  EXPECT_EQ(completionError(R"({"prompt": ["a", "b"]})").code, "unsupported_parameter");
  EXPECT_EQ(completionError(R"({"prompt": [1, -2]})").param, "prompt[1]");
  EXPECT_EQ(completionError(R"({"prompt": [1, 2147483648]})").param, "prompt[1]");
  ApiError e = completionError(R"({"prompt": "x", "max_tokens": "16"})");
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_EQ(e.message, "'max_tokens' must be an integer, not a string");
  EXPECT_EQ(completionError(R"({"prompt": "x", "max_tokens": 0})").param, "max_tokens");
  EXPECT_EQ(completionError(R"({"prompt": "x", "max_tokens": 1.5})").param, "max_tokens");
  EXPECT_EQ(completionError(R"({"prompt": "x", "temperature": 2.5})").param, "temperature");
  EXPECT_EQ(completionError(R"({"prompt": "x", "temperature": "hot"})").param, "temperature");
  EXPECT_EQ(completionError(R"({"prompt": "x", "top_p": 0})").param, "top_p");
  EXPECT_EQ(completionError(R"({"prompt": "x", "top_k": -1})").param, "top_k");
  EXPECT_EQ(completionError(R"({"prompt": "x", "seed": 1.5})").param, "seed");
  EXPECT_EQ(completionError(R"({"prompt": "x", "stream": "yes"})").param, "stream");
  EXPECT_EQ(completionError(R"({"prompt": "x", "stream_options": {"include_usage": 1}})").param,
            "stream_options.include_usage");
  EXPECT_EQ(completionError(R"({"prompt": "x", "stop": 3})").param, "stop");
  EXPECT_EQ(completionError(R"({"prompt": "x", "stop": ["a", 3]})").param, "stop[1]");
  EXPECT_EQ(completionError(R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})").param, "stop");
  e = completionError(R"({"prompt": "x", "n": 2})");
  EXPECT_EQ(e.param, "n");
  EXPECT_EQ(e.code, "unsupported_parameter");
  EXPECT_EQ(completionError(R"({"prompt": "x", "logprobs": 5})").param, "logprobs");
  EXPECT_EQ(completionError(R"({"prompt": "x", "best_of": 3})").param, "best_of");
  EXPECT_EQ(completionError(R"({"prompt": "x", "suffix": "end"})").param, "suffix");
  EXPECT_EQ(completionError(R"({"prompt": "x", "presence_penalty": 0.5})").param,
            "presence_penalty");
  EXPECT_EQ(completionError(R"({"prompt": "x", "logit_bias": {"1": 5}})").param, "logit_bias");
  // A number past a double's range is nlohmann's out_of_range, not a
  // parse_error (found by the fuzzer): still a 400.
  EXPECT_NE(
      completionError(R"({"prompt": "x", "max_tokens": 1e400})").message.find("could not parse"),
      std::string::npos);
  // Invalid UTF-8 inside a string is a parse error, not a crash later.
  EXPECT_NE(completionError("{\"prompt\": \"\xff\"}").message.find("could not parse"),
            std::string::npos);
}

TEST(ServeProtocol, DeepNestingIsRefusedBeforeParsing) {
  std::string deep =
      R"({"prompt": "x", "extra": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(completionError(deep).message.find("nested more than"), std::string::npos);
  EXPECT_EQ(jsonNestingDepth(R"({"a": "[[[[", "b": [{"c": "\"{"}]})"), 3);
}

TEST(ServeProtocol, Chat) {
  GenerationRequest r;
  ApiError error;
  ASSERT_TRUE(parseChatRequest(
      R"({"messages": [{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": [{"type": "text", "text": "a"},
                                                    {"type": "text", "text": "b"}]},
                       {"role": "assistant", "content": null, "name": "x"}],
          "max_tokens": 5, "max_completion_tokens": 7, "tool_choice": "none",
          "response_format": {"type": "text"}, "logprobs": false})",
      r, error))
      << error.message;
  EXPECT_TRUE(r.chat);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.maxTokens, 7);

  EXPECT_EQ(chatError(R"({})").param, "messages");
  EXPECT_EQ(chatError(R"({"messages": []})").param, "messages");
  EXPECT_EQ(chatError(R"({"messages": {}})").param, "messages");
  EXPECT_EQ(chatError(R"({"messages": [3]})").param, "messages[0]");
  EXPECT_EQ(chatError(R"({"messages": [{"content": "x"}]})").param, "messages[0].role");
  EXPECT_EQ(chatError(R"({"messages": [{"role": 1, "content": "x"}]})").param, "messages[0].role");
  EXPECT_EQ(chatError(R"({"messages": [{"role": "user", "content": 1}]})").param,
            "messages[0].content");
  EXPECT_EQ(
      chatError(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})").code,
      "unsupported_parameter");
  const char *user = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_EQ(chatError(std::string("{") + user + R"(, "tools": [{"type": "function"}]})").param,
            "tools");
  EXPECT_EQ(chatError(std::string("{") + user + R"(, "logprobs": true})").param, "logprobs");
  EXPECT_EQ(chatError(std::string("{") + user + R"(, "response_format": {"type": "json"}})").param,
            "response_format");
  EXPECT_EQ(chatError(std::string("{") + user + R"(, "max_completion_tokens": -3})").param,
            "max_completion_tokens");
}

TEST(ServeProtocol, TokenizeAndDetokenize) {
  TokenizeRequest t;
  ApiError error;
  ASSERT_TRUE(parseTokenizeRequest(R"({"content": "hi", "add_special": true})", t, error));
  EXPECT_EQ(t.content, "hi");
  EXPECT_TRUE(t.addSpecial);
  EXPECT_TRUE(t.parseSpecial);
  EXPECT_FALSE(parseTokenizeRequest(R"({"content": 3})", t, error));
  EXPECT_EQ(error.param, "content");
  EXPECT_FALSE(parseTokenizeRequest(R"({})", t, error));
  std::vector<int32_t> ids;
  ASSERT_TRUE(parseDetokenizeRequest(R"({"tokens": [1, 2]})", ids, error));
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2}));
  EXPECT_FALSE(parseDetokenizeRequest(R"({"tokens": "1 2"})", ids, error));
  EXPECT_EQ(error.param, "tokens");
  EXPECT_FALSE(parseDetokenizeRequest(R"({"tokens": [1, "x"]})", ids, error));
  EXPECT_EQ(error.param, "tokens[1]");
}

TEST(ServeProtocol, GoldenResponses) {
  ResponseHeader header{"cmpl-1", 1700000000, "tiny"};
  EXPECT_EQ(completionResponse(header, "Hi", "length", {3, 2}),
            R"({"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"tiny",)"
            R"("choices":[{"text":"Hi","index":0,"logprobs":null,"finish_reason":"length"}],)"
            R"("usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  header.id = "chatcmpl-1";
  EXPECT_EQ(chatResponse(header, "Hi", "stop", {3, 2}),
            R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,)"
            R"("model":"tiny","choices":[{"index":0,"message":{"role":"assistant",)"
            R"("content":"Hi"},"logprobs":null,"finish_reason":"stop"}],)"
            R"("usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  std::string empty;
  EXPECT_EQ(chatChunk(header, true, &empty, ""),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"tiny","choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
            R"("logprobs":null,"finish_reason":null}]})");
  EXPECT_EQ(chatChunk(header, false, nullptr, "stop"),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"tiny","choices":[{"index":0,"delta":{},"logprobs":null,)"
            R"("finish_reason":"stop"}]})");
  EXPECT_EQ(usageChunk(header, true, {1, 1}),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"tiny","choices":[],)"
            R"("usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}})");
  header.id = "cmpl-2";
  EXPECT_EQ(sseEvent(completionChunk(header, " a", "")),
            "data: "
            R"({"id":"cmpl-2","object":"text_completion","created":1700000000,"model":"tiny",)"
            R"("choices":[{"text":" a","index":0,"logprobs":null,"finish_reason":null}]})"
            "\n\n");
  EXPECT_STREQ(kSseDone, "data: [DONE]\n\n");

  ApiError error = invalidRequest("bad", "max_tokens");
  EXPECT_EQ(errorBody(error), R"({"error":{"message":"bad","type":"invalid_request_error",)"
                              R"("param":"max_tokens","code":null}})");
  // Invalid UTF-8 from a client's text never throws.
  EXPECT_NO_THROW(completionChunk(header, "\xff", ""));
}

} // namespace
