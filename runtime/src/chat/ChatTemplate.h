//===- ChatTemplate.h - Hugging Face chat templates -------------*- C++ -*-===//
//
// A model's chat template (tokenizer_config.json's `chat_template`, or
// chat_template.jinja beside it) parsed once and rendered as transformers'
// apply_chat_template(messages, tokenize=False, add_generation_prompt) does.
// docs/chat-templates.md describes the supported Jinja subset, how it matches
// jinja2 as transformers configures it, and the limits. A ChatTemplate is
// immutable after load and safe to share between threads.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_CHAT_CHATTEMPLATE_H
#define ATTNRT_CHAT_CHATTEMPLATE_H

#include "chat/Interpreter.h"
#include "chat/Value.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt::chat {

struct Program;

struct ChatMessage {
  std::string role;
  /// Absent: Python's None (an assistant turn that only calls tools).
  std::optional<std::string> content;
};

class ChatTemplate {
public:
  ~ChatTemplate();

  /// A template from source. Errors read "chat template line N: what".
  static std::unique_ptr<ChatTemplate> parse(std::string_view source,
                                             std::string &error);

  /// MODEL_DIR's template: chat_template.jinja when present (transformers
  /// prefers it), else tokenizer_config.json's chat_template (a string, or
  /// the "default" entry of a list of {"name", "template"}); with the special
  /// tokens of tokenizer_config.json (bos_token, eos_token, unk_token,
  /// pad_token: strings or {"content": ...}). Errors name the file.
  /// A path ending in ".gguf" reads tokenizer.chat_template and the
  /// file's BOS/EOS tokens instead.
  static std::unique_ptr<ChatTemplate> loadDirectory(const std::string &dir,
                                                     std::string &error);

  /// The same from the files' text; `configName` and `templateName` prefix
  /// errors, an empty `templateFile` stands for no chat_template.jinja and an
  /// empty `config` for no tokenizer_config.json.
  static std::unique_ptr<ChatTemplate>
  fromFiles(std::string_view config, const std::string &configName,
            std::string_view templateFile, const std::string &templateName,
            std::string &error);

  /// A variable every render sees (bos_token, eos_token, ...). Callers
  /// never set one on a template other threads are rendering.
  void setVariable(const std::string &name, Value value);

  /// Renders with `variables` (over the template's own and the builtins)
  /// into `out`. Errors read "chat template line N: what".
  bool render(const Dict &variables, std::string &out, std::string &error,
              const ChatLimits &limits = ChatLimits()) const;

  /// apply_chat_template(messages, tokenize=False, add_generation_prompt):
  /// `messages` as dicts {"role", "content"}, `tools` and `documents` None
  /// (transformers passes them so). Fails when a role or content is not
  /// valid UTF-8.
  bool apply(const std::vector<ChatMessage> &messages, bool addGenerationPrompt,
             std::string &out, std::string &error,
             const ChatLimits &limits = ChatLimits()) const;

  /// apply_chat_template(messages, tools=..., documents=...,
  /// add_generation_prompt=..., **kwargs) from JSON text: `messagesJson` a
  /// list of message objects (role a string; content a string, null or a
  /// list of parts; tool_calls a list of {"type", "function": {"name",
  /// "arguments": an object or a string}}; any other key passed as is),
  /// `optionsJson` an object (empty text: {}) of add_generation_prompt (a
  /// boolean, default false), tools and documents (null or lists, default
  /// None) and any other key, each passed to the template as a variable
  /// (enable_thinking, ...). Errors name the field: "messages[2].role:
  /// expected a string, got a number".
  bool applyJson(std::string_view messagesJson, std::string_view optionsJson,
                 std::string &out, std::string &error,
                 const ChatLimits &limits = ChatLimits()) const;

private:
  ChatTemplate() = default;

  /// Renders messages (a list) with the options apply_chat_template passes.
  bool renderConversation(Value messages, bool addGenerationPrompt,
                          Value tools, Value documents, const Dict &kwargs,
                          std::string &out, std::string &error,
                          const ChatLimits &limits) const;

  std::unique_ptr<Program> program;
  Dict variables;
};

} // namespace attnrt::chat

#endif // ATTNRT_CHAT_CHATTEMPLATE_H
