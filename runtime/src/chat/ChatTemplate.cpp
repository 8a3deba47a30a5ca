//===- ChatTemplate.cpp - Hugging Face chat templates ---------------------===//

#include "chat/ChatTemplate.h"

#include "Gguf.h"
#include "Json.h"
#include "Safetensors.h"
#include "Support.h"
#include "chat/Parser.h"
#include "tokenizer/GgufTokenizer.h"
#include "tokenizer/Utf8.h"

using namespace attnrt;
using namespace attnrt::chat;

ChatTemplate::~ChatTemplate() = default;

std::unique_ptr<ChatTemplate> ChatTemplate::parse(std::string_view source,
                                                  std::string &error) {
  std::unique_ptr<Program> program = parseTemplate(source, error);
  if (!program) {
    error = "chat template " + error;
    return nullptr;
  }
  auto result = std::unique_ptr<ChatTemplate>(new ChatTemplate());
  result->program = std::move(program);
  return result;
}

/// A special token of tokenizer_config.json: a string or an AddedToken
/// object {"content": ...}; absent (and no error) when missing or null.
static bool readToken(const Json &config, const char *key,
                      const std::string &where, std::optional<std::string> &out,
                      std::string &error) {
  out.reset();
  const Json *value = jsonFind(config, key);
  if (!value || value->is_null())
    return true;
  const Json *content =
      value->is_string() ? value : jsonFind(*value, "content");
  if (!content || !content->is_string()) {
    error = where + key + " is " + jsonKindName(*value) +
            ", not a string or {\"content\": ...}";
    return false;
  }
  out = content->get<std::string>();
  if (findInvalidUtf8(*out) != std::string::npos) {
    error = where + key + " is not valid UTF-8";
    return false;
  }
  return true;
}

/// tokenizer_config.json's chat_template: a string, or a list of
/// {"name", "template"} of which transformers renders "default".
static bool readTemplateSource(const Json &config, const std::string &where,
                               std::string &source, std::string &error) {
  const Json *value = jsonFind(config, "chat_template");
  if (!value || value->is_null()) {
    error = where + "there is no chat_template";
    return false;
  }
  if (value->is_string()) {
    source = value->get<std::string>();
    return true;
  }
  if (!value->is_array()) {
    error = where + "chat_template is " + jsonKindName(*value) +
            ", not a string or a list of {\"name\", \"template\"}";
    return false;
  }
  std::string names;
  for (const Json &entry : *value) {
    const Json *name = jsonFind(entry, "name");
    const Json *text = jsonFind(entry, "template");
    if (!name || !name->is_string() || !text || !text->is_string()) {
      error = where + "chat_template has an entry that is not "
                      "{\"name\": string, \"template\": string}";
      return false;
    }
    if (name->get<std::string>() == "default") {
      source = text->get<std::string>();
      return true;
    }
    names += (names.empty() ? "" : ", ") + quote(name->get<std::string>());
  }
  error = where + "chat_template has no \"default\" entry (it has " +
          (names.empty() ? "none" : names) + ")";
  return false;
}

std::unique_ptr<ChatTemplate>
ChatTemplate::fromFiles(std::string_view config, const std::string &configName,
                        std::string_view templateFile,
                        const std::string &templateName, std::string &error) {
  std::string where = configName + ": ";
  Json root = Json::object();
  if (!config.empty()) {
    std::string message;
    if (!parseJson(config, root, message)) {
      error = where + message;
      return nullptr;
    }
    if (!root.is_object()) {
      error = where + "is " + jsonKindName(root) + ", not an object";
      return nullptr;
    }
  }
  std::string source, sourceName;
  if (!templateFile.empty()) {
    source = std::string(templateFile);
    sourceName = templateName;
  } else if (config.empty()) {
    error = configName + ": the file is missing (and there is no " +
            templateName + ")";
    return nullptr;
  } else {
    if (!readTemplateSource(root, where, source, error))
      return nullptr;
    sourceName = configName;
  }
  std::unique_ptr<ChatTemplate> result = parse(source, error);
  if (!result) {
    error = sourceName + ": " + error;
    return nullptr;
  }
  // transformers passes every special token of the tokenizer; those a
  // template reads are these.
  for (const char *key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    std::optional<std::string> token;
    if (!readToken(root, key, where, token, error))
      return nullptr;
    if (token)
      result->setVariable(key, Value::string(*token));
  }
  return result;
}

std::unique_ptr<ChatTemplate>
ChatTemplate::loadDirectory(const std::string &dir, std::string &error) {
  // A GGUF file: tokenizer.chat_template and its BOS/EOS tokens.
  if (dir.size() > 5 && dir.compare(dir.size() - 5, 5, ".gguf") == 0) {
    GgufFile file;
    std::string config;
    if (!file.open(dir, error, /*populate=*/false) ||
        !ggufTokenizerConfig(file, config, error))
      return nullptr;
    std::string name = "GGUF file " + quote(dir);
    if (!file.findKey("tokenizer.chat_template")) {
      error = name + ": metadata key 'tokenizer.chat_template' is missing";
      return nullptr;
    }
    return fromFiles(config, name + " (tokenizer.chat_template)", "", "",
                     error);
  }
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  std::string configName = base + "tokenizer_config.json";
  std::string templateName = base + "chat_template.jinja";
  std::string config, templateFile;
  if (!readFileText(configName, false, config, error) ||
      !readFileText(templateName, false, templateFile, error))
    return nullptr;
  if (config.empty() && templateFile.empty()) {
    error = configName + ": the file is missing or empty (and there is no " +
            templateName + ")";
    return nullptr;
  }
  return fromFiles(config, configName, templateFile, templateName, error);
}

void ChatTemplate::setVariable(const std::string &name, Value value) {
  variables.set(name, std::move(value));
}

bool ChatTemplate::render(const Dict &extra, std::string &out,
                          std::string &error, const ChatLimits &limits) const {
  Dict globals;
  globals.entries.reserve(8 + variables.entries.size() + extra.entries.size());
  globals.set("range", Value::function(Function::Range));
  globals.set("namespace", Value::function(Function::Namespace));
  globals.set("dict", Value::function(Function::Dict));
  globals.set("raise_exception", Value::function(Function::RaiseException));
  globals.set("strftime_now", Value::function(Function::StrftimeNow));
  for (const auto &entry : variables.entries)
    globals.set(entry.first, entry.second);
  for (const auto &entry : extra.entries)
    globals.set(entry.first, entry.second);
  out.clear();
  if (renderProgram(*program, globals, limits, out, error))
    return true;
  out.clear();
  error = "chat template " + error;
  return false;
}

bool ChatTemplate::apply(const std::vector<ChatMessage> &messages,
                         bool addGenerationPrompt, std::string &out,
                         std::string &error, const ChatLimits &limits) const {
  ValueList list;
  list.reserve(messages.size());
  for (size_t k = 0; k < messages.size(); ++k) {
    const ChatMessage &message = messages[k];
    size_t bad = findInvalidUtf8(message.role);
    const char *field = "role";
    if (bad == std::string::npos && message.content) {
      bad = findInvalidUtf8(*message.content);
      field = "content";
    }
    if (bad != std::string::npos) {
      error = format("messages[%zu].%s is not valid UTF-8 (byte %zu)", k, field,
                     bad);
      return false;
    }
    Dict entries;
    entries.entries.emplace_back("role", Value::string(message.role));
    entries.entries.emplace_back(
        "content",
        message.content ? Value::string(*message.content) : Value::none());
    list.push_back(Value::dict(std::move(entries)));
  }
  return renderConversation(Value::list(std::move(list)), addGenerationPrompt,
                            Value::none(), Value::none(), Dict(), out, error,
                            limits);
}

bool ChatTemplate::renderConversation(Value messages, bool addGenerationPrompt,
                                      Value tools, Value documents,
                                      const Dict &kwargs, std::string &out,
                                      std::string &error,
                                      const ChatLimits &limits) const {
  // transformers: render(messages=, tools=, documents=,
  // add_generation_prompt=, **special_tokens, **kwargs); a kwarg named like
  // a special token replaces it.
  Dict context;
  context.entries.reserve(4 + kwargs.entries.size());
  context.set("messages", std::move(messages));
  context.set("add_generation_prompt", Value::boolean(addGenerationPrompt));
  context.set("tools", std::move(tools));
  context.set("documents", std::move(documents));
  for (const auto &entry : kwargs.entries)
    context.set(entry.first, entry.second);
  return render(context, out, error, limits);
}

namespace {

/// Python's name of a JSON value's type, for "expected X, got Y".
const char *jsonTypeName(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::None:
    return "null";
  case Value::Kind::Bool:
    return "a boolean";
  case Value::Kind::Int:
  case Value::Kind::Float:
    return "a number";
  case Value::Kind::String:
    return "a string";
  case Value::Kind::List:
    return "a list";
  case Value::Kind::Dict:
    return "an object";
  default:
    return "a value";
  }
}

bool expected(const std::string &field, const char *what, const Value &got,
              std::string &error) {
  error = field + ": expected " + what + ", got " + jsonTypeName(got);
  return false;
}

/// The checks of a message beyond JSON: what the templates index.
bool checkMessage(const Value &message, const std::string &where,
                  std::string &error) {
  if (!message.isDict())
    return expected(where, "an object", message, error);
  const Dict &fields = message.asDict();
  const Value *role = fields.find("role");
  if (!role)
    return (error = where + ".role: missing"), false;
  if (!role->isString())
    return expected(where + ".role", "a string", *role, error);
  if (const Value *content = fields.find("content");
      content && !content->isString() && !content->isNone() &&
      !content->isList())
    return expected(where + ".content", "a string, null or a list of parts",
                    *content, error);
  const Value *calls = fields.find("tool_calls");
  if (!calls || calls->isNone())
    return true;
  if (!calls->isList())
    return expected(where + ".tool_calls", "a list", *calls, error);
  const ValueList &list = calls->asList();
  for (size_t k = 0; k < list.size(); ++k) {
    std::string call = where + format(".tool_calls[%zu]", k);
    if (!list[k].isDict())
      return expected(call, "an object", list[k], error);
    const Value *function = list[k].asDict().find("function");
    if (!function)
      continue; // templates also read {"name", "arguments"} directly
    if (!function->isDict())
      return expected(call + ".function", "an object", *function, error);
    const Value *name = function->asDict().find("name");
    if (name && !name->isString())
      return expected(call + ".function.name", "a string", *name, error);
    const Value *arguments = function->asDict().find("arguments");
    if (arguments && !arguments->isString() && !arguments->isDict())
      return expected(call + ".function.arguments", "an object or a string",
                      *arguments, error);
  }
  return true;
}

} // namespace

bool ChatTemplate::applyJson(std::string_view messagesJson,
                             std::string_view optionsJson, std::string &out,
                             std::string &error,
                             const ChatLimits &limits) const {
  out.clear();
  Value messages;
  if (!Value::parseJson(messagesJson, messages, error)) {
    error = "messages: " + error;
    return false;
  }
  if (!messages.isList())
    return expected("messages", "a list", messages, error);
  const ValueList &list = messages.asList();
  for (size_t k = 0; k < list.size(); ++k)
    if (!checkMessage(list[k], format("messages[%zu]", k), error))
      return false;

  Value options = Value::dict(Dict());
  if (!optionsJson.empty() &&
      !Value::parseJson(optionsJson, options, error)) {
    error = "options: " + error;
    return false;
  }
  if (!options.isDict())
    return expected("options", "an object", options, error);
  bool addGenerationPrompt = false;
  Value tools = Value::none(), documents = Value::none();
  Dict kwargs;
  for (const auto &[key, value] : options.asDict().entries) {
    if (key == "add_generation_prompt") {
      if (value.kind() != Value::Kind::Bool)
        return expected("options.add_generation_prompt", "a boolean", value,
                        error);
      addGenerationPrompt = value.asBool();
    } else if (key == "tools" || key == "documents") {
      if (!value.isNone() && !value.isList())
        return expected("options." + key, "a list or null", value, error);
      if (value.isList())
        for (size_t k = 0; k < value.asList().size(); ++k)
          if (!value.asList()[k].isDict())
            return expected(format("options.%s[%zu]", key.c_str(), k),
                            "an object", value.asList()[k], error);
      (key == "tools" ? tools : documents) = value;
    } else if (key == "messages") {
      error = "options.messages: the messages are the first argument";
      return false;
    } else {
      kwargs.set(key, value);
    }
  }
  return renderConversation(std::move(messages), addGenerationPrompt,
                            std::move(tools), std::move(documents), kwargs,
                            out, error, limits);
}
