//===- ChatTemplate.cpp - Hugging Face chat templates ---------------------===//

#include "chat/ChatTemplate.h"

#include "Json.h"
#include "Safetensors.h"
#include "Support.h"
#include "chat/Parser.h"
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
  Dict context;
  context.set("messages", Value::list(std::move(list)));
  context.set("add_generation_prompt", Value::boolean(addGenerationPrompt));
  context.set("tools", Value::none());
  context.set("documents", Value::none());
  return render(context, out, error, limits);
}
