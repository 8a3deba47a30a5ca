//===- ChatTemplateApi.cpp - the C API of chat templates ------------------===//

#include "attnrt/attnrt.h"

#include "Support.h"
#include "chat/ChatTemplate.h"
#include "tokenizer/Utf8.h"

#include <algorithm>
#include <cstring>

using namespace attnrt;
using namespace attnrt::chat;

struct attnrt_chat_template {
  std::unique_ptr<ChatTemplate> impl;
};

static int fail(int code, const std::string &message, char *error,
                size_t errorSize) {
  copyError(message, error, errorSize);
  return code;
}

static attnrt_chat_template *wrap(std::unique_ptr<ChatTemplate> impl) {
  auto *chatTemplate = new attnrt_chat_template();
  chatTemplate->impl = std::move(impl);
  return chatTemplate;
}

/// The buffer protocol of attnrt_detokenize: the length, then as much of
/// the text as fits, NUL-terminated.
static int copyOut(const std::string &rendered, char *text, size_t textSize,
                   size_t *length) {
  *length = rendered.size();
  if (textSize > 0) {
    size_t copied = std::min(rendered.size(), textSize - 1);
    std::memcpy(text, rendered.data(), copied);
    text[copied] = '\0';
  }
  return ATTNRT_OK;
}

extern "C" {

attnrt_chat_template *attnrt_chat_template_load(const char *model_dir,
                                                char *error,
                                                size_t error_size) {
  return guarded<attnrt_chat_template *>(
      error, error_size, nullptr, [&]() -> attnrt_chat_template * {
        if (!model_dir) {
          copyError("attnrt_chat_template_load: null folder", error,
                    error_size);
          return nullptr;
        }
        std::string message;
        auto impl = ChatTemplate::loadDirectory(model_dir, message);
        if (!impl) {
          copyError(message, error, error_size);
          return nullptr;
        }
        return wrap(std::move(impl));
      });
}

attnrt_chat_template *attnrt_chat_template_parse(const char *source,
                                                 const char *bos_token,
                                                 const char *eos_token,
                                                 char *error,
                                                 size_t error_size) {
  return guarded<attnrt_chat_template *>(
      error, error_size, nullptr, [&]() -> attnrt_chat_template * {
        if (!source) {
          copyError("attnrt_chat_template_parse: null source", error,
                    error_size);
          return nullptr;
        }
        std::string bos = bos_token ? bos_token : "";
        std::string eos = eos_token ? eos_token : "";
        if (findInvalidUtf8(bos) != std::string::npos ||
            findInvalidUtf8(eos) != std::string::npos) {
          copyError("attnrt_chat_template_parse: bos_token or eos_token is "
                    "not valid UTF-8",
                    error, error_size);
          return nullptr;
        }
        std::string message;
        auto impl = ChatTemplate::parse(source, message);
        if (!impl) {
          copyError(message, error, error_size);
          return nullptr;
        }
        impl->setVariable("bos_token", Value::string(std::move(bos)));
        impl->setVariable("eos_token", Value::string(std::move(eos)));
        return wrap(std::move(impl));
      });
}

void attnrt_chat_template_free(attnrt_chat_template *chat_template) {
  delete chat_template;
}

int attnrt_chat_template_apply(const attnrt_chat_template *chat_template,
                               const attnrt_chat_message *messages, int64_t n,
                               int add_generation_prompt, char *text,
                               size_t text_size, size_t *length, char *error,
                               size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!chat_template || n < 0 || (n > 0 && !messages) || !length ||
        (text_size > 0 && !text))
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_chat_template_apply: null template, messages, text "
                  "or length, or n < 0",
                  error, error_size);
    std::vector<ChatMessage> list(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const attnrt_chat_message &message = messages[k];
      if (!message.role)
        return fail(ATTNRT_ERROR_ARGUMENT,
                    format("attnrt_chat_template_apply: messages[%lld] has a "
                           "null role",
                           static_cast<long long>(k)),
                    error, error_size);
      list[static_cast<size_t>(k)].role = message.role;
      if (message.content)
        list[static_cast<size_t>(k)].content = std::string(message.content);
    }
    std::string rendered, message;
    if (!chat_template->impl->apply(list, add_generation_prompt != 0, rendered,
                                    message))
      return fail(ATTNRT_ERROR_ARGUMENT, message, error, error_size);
    return copyOut(rendered, text, text_size, length);
  });
}

int attnrt_chat_template_apply_json(const attnrt_chat_template *chat_template,
                                    const char *messages_json,
                                    const char *options_json, char *text,
                                    size_t text_size, size_t *length,
                                    char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!chat_template || !messages_json || !length ||
        (text_size > 0 && !text))
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_chat_template_apply_json: null template, "
                  "messages_json, text or length",
                  error, error_size);
    std::string rendered, message;
    if (!chat_template->impl->applyJson(messages_json,
                                        options_json ? options_json : "",
                                        rendered, message))
      return fail(ATTNRT_ERROR_ARGUMENT, message, error, error_size);
    return copyOut(rendered, text, text_size, length);
  });
}

} // extern "C"
