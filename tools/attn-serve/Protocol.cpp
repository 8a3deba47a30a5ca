//===- Protocol.cpp - attn-serve's OpenAI request and response JSON -------===//

#include "Protocol.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using nlohmann::json;

namespace attn::serve {

ApiError invalidRequest(std::string message, std::string param, std::string code) {
  ApiError error;
  error.message = std::move(message);
  error.param = std::move(param);
  error.code = std::move(code);
  return error;
}

/// Responses keep the OpenAI API's key order (id, object, created, ...).
using ojson = nlohmann::ordered_json;

/// Text from clients (prompts, stop strings) may reach a body; never let an
/// odd byte turn a response into an exception.
static std::string dump(const ojson &value) {
  return value.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

static ojson nullable(const std::string &text) {
  return text.empty() ? ojson(nullptr) : ojson(text);
}

std::string errorBody(const ApiError &error) {
  ojson body = {{"error",
                 {{"message", error.message},
                  {"type", error.type},
                  {"param", nullable(error.param)},
                  {"code", nullable(error.code)}}}};
  return dump(body);
}

int jsonNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

const char *typeName(const json &value) {
  switch (value.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::string:
    return "a string";
  case json::value_t::array:
    return "an array";
  case json::value_t::object:
    return "an object";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return "an integer";
  case json::value_t::number_float:
    return "a number";
  default:
    return "something else";
  }
}

/// Reads the fields of one request object. Each getter leaves the default
/// when the field is absent or null (OpenAI accepts null for every optional
/// field), and records the first problem: getters after a failure do
/// nothing, so a parser reads straight through and checks `ok()` once.
class Fields {
public:
  Fields(const json &object, ApiError &error) : object(object), error(error) {}

  bool ok() const { return good; }

  /// The field's value, or nullptr when it is absent or null.
  const json *find(const char *name) const {
    auto it = object.find(name);
    if (it == object.end() || it->is_null())
      return nullptr;
    return &*it;
  }

  bool fail(const std::string &param, std::string message, std::string code = {}) {
    if (good)
      error = invalidRequest(std::move(message), param, std::move(code));
    good = false;
    return false;
  }
  bool wrongType(const std::string &param, const char *expected, const json &value) {
    return fail(param, "'" + param + "' must be " + expected + ", not " + typeName(value));
  }

  void getBool(const char *name, bool &out) {
    const json *value = good ? find(name) : nullptr;
    if (!value)
      return;
    if (!value->is_boolean()) {
      wrongType(name, "a boolean", *value);
      return;
    }
    out = value->get<bool>();
  }

  void getString(const char *name, std::string &out) {
    const json *value = good ? find(name) : nullptr;
    if (!value)
      return;
    if (!value->is_string()) {
      wrongType(name, "a string", *value);
      return;
    }
    out = value->get<std::string>();
  }

  /// A number in [low, high]; `lowOpen` excludes low.
  void getNumber(const char *name, float &out, double low, double high, bool lowOpen = false) {
    const json *value = good ? find(name) : nullptr;
    if (!value)
      return;
    if (!value->is_number()) {
      wrongType(name, "a number", *value);
      return;
    }
    double d = value->get<double>();
    if (!std::isfinite(d) || d > high || (lowOpen ? d <= low : d < low)) {
      fail(name, "'" + std::string(name) + "' must be in " + (lowOpen ? "(" : "[") +
                     formatNumber(low) + ", " + formatNumber(high) + "], got " + value->dump());
      return;
    }
    out = static_cast<float>(d);
  }

  /// An integer (a float with no fraction counts, as OpenAI's own checks
  /// take 16.0) in [low, high].
  bool getInteger(const char *name, int64_t &out, int64_t low, int64_t high) {
    const json *value = good ? find(name) : nullptr;
    if (!value)
      return false;
    return integerValue(name, *value, out, low, high);
  }

  bool integerValue(const std::string &param, const json &value, int64_t &out, int64_t low,
                    int64_t high) {
    if (!good)
      return false;
    int64_t v;
    if (value.is_number_unsigned()) {
      uint64_t u = value.get<uint64_t>();
      if (u > static_cast<uint64_t>(high))
        return outOfRange(param, value, low, high);
      v = static_cast<int64_t>(u);
    } else if (value.is_number_integer()) {
      v = value.get<int64_t>();
    } else if (value.is_number_float()) {
      double d = value.get<double>();
      if (!std::isfinite(d) || std::floor(d) != d)
        return wrongType(param, "an integer", value);
      // 2^63 as a double: every integral double below it fits int64_t.
      if (d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return outOfRange(param, value, low, high);
      v = static_cast<int64_t>(d);
    } else {
      return wrongType(param, "an integer", value);
    }
    if (v < low || v > high)
      return outOfRange(param, value, low, high);
    out = v;
    return true;
  }

  /// Fields the server does not implement: accepted only at a value that
  /// means "off" (so clients that send the defaults work), refused otherwise,
  /// never ignored.
  void refuseUnless(const char *name, bool (*isOff)(const json &), const char *what) {
    const json *value = good ? find(name) : nullptr;
    if (value && !isOff(*value))
      fail(name, std::string("'") + name + "' is not supported by this server (" + what + ")",
           "unsupported_parameter");
  }

  const json &object;

private:
  static std::string formatNumber(double d) {
    if (d == std::floor(d) && std::fabs(d) < 1e15)
      return std::to_string(static_cast<int64_t>(d));
    return json(d).dump();
  }
  bool outOfRange(const std::string &param, const json &value, int64_t low, int64_t high) {
    std::string range = high == std::numeric_limits<int64_t>::max()
                            ? ">= " + std::to_string(low)
                            : "in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
    return fail(param, "'" + param + "' must be an integer " + range + ", got " + value.dump());
  }

  ApiError &error;
  bool good = true;
};

/// Parses `body` as one JSON object.
bool parseObject(std::string_view body, json &out, ApiError &error) {
  if (jsonNestingDepth(body) > kMaxJsonDepth) {
    error = invalidRequest("the JSON body is nested more than " + std::to_string(kMaxJsonDepth) +
                           " levels deep");
    return false;
  }
  try {
    out = json::parse(body.begin(), body.end());
  } catch (const json::exception &e) {
    // A syntax error (parse_error) or a number past a double's range
    // (out_of_range 406, "1e400"): "[json.exception.parse_error.101] parse
    // error at ..." without the tag.
    std::string what = e.what();
    size_t tag = what.find("] ");
    if (what.compare(0, 1, "[") == 0 && tag != std::string::npos)
      what = what.substr(tag + 2);
    error = invalidRequest("could not parse the JSON body of the request: " + what);
    return false;
  }
  if (!out.is_object()) {
    error =
        invalidRequest(std::string("the request body must be a JSON object, not ") + typeName(out));
    return false;
  }
  return true;
}

bool isZero(const json &value) { return value.is_number() && value.get<double>() == 0; }
bool isEmptyContainer(const json &value) {
  return (value.is_array() || value.is_object()) && value.empty();
}
bool isFalse(const json &value) { return value.is_boolean() && !value.get<bool>(); }
bool isOne(const json &value) { return value.is_number() && value.get<double>() == 1; }
bool isEmptyString(const json &value) {
  return value.is_string() && value.get_ref<const std::string &>().empty();
}

/// A token id as the API gives one: an integer in [0, 2^31).
bool tokenId(Fields &fields, const std::string &param, const json &value, int32_t &out) {
  int64_t id = 0;
  if (!fields.integerValue(param, value, id, 0, std::numeric_limits<int32_t>::max()))
    return false;
  out = static_cast<int32_t>(id);
  return true;
}

bool tokenArray(Fields &fields, const std::string &param, const json &array,
                std::vector<int32_t> &tokens) {
  tokens.clear();
  tokens.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    int32_t id;
    if (!tokenId(fields, param + "[" + std::to_string(i) + "]", array[i], id))
      return false;
    tokens.push_back(id);
  }
  return true;
}

/// The fields completions and chat share.
void readSampling(Fields &fields, GenerationRequest &request) {
  fields.getString("model", request.model);
  fields.getNumber("temperature", request.temperature, 0, 2);
  fields.getNumber("top_p", request.topP, 0, 1, /*lowOpen=*/true);
  int64_t topK = 0;
  if (fields.getInteger("top_k", topK, 0, std::numeric_limits<int32_t>::max()))
    request.topK = static_cast<int32_t>(topK);
  int64_t seed = 0;
  if (const json *value = fields.ok() ? fields.find("seed") : nullptr) {
    // Any 64-bit integer, negative ones as their two's complement.
    if (value->is_number_unsigned()) {
      request.seed = value->get<uint64_t>();
      request.haveSeed = true;
    } else if (fields.integerValue("seed", *value, seed, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max())) {
      request.seed = static_cast<uint64_t>(seed);
      request.haveSeed = true;
    }
  }
  int64_t n = 1;
  if (fields.getInteger("n", n, 1, std::numeric_limits<int64_t>::max()) && n != 1)
    fields.fail("n", "only n = 1 is supported (one choice per request)", "unsupported_parameter");

  if (const json *stop = fields.ok() ? fields.find("stop") : nullptr) {
    if (stop->is_string()) {
      if (!stop->get_ref<const std::string &>().empty())
        request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > kMaxStopSequences)
        fields.fail("stop", "'stop' may hold at most " + std::to_string(kMaxStopSequences) +
                                " sequences, got " + std::to_string(stop->size()));
      for (size_t i = 0; fields.ok() && i < stop->size(); ++i) {
        const json &item = (*stop)[i];
        if (!item.is_string()) {
          fields.wrongType("stop[" + std::to_string(i) + "]", "a string", item);
          break;
        }
        if (!item.get_ref<const std::string &>().empty())
          request.stop.push_back(item.get<std::string>());
      }
    } else {
      fields.wrongType("stop", "a string or an array of strings", *stop);
    }
  }

  fields.getBool("stream", request.stream);
  if (const json *options = fields.ok() ? fields.find("stream_options") : nullptr) {
    if (!options->is_object()) {
      fields.wrongType("stream_options", "an object", *options);
    } else {
      auto usage = options->find("include_usage");
      if (usage != options->end() && !usage->is_null()) {
        if (usage->is_boolean())
          request.includeUsage = usage->get<bool>();
        else
          fields.wrongType("stream_options.include_usage", "a boolean", *usage);
      }
    }
  }

  fields.refuseUnless("presence_penalty", isZero, "no penalties");
  fields.refuseUnless("frequency_penalty", isZero, "no penalties");
  fields.refuseUnless("logit_bias", isEmptyContainer, "no logit bias");
}

} // namespace

bool parseCompletionRequest(std::string_view body, GenerationRequest &request, ApiError &error) {
  request = GenerationRequest();
  json object;
  if (!parseObject(body, object, error))
    return false;
  Fields fields(object, error);

  // A string, or token ids, or either inside a one-element array (the
  // API's batch form, which holds one prompt here).
  const json *prompt = fields.find("prompt");
  if (!prompt)
    return fields.fail("prompt", "'prompt' is required");
  const json *single = prompt;
  std::string param = "prompt";
  if (prompt->is_array() && !prompt->empty() &&
      ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    if (prompt->size() != 1)
      return fields.fail("prompt",
                         "only one prompt per request is supported, got " +
                             std::to_string(prompt->size()),
                         "unsupported_parameter");
    single = &(*prompt)[0];
    param = "prompt[0]";
  }
  if (single->is_string()) {
    request.prompt = single->get<std::string>();
  } else if (single->is_array()) {
    if (single->empty())
      return fields.fail(param, "'" + param + "' is an empty list of tokens");
    request.promptIsTokens = true;
    if (!tokenArray(fields, param, *single, request.promptTokens))
      return false;
  } else {
    return fields.wrongType(param,
                            "a string, an array of token ids or an array of one of "
                            "them",
                            *single);
  }

  fields.getInteger("max_tokens", request.maxTokens, 1, std::numeric_limits<int64_t>::max());
  readSampling(fields, request);
  fields.getBool("echo", request.echo);
  fields.refuseUnless(
      "logprobs", [](const json &v) { return isZero(v) || isFalse(v); }, "no log probabilities");
  fields.refuseUnless("best_of", isOne, "one choice per request");
  fields.refuseUnless("suffix", isEmptyString, "no insertion");
  return fields.ok();
}

bool parseChatRequest(std::string_view body, GenerationRequest &request, ApiError &error) {
  request = GenerationRequest();
  request.chat = true;
  json object;
  if (!parseObject(body, object, error))
    return false;
  Fields fields(object, error);

  const json *messages = fields.find("messages");
  if (!messages)
    return fields.fail("messages", "'messages' is required");
  if (!messages->is_array())
    return fields.wrongType("messages", "an array", *messages);
  if (messages->empty())
    return fields.fail("messages", "'messages' is empty: give at least one message");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json &item = (*messages)[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!item.is_object())
      return fields.wrongType(at, "an object", item);
    ChatMessage message;
    auto role = item.find("role");
    if (role == item.end() || role->is_null())
      return fields.fail(at + ".role", "'" + at + ".role' is required");
    if (!role->is_string())
      return fields.wrongType(at + ".role", "a string", *role);
    message.role = role->get<std::string>();
    // A string, null (an assistant turn with tool calls has none), or an
    // array of content parts of which only text is supported.
    auto content = item.find("content");
    if (content != item.end() && !content->is_null()) {
      if (content->is_string()) {
        message.content = content->get<std::string>();
      } else if (content->is_array()) {
        for (size_t j = 0; j < content->size(); ++j) {
          const json &part = (*content)[j];
          std::string partAt = at + ".content[" + std::to_string(j) + "]";
          if (!part.is_object())
            return fields.wrongType(partAt, "an object", part);
          auto type = part.find("type");
          if (type == part.end() || !type->is_string())
            return fields.fail(partAt + ".type", "'" + partAt + ".type' must be a string");
          if (*type != "text")
            return fields.fail(partAt + ".type",
                               "content parts of type '" + type->get<std::string>() +
                                   "' are not supported (only 'text')",
                               "unsupported_parameter");
          auto text = part.find("text");
          if (text == part.end() || !text->is_string())
            return fields.fail(partAt + ".text", "'" + partAt + ".text' must be a string");
          if (j)
            message.content += "\n";
          message.content += text->get<std::string>();
        }
      } else {
        return fields.wrongType(at + ".content", "a string or an array of content parts", *content);
      }
    }
    request.messages.push_back(std::move(message));
  }

  // The newer name wins when a client sends both.
  if (!fields.getInteger("max_completion_tokens", request.maxTokens, 1,
                         std::numeric_limits<int64_t>::max()))
    fields.getInteger("max_tokens", request.maxTokens, 1, std::numeric_limits<int64_t>::max());
  readSampling(fields, request);
  fields.refuseUnless("logprobs", isFalse, "no log probabilities");
  fields.refuseUnless("top_logprobs", isZero, "no log probabilities");
  fields.refuseUnless("tools", isEmptyContainer, "no tool calls");
  fields.refuseUnless("functions", isEmptyContainer, "no function calls");
  fields.refuseUnless(
      "tool_choice", [](const json &v) { return v == "none"; }, "no tool calls");
  fields.refuseUnless(
      "function_call", [](const json &v) { return v == "none"; }, "no function calls");
  fields.refuseUnless(
      "response_format",
      [](const json &v) { return v.is_object() && v.value("type", json()) == "text"; },
      "plain text only");
  return fields.ok();
}

bool parseTokenizeRequest(std::string_view body, TokenizeRequest &request, ApiError &error) {
  request = TokenizeRequest();
  json object;
  if (!parseObject(body, object, error))
    return false;
  Fields fields(object, error);
  const json *content = fields.find("content");
  if (!content)
    return fields.fail("content", "'content' is required");
  fields.getString("content", request.content);
  fields.getBool("add_special", request.addSpecial);
  fields.getBool("parse_special", request.parseSpecial);
  fields.refuseUnless("with_pieces", isFalse, "ids only");
  return fields.ok();
}

bool parseDetokenizeRequest(std::string_view body, std::vector<int32_t> &tokens, ApiError &error) {
  tokens.clear();
  json object;
  if (!parseObject(body, object, error))
    return false;
  Fields fields(object, error);
  const json *ids = fields.find("tokens");
  if (!ids)
    return fields.fail("tokens", "'tokens' is required");
  if (!ids->is_array())
    return fields.wrongType("tokens", "an array of token ids", *ids);
  return tokenArray(fields, "tokens", *ids, tokens);
}

//===--------------------------- Responses -------------------------------===//

namespace {

ojson usageJson(const Usage &usage) {
  return {{"prompt_tokens", usage.promptTokens},
          {"completion_tokens", usage.completionTokens},
          {"total_tokens", usage.promptTokens + usage.completionTokens}};
}

ojson envelope(const ResponseHeader &header, const char *object) {
  return {
      {"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

} // namespace

std::string completionResponse(const ResponseHeader &header, const std::string &text,
                               const std::string &finishReason, const Usage &usage) {
  ojson body = envelope(header, "text_completion");
  body["choices"] = ojson::array({{{"text", text},
                                   {"index", 0},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullable(finishReason)}}});
  body["usage"] = usageJson(usage);
  return dump(body);
}

std::string chatResponse(const ResponseHeader &header, const std::string &text,
                         const std::string &finishReason, const Usage &usage) {
  ojson body = envelope(header, "chat.completion");
  body["choices"] = ojson::array({{{"index", 0},
                                   {"message", {{"role", "assistant"}, {"content", text}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullable(finishReason)}}});
  body["usage"] = usageJson(usage);
  return dump(body);
}

std::string completionChunk(const ResponseHeader &header, const std::string &text,
                            const std::string &finishReason) {
  ojson body = envelope(header, "text_completion");
  body["choices"] = ojson::array({{{"text", text},
                                   {"index", 0},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullable(finishReason)}}});
  return dump(body);
}

std::string chatChunk(const ResponseHeader &header, bool role, const std::string *content,
                      const std::string &finishReason) {
  ojson delta = json::object();
  if (role)
    delta["role"] = "assistant";
  if (content)
    delta["content"] = *content;
  ojson body = envelope(header, "chat.completion.chunk");
  body["choices"] = ojson::array({{{"index", 0},
                                   {"delta", delta},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullable(finishReason)}}});
  return dump(body);
}

std::string usageChunk(const ResponseHeader &header, bool chat, const Usage &usage) {
  ojson body = envelope(header, chat ? "chat.completion.chunk" : "text_completion");
  body["choices"] = ojson::array();
  body["usage"] = usageJson(usage);
  return dump(body);
}

std::string sseEvent(const std::string &json) { return "data: " + json + "\n\n"; }

const char *const kSseDone = "data: [DONE]\n\n";

} // namespace attn::serve
