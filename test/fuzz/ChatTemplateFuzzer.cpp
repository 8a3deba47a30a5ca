//===- ChatTemplateFuzzer.cpp - parsing and rendering chat templates ------===//
//
// The input's first byte holds the flags (bit 0: add_generation_prompt);
// the rest, split at NUL bytes, is a template source followed by up to 8
// role/content pairs. Parsing must succeed or fail with one line naming the
// template line; a template that parses must render (within small limits)
// or fail the same way, with no crash, hang or leak. A render never passes
// its output limit, is valid UTF-8 whenever the messages are, and is the
// same when repeated.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "chat/ChatTemplate.h"
#include "tokenizer/Utf8.h"

using namespace attnrt;
using namespace attnrt::chat;

namespace {

bool isOneLine(const std::string &message) {
  return !message.empty() && message.find('\n') == std::string::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool addGenerationPrompt = data[0] & 1;
  std::string_view rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::vector<std::string> parts;
  while (parts.size() < 17) {
    size_t nul = rest.find('\0');
    parts.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos)
      break;
    rest.remove_prefix(nul + 1);
  }
  std::string error;
  std::unique_ptr<ChatTemplate> chat = ChatTemplate::parse(parts[0], error);
  if (!chat) {
    FUZZ_CHECK(error.rfind("chat template line ", 0) == 0 && isOneLine(error),
               "parse error: %s", error.c_str());
    return 0;
  }
  chat->setVariable("bos_token", Value::string("<s>"));
  chat->setVariable("eos_token", Value::string("</s>"));
  std::vector<ChatMessage> messages;
  bool validUtf8 = true;
  for (size_t k = 1; k + 1 < parts.size(); k += 2) {
    ChatMessage message;
    message.role = parts[k];
    message.content = parts[k + 1];
    validUtf8 = validUtf8 && findInvalidUtf8(parts[k]) == std::string::npos &&
                findInvalidUtf8(parts[k + 1]) == std::string::npos;
    messages.push_back(std::move(message));
  }
  // Small bounds keep each input fast; the defaults are the same checks
  // with larger numbers.
  ChatLimits limits;
  limits.maxOutput = 1 << 16;
  limits.maxSteps = 200000;
  limits.maxBytes = 1 << 22;
  std::string out;
  if (!chat->apply(messages, addGenerationPrompt, out, error, limits)) {
    FUZZ_CHECK(isOneLine(error), "multi-line render error: %s", error.c_str());
    FUZZ_CHECK(error.rfind("chat template line ", 0) == 0 ||
                   (!validUtf8 && error.rfind("messages[", 0) == 0),
               "render error: %s", error.c_str());
    FUZZ_CHECK(out.empty(), "output left after an error");
    return 0;
  }
  FUZZ_CHECK(validUtf8, "messages with invalid UTF-8 accepted");
  FUZZ_CHECK(out.size() <= limits.maxOutput, "output of %zu bytes", out.size());
  FUZZ_CHECK(findInvalidUtf8(out) == std::string::npos,
             "render is not valid UTF-8");
  // The time is the one input that may change between two renders.
  if (parts[0].find("strftime_now") == std::string::npos) {
    std::string again;
    FUZZ_CHECK(chat->apply(messages, addGenerationPrompt, again, error, limits),
               "second render failed: %s", error.c_str());
    FUZZ_CHECK(again == out, "two renders differ");
  }
  return 0;
}
