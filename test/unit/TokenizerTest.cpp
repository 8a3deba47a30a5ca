//===- TokenizerTest.cpp - the runtime's tokenizer on small hand-made files ===//
//
// Each behaviour on a tokenizer.json small enough to work out by hand from
// Hugging Face tokenizers' rules (the comments say which rule). The real
// vocabularies against the node references are in TokenizerReferenceTest.
//
//===----------------------------------------------------------------------===//

#include "tokenizer/Tokenizer.h"
#include "tokenizer/Utf8.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace attnrt;

namespace {

/// A tokenizer.json with `model` (a JSON object) and the other members
/// given as JSON text ("null" when absent).
std::string tokenizerJson(const std::string &model,
                          const std::string &addedTokens = "[]",
                          const std::string &normalizer = "null",
                          const std::string &preTokenizer = "null",
                          const std::string &postProcessor = "null",
                          const std::string &decoder = "null") {
  return R"({"version": "1.0", "truncation": null, "padding": null,
             "added_tokens": )" +
         addedTokens + R"(, "normalizer": )" + normalizer +
         R"(, "pre_tokenizer": )" + preTokenizer + R"(, "post_processor": )" +
         postProcessor + R"(, "decoder": )" + decoder + R"(, "model": )" +
         model + "}";
}

/// A BPE model over `vocab` (a JSON object) and `merges` (a JSON array).
std::string bpe(const std::string &vocab, const std::string &merges,
                const std::string &options = "") {
  return R"({"type": "BPE", "vocab": )" + vocab +
         R"(, "merges": )" + merges + (options.empty() ? "" : ", " + options) +
         "}";
}

std::unique_ptr<Tokenizer> load(const std::string &json,
                                const std::string &config = "",
                                const std::string &generation = "") {
  TokenizerSources sources;
  sources.tokenizerJson = json;
  sources.tokenizerConfig = config;
  sources.generationConfig = generation;
  std::string error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::load(sources, error);
  EXPECT_TRUE(tokenizer) << error;
  return tokenizer;
}

std::string loadError(const std::string &json, const std::string &config = "",
                      const std::string &generation = "") {
  TokenizerSources sources;
  sources.tokenizerJson = json;
  sources.tokenizerConfig = config;
  sources.generationConfig = generation;
  std::string error;
  EXPECT_FALSE(Tokenizer::load(sources, error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

std::vector<int32_t> encode(const Tokenizer &tokenizer, const std::string &text,
                            unsigned flags = Tokenizer::AddSpecial |
                                             Tokenizer::ParseSpecial) {
  std::vector<int32_t> ids;
  std::string error;
  EXPECT_TRUE(tokenizer.encode(text, flags, ids, error)) << error;
  return ids;
}

std::string decode(const Tokenizer &tokenizer, const std::vector<int32_t> &ids,
                   bool skipSpecial = false) {
  std::string text, error;
  EXPECT_TRUE(tokenizer.decode(ids.data(), ids.size(), skipSpecial, text, error))
      << error;
  return text;
}

using Ids = std::vector<int32_t>;

//===----------------------------------------------------------------------===//
// The BPE model
//===----------------------------------------------------------------------===//

const char *abcVocab =
    R"({"a": 0, "b": 1, "c": 2, "d": 3, "ab": 4, "bc": 5, "cd": 6, "abc": 7,
        "aa": 8, "<unk>": 9})";

TEST(TokenizerBpe, MergesLowestRankFirstNotLeftToRight) {
  // "b c" outranks "a b": abc -> a + bc, and no "a bc" merge exists.
  auto t = load(tokenizerJson(bpe(abcVocab, R"(["b c", "a b", "ab c"])")));
  EXPECT_EQ(encode(*t, "abc"), (Ids{0, 5}));
  // Ranks reversed: ab first, then ab + c.
  auto u = load(tokenizerJson(bpe(abcVocab, R"(["a b", "b c", "ab c"])")));
  EXPECT_EQ(encode(*u, "abc"), (Ids{7}));
}

TEST(TokenizerBpe, EqualRanksMergeLeftmostFirst) {
  // aaa: both pairs are "a a"; the left one merges, leaving aa + a.
  auto t = load(tokenizerJson(bpe(abcVocab, R"(["a a"])")));
  EXPECT_EQ(encode(*t, "aaa"), (Ids{8, 0}));
  EXPECT_EQ(encode(*t, "aaaa"), (Ids{8, 8}));
}

TEST(TokenizerBpe, StaleQueueEntriesAreSkipped) {
  // bcd: "c d" (rank 0) merges first; the queued "b c" (rank 1) is stale
  // because c is gone, so the result is b + cd.
  auto t = load(tokenizerJson(bpe(abcVocab, R"(["c d", "b c"])")));
  EXPECT_EQ(encode(*t, "bcd"), (Ids{1, 6}));
}

TEST(TokenizerBpe, BothMergeFormatsAndRepeatedPairs) {
  // tokenizers >= 0.20 writes merges as pairs.
  auto t = load(tokenizerJson(bpe(abcVocab, R"([["b", "c"], ["a", "b"]])")));
  EXPECT_EQ(encode(*t, "abc"), (Ids{0, 5}));
  // A repeated pair keeps its last rank ("b c" becomes rank 2, below "a b").
  auto u = load(tokenizerJson(bpe(abcVocab, R"(["b c", "a b", "b c", "ab c"])")));
  EXPECT_EQ(encode(*u, "abc"), (Ids{7}));
}

TEST(TokenizerBpe, IgnoreMerges) {
  // "abc" is in the vocabulary: with ignore_merges it is one token even
  // though the merges alone would give a + bc.
  std::string merges = R"(["b c", "a b"])";
  auto t = load(tokenizerJson(bpe(abcVocab, merges, R"("ignore_merges": true)")));
  EXPECT_EQ(encode(*t, "abc"), (Ids{7}));
  EXPECT_EQ(encode(*t, "abcd"), (Ids{0, 5, 3})) << "not in the vocabulary";
  auto u = load(tokenizerJson(bpe(abcVocab, merges, R"("ignore_merges": false)")));
  EXPECT_EQ(encode(*u, "abc"), (Ids{0, 5}));
}

TEST(TokenizerBpe, UnknownCharactersAndFuseUnk) {
  auto fused = load(tokenizerJson(
      bpe(abcVocab, "[]", R"("unk_token": "<unk>", "fuse_unk": true)")));
  EXPECT_EQ(encode(*fused, "xyaz"), (Ids{9, 0, 9}));
  auto unfused = load(tokenizerJson(
      bpe(abcVocab, "[]", R"("unk_token": "<unk>", "fuse_unk": false)")));
  EXPECT_EQ(encode(*unfused, "xyaz"), (Ids{9, 9, 0, 9}));
  // Without an unknown token Hugging Face drops the character.
  auto none = load(tokenizerJson(bpe(abcVocab, "[]")));
  EXPECT_EQ(encode(*none, "xyaz"), (Ids{0}));
}

TEST(TokenizerBpe, ByteFallback) {
  std::string vocab =
      R"({"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3, "<0xE2>": 4})";
  auto t = load(tokenizerJson(bpe(
      vocab, "[]", R"("unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true)")));
  // é is C3 A9: both byte pieces exist.
  EXPECT_EQ(encode(*t, "a\xC3\xA9"), (Ids{3, 1, 2}));
  // € is E2 82 AC: 0x82 is missing, so the whole character is unknown.
  EXPECT_EQ(encode(*t, "\xE2\x82\xAC" "a"), (Ids{0, 3}));
}

TEST(TokenizerBpe, SubwordPrefixAndWordSuffix) {
  // WordPiece-style BPE: later characters carry "##", and a merge drops the
  // right piece's prefix ("a" + "##b" -> "ab").
  std::string vocab = R"({"a": 0, "##b": 1, "ab": 2, "##c": 3, "abc": 4})";
  auto t = load(tokenizerJson(
      bpe(vocab, R"(["a ##b", "ab ##c"])", R"("continuing_subword_prefix": "##")")));
  EXPECT_EQ(encode(*t, "abc"), (Ids{4}));
  EXPECT_EQ(encode(*t, "ac"), (Ids{0, 3}));
  // end_of_word_suffix goes on the last character.
  std::string suffixed = R"({"a": 0, "b</w>": 1, "ab</w>": 2, "b": 3})";
  auto u = load(tokenizerJson(
      bpe(suffixed, R"(["a b</w>"])", R"("end_of_word_suffix": "</w>")")));
  EXPECT_EQ(encode(*u, "ab"), (Ids{2}));
  EXPECT_EQ(encode(*u, "abab"), (Ids{0, 3, 2}));
}

TEST(TokenizerBpe, LongWordsAreNotCachedButEncodeTheSame) {
  auto t = load(tokenizerJson(bpe(abcVocab, R"(["a a"])")));
  std::string word(1001, 'a');
  Ids expected(500, 8);
  expected.push_back(0);
  EXPECT_EQ(encode(*t, word), expected);
  EXPECT_EQ(encode(*t, word), expected) << "the second call hits no cache";
}

//===----------------------------------------------------------------------===//
// Added tokens
//===----------------------------------------------------------------------===//

const char *wordVocab =
    R"({"h": 0, "i": 1, " ": 2, "hi": 3, "<s>": 4, "</s>": 5, "x": 6,
        "<|im|>": 7, "<": 8, "|": 9, ">": 10, "m": 11, "o": 12, "y": 13})";

/// An added_tokens entry: special, not normalized, no stripping, with
/// `options` (JSON members) overriding those.
std::string addedToken(int id, const std::string &content,
                       const std::string &options = "") {
  Json token = {{"id", id},          {"content", content},
                {"single_word", false}, {"lstrip", false},
                {"rstrip", false},   {"normalized", false},
                {"special", true}};
  token.update(Json::parse("{" + options + "}"));
  return token.dump();
}

TEST(TokenizerAdded, SpecialTokensAreMatchedFirstAndNeverSplit) {
  std::string added = "[" + addedToken(7, "<|im|>") + "]";
  auto t = load(tokenizerJson(bpe(wordVocab, R"(["h i"])"), added));
  EXPECT_EQ(encode(*t, "hi<|im|>hi"), (Ids{3, 7, 3}));
  // Without ParseSpecial the text is text.
  EXPECT_EQ(encode(*t, "hi<|im|>", 0), (Ids{3, 8, 9, 1, 11, 9, 10}));
  // No decoder: the pieces joined with spaces, as Hugging Face does.
  EXPECT_EQ(decode(*t, {3, 7, 3}), "hi <|im|> hi");
  EXPECT_EQ(decode(*t, {3, 7, 3}, /*skipSpecial=*/true), "hi hi");
}

TEST(TokenizerAdded, LongestMatchWins) {
  std::string vocab = R"({"a": 0, "<x>": 1, "<x><y>": 2, "<": 3, ">": 4, "y": 5})";
  std::string added =
      "[" + addedToken(1, "<x>") + ", " + addedToken(2, "<x><y>") + "]";
  auto t = load(tokenizerJson(bpe(vocab, "[]"), added));
  EXPECT_EQ(encode(*t, "a<x><y>a<x>"), (Ids{0, 2, 0, 1}));
}

TEST(TokenizerAdded, StripAndSingleWord) {
  // lstrip/rstrip take the whitespace around the token into it.
  std::string added =
      "[" + addedToken(7, "<|im|>", R"("lstrip": true, "rstrip": true)") +
      ", " + addedToken(13, "y", R"("single_word": true, "special": false)") +
      "]";
  auto t = load(tokenizerJson(bpe(wordVocab, R"(["h i"])"), added));
  EXPECT_EQ(encode(*t, "hi  <|im|>  hi"), (Ids{3, 7, 3}));
  // single_word: "y" is the added token only between non-word characters.
  // As a token it cuts the text ("y hi" -> y, " hi" with the merge "h i");
  // inside "hyi" it is text, and "h y" has no merge.
  EXPECT_EQ(encode(*t, "y hi"), (Ids{13, 2, 3}));
  EXPECT_EQ(encode(*t, "hyi"), (Ids{0, 13, 1}));
  EXPECT_EQ(encode(*t, "hiyhi"), (Ids{3, 13, 3})) << "one word: h i y h i";
}

TEST(TokenizerAdded, NormalizedTokensMatchAfterTheNormalizer) {
  // The normalizer turns "o" into "x"; an added token "xx" with
  // normalized: true is matched in the normalized text, so "oo" is it.
  std::string added = "[" + addedToken(7, "xx", R"("normalized": true)") + "]";
  std::string vocab = R"({"x": 0, "o": 1, "h": 2, "xx": 7})";
  std::string normalizer =
      R"({"type": "Replace", "pattern": {"String": "o"}, "content": "x"})";
  auto t = load(tokenizerJson(bpe(vocab, "[]"), added, normalizer));
  EXPECT_EQ(encode(*t, "hooh"), (Ids{2, 7, 2}));
}

TEST(TokenizerAdded, BadEntriesAreErrors) {
  std::string model = bpe(wordVocab, "[]");
  EXPECT_EQ(loadError(tokenizerJson(model, "[" + addedToken(7, "<|im|>") + ", " +
                                              addedToken(7, "<|other|>") + "]")),
            "tokenizer.json: added_tokens[1]: id 7 is '<|other|>' here but "
            "'<|im|>' in model.vocab");
  EXPECT_EQ(loadError(tokenizerJson(model, "[" + addedToken(20, "<a>") + ", " +
                                              addedToken(20, "<b>") + "]")),
            "tokenizer.json: added_tokens: id 20 is given to both '<a>' and "
            "'<b>'");
  EXPECT_EQ(loadError(tokenizerJson(model, "[" + addedToken(99999999, "<a>") + "]")),
            "tokenizer.json: added_tokens[0]: id 99999999 is out of range "
            "[0, 1040)");
  EXPECT_EQ(loadError(tokenizerJson(model, R"([{"id": 3}])")),
            "tokenizer.json: added_tokens[0] is not an object with an integer "
            "\"id\" and a string \"content\"");
}

//===----------------------------------------------------------------------===//
// Normalizers and pre-tokenizers
//===----------------------------------------------------------------------===//

const char *spVocab =
    R"({"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3, "a": 4, "b": 5,
        "\u2581a": 6, "\u2581b": 7, "\u2581ab": 8, "ab": 9, "b\u2581": 10})";
const char *spMerges =
    R"(["\u2581 a", "a b", "\u2581a b", "b \u2581", "\u2581 b"])";

TEST(TokenizerText, SentencePieceNormalizer) {
  // LLaMA-2: Prepend "▁" then spaces to "▁", no pre-tokenizer (the whole
  // text is one word).
  std::string normalizer =
      R"({"type": "Sequence", "normalizers": [
           {"type": "Prepend", "prepend": "\u2581"},
           {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})";
  std::string added = "[" + addedToken(1, "<s>") + "]";
  auto t = load(tokenizerJson(bpe(spVocab, spMerges, R"("unk_token": "<unk>")"),
                              added, normalizer));
  EXPECT_EQ(encode(*t, "ab b"), (Ids{8, 7}));
  // Each section between added tokens is normalized on its own: "b" after
  // "<s>" gets its own "▁" (the legacy LLaMA behaviour).
  EXPECT_EQ(encode(*t, "a<s>b"), (Ids{6, 1, 7}));
  // An empty section is not prepended.
  EXPECT_EQ(encode(*t, "<s>"), (Ids{1}));
  EXPECT_EQ(encode(*t, ""), (Ids{}));
}

/// `text` through the normalizer that tokenizer.json member `json` describes.
std::string normalize(const std::string &json, std::string text) {
  Json parsed;
  std::string error;
  Normalizer normalizer;
  EXPECT_TRUE(parseJson(json, parsed, error) && normalizer.load(parsed, error))
      << error;
  SplitScratch scratch;
  normalizer.prepareScratch(scratch);
  normalizer.apply(text, scratch);
  return text;
}

TEST(TokenizerNormalizer, UnicodeForms) {
  const char *nfc = R"({"type": "NFC"})", *nfd = R"({"type": "NFD"})",
             *nfkc = R"({"type": "NFKC"})", *nfkd = R"({"type": "NFKD"})";
  // Canonical: a decomposed accent composes, a precomposed one decomposes;
  // the compatibility ligature stays.
  EXPECT_EQ(normalize(nfc, "cafe\u0301 \uFB01"), "caf\u00E9 \uFB01");
  EXPECT_EQ(normalize(nfd, "caf\u00E9 \uFB01"), "cafe\u0301 \uFB01");
  // Marks are put in canonical order (dot below, class 220, before the
  // circumflex, 230) before composing: a + U+0302 + U+0323 is U+1EAD.
  EXPECT_EQ(normalize(nfc, "a\u0302\u0323"), "\u1EAD");
  EXPECT_EQ(normalize(nfd, "\u1EAD"), "a\u0323\u0302");
  // Hangul: conjoining jamo compose into the syllable and back.
  EXPECT_EQ(normalize(nfc, "\u1112\u1161\u11AB"), "\uD55C");
  EXPECT_EQ(normalize(nfd, "\uD55C"), "\u1112\u1161\u11AB");
  // Singletons: the Ohm and Kelvin signs are Omega and K in every form.
  EXPECT_EQ(normalize(nfc, "\u2126\u212A"), "\u03A9K");
  // Compatibility: ligatures, fullwidth and superscript digits, circled
  // numbers, the no-break space.
  EXPECT_EQ(
      normalize(nfkc,
                "\uFB01 \uFF26\uFF55\uFF4C\uFF4C x\u00B2 \u2460\u00A0e\u0301"),
      "fi Full x2 1 \u00E9");
  EXPECT_EQ(normalize(nfkd, "\uFB01 \u00E9\u2460"), "fi e\u03011");
  // ASCII is left as it is; a mark right after ASCII joins its character,
  // in every run of non-ASCII text.
  EXPECT_EQ(normalize(nfc, "plain text"), "plain text");
  EXPECT_EQ(normalize(nfc, "xy e\u0301 z"), "xy \u00E9 z");
  EXPECT_EQ(normalize(nfc, "e\u0301 a\u0308x o\u0302"),
            "\u00E9 \u00E4x \u00F4");
  EXPECT_EQ(normalize(nfc, ""), "");
  // A NUL is an ordinary character.
  EXPECT_EQ(normalize(nfc, std::string("e\0e\u0301", 5)),
            std::string("e\0\u00E9", 4));
  // One scratch buffer serves texts of any length, in any order.
  Json json = Json::parse(nfc);
  std::string error;
  Normalizer normalizer;
  ASSERT_TRUE(normalizer.load(json, error)) << error;
  SplitScratch scratch;
  normalizer.prepareScratch(scratch);
  std::string decomposed, composed;
  for (int i = 0; i < 3000; ++i) {
    decomposed += "e\u0301\u1100\u1161";
    composed += "\u00E9\uAC00";
  }
  for (std::string text : {"a\u0302\u0323", decomposed.c_str(), "e\u0301"}) {
    std::string expected = normalize(nfc, text);
    normalizer.apply(text, scratch);
    EXPECT_EQ(text, expected);
  }
  EXPECT_EQ(normalize(nfc, decomposed), composed);
}

TEST(TokenizerNormalizer, LowercaseMapsEachCharacterAlone) {
  const char *lower = R"({"type": "Lowercase"})";
  EXPECT_EQ(normalize(lower, "HeLLo \u00C0\u00C9 \u0416 \u10A0"),
            "hello \u00E0\u00E9 \u0436 \u2D00");
  // Rust's char::to_lowercase, one character at a time: no final sigma (ς)
  // at the end of a word, and the dotted capital I becomes i + U+0307.
  EXPECT_EQ(normalize(lower, "\u039F\u0394\u039F\u03A3 \u03A3"),
            "\u03BF\u03B4\u03BF\u03C3 \u03C3");
  EXPECT_EQ(normalize(lower, "\u0130stanbul"), "i\u0307stanbul");
  // Kelvin sign, Roman numeral, Deseret (outside the BMP); the lowercase
  // ß and already lowercase text stay.
  EXPECT_EQ(normalize(lower, "\u212A\u2160\U00010400 \u00DF"),
            "k\u2170\U00010428 \u00DF");
}

TEST(TokenizerNormalizer, StripRemovesUnicodeWhitespace) {
  auto strip = [](bool left, bool right) {
    return std::string(R"({"type": "Strip", "strip_left": )") +
           (left ? "true" : "false") + R"(, "strip_right": )" +
           (right ? "true" : "false") + "}";
  };
  // White_Space: tab, newline, no-break space, NEL (U+0085), ideographic
  // space; not the zero-width no-break space (U+FEFF) or U+200B.
  std::string text = " \t\u00A0\u0085a b\u3000\n ";
  EXPECT_EQ(normalize(strip(true, true), text), "a b");
  EXPECT_EQ(normalize(strip(true, false), text), "a b\u3000\n ");
  EXPECT_EQ(normalize(strip(false, true), text), " \t\u00A0\u0085a b");
  EXPECT_EQ(normalize(strip(false, false), text), text);
  EXPECT_EQ(normalize(strip(true, true), "\uFEFFa\u200B"), "\uFEFFa\u200B");
  EXPECT_EQ(normalize(strip(true, true), " \u3000 "), "");
}

TEST(TokenizerNormalizer, SequenceRunsInOrder) {
  // Each step works on what the one before made: NFKD makes the fullwidth
  // capital "A" and splits the accent off, Lowercase lowers both letters,
  // NFC composes é again and Strip drops the leading space.
  std::string steps = R"({"type": "NFKD"}, {"type": "Lowercase"})";
  EXPECT_EQ(normalize(R"({"type": "Sequence", "normalizers": [)" + steps + "]}",
                      " \uFF21\u00C9"),
            " ae\u0301");
  EXPECT_EQ(normalize(R"({"type": "Sequence", "normalizers": [)" + steps +
                          R"(, {"type": "NFC"},
                          {"type": "Strip", "strip_left": true, "strip_right": false}]})",
                      " \uFF21\u00C9"),
            "a\u00E9");
}

TEST(TokenizerNormalizer, InTheTokenizer) {
  // Ids of the characters alone: a decomposed é is two pieces unless NFC
  // composes it.
  std::string vocab = R"({"e": 0, "\u0301": 1, "\u00e9": 2, "<M>": 3})";
  std::string added = "[" + addedToken(3, "<M>") + "]";
  auto plain = load(tokenizerJson(bpe(vocab, "[]"), added));
  auto nfc = load(tokenizerJson(bpe(vocab, "[]"), added, R"({"type": "NFC"})"));
  EXPECT_EQ(encode(*plain, "e\u0301"), (Ids{0, 1}));
  EXPECT_EQ(encode(*nfc, "e\u0301"), (Ids{2}));
  // Sections between added tokens are normalized apart: no composition
  // across a token.
  EXPECT_EQ(encode(*nfc, "e<M>\u0301e\u0301"), (Ids{0, 3, 1, 2}));
  // decode gives the normalized text, as Hugging Face's does.
  EXPECT_EQ(decode(*nfc, encode(*nfc, "e\u0301")), "\u00E9");

  // A normalized added token is matched by its normalized content in the
  // normalized text (Hugging Face's AddedVocabulary): "<X>" (normalized) is
  // "<x>" after Lowercase, so "<X>" and "<x>" in the text are both it. "<M>"
  // (not normalized) is matched as written, before the normalizer runs, so
  // "<m>" is text.
  std::string vocabX =
      R"({"x": 0, "<X>": 1, "<M>": 2, "<": 3, ">": 4, "m": 5})";
  std::string addedX = "[" + addedToken(1, "<X>", R"("normalized": true)") +
                       ", " + addedToken(2, "<M>") + "]";
  auto lower = load(
      tokenizerJson(bpe(vocabX, "[]"), addedX, R"({"type": "Lowercase"})"));
  EXPECT_EQ(encode(*lower, "x<X>x<x><M><m>"), (Ids{0, 1, 0, 1, 2, 3, 5, 4}));
}

TEST(TokenizerText, MetaspacePrependSchemes) {
  auto metaspace = [](const char *scheme, bool split) {
    return std::string(R"({"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": ")") +
           scheme + R"(", "split": )" + (split ? "true" : "false") + "}";
  };
  std::string added = "[" + addedToken(1, "<s>") + "]";
  std::string model = bpe(spVocab, spMerges, R"("unk_token": "<unk>")");
  auto always = load(tokenizerJson(model, added, "null", metaspace("always", true)));
  EXPECT_EQ(encode(*always, "ab b"), (Ids{8, 7}));
  EXPECT_EQ(encode(*always, "<s>ab"), (Ids{1, 8}));
  // "first": only the section at offset 0 of the text gets the "▁".
  auto first = load(tokenizerJson(model, added, "null", metaspace("first", true)));
  EXPECT_EQ(encode(*first, "ab"), (Ids{8}));
  EXPECT_EQ(encode(*first, "<s>ab"), (Ids{1, 9}));
  auto never = load(tokenizerJson(model, added, "null", metaspace("never", true)));
  EXPECT_EQ(encode(*never, "ab b"), (Ids{9, 7}));
  // With split, "b b" is the pieces "▁b" "▁b"; without, one word "▁b▁b"
  // where "b ▁" (rank 3) merges before "▁ b" (rank 4).
  EXPECT_EQ(encode(*always, "b b"), (Ids{7, 7}));
  auto whole = load(tokenizerJson(model, added, "null", metaspace("always", false)));
  EXPECT_EQ(encode(*whole, "b b"), (Ids{3, 10, 5}));
  // The legacy form: add_prefix_space instead of prepend_scheme.
  auto legacy = load(tokenizerJson(
      model, added, "null",
      R"({"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": false})"));
  EXPECT_EQ(encode(*legacy, "ab"), (Ids{9}));
}

TEST(TokenizerText, SplitBehaviours) {
  // Pieces of "a,b" split on ",": the ids show where each piece ends, since
  // merges never cross pieces.
  std::string vocab =
      R"({"a": 0, "b": 1, ",": 2, "a,": 3, ",b": 4, "a,b": 5, ",,": 6})";
  std::string merges = R"(["a ,", ", b", "a, b", ", ,"])";
  auto split = [&](const char *behavior, bool invert = false) {
    return load(tokenizerJson(
        bpe(vocab, merges), "[]", "null",
        std::string(R"({"type": "Split", "pattern": {"String": ","}, "behavior": ")") +
            behavior + R"(", "invert": )" + (invert ? "true" : "false") + "}"));
  };
  EXPECT_EQ(encode(*split("Isolated"), "a,b"), (Ids{0, 2, 1}));
  EXPECT_EQ(encode(*split("Removed"), "a,b"), (Ids{0, 1}));
  EXPECT_EQ(encode(*split("MergedWithPrevious"), "a,b"), (Ids{3, 1}));
  EXPECT_EQ(encode(*split("MergedWithNext"), "a,b"), (Ids{0, 4}));
  EXPECT_EQ(encode(*split("Contiguous"), "a,,b"), (Ids{0, 6, 1}));
  EXPECT_EQ(encode(*split("Isolated"), "a,,b"), (Ids{0, 2, 2, 1}));
  // invert: the pattern's matches are the pieces' contents; with Removed
  // the commas go.
  EXPECT_EQ(encode(*split("Removed", true), "a,b"), (Ids{2}));
}

TEST(TokenizerText, ByteLevelMapsEveryByte) {
  // A vocabulary of the 256 byte characters and nothing else.
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b)
    vocab += (b ? ", " : "") + Json(byteLevelChar(static_cast<unsigned char>(b))).dump() +
             ": " + std::to_string(b);
  vocab += "}";
  std::string pre =
      R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})";
  auto t = load(tokenizerJson(bpe(vocab, "[]"), "[]", "null", pre, "null",
                              R"({"type": "ByteLevel"})"));
  std::string text = "x \x01\xC3\xA9\n";
  EXPECT_EQ(encode(*t, text), (Ids{'x', ' ', 1, 0xC3, 0xA9, '\n'}));
  EXPECT_EQ(decode(*t, encode(*t, text)), text);
  // Invalid bytes decode as U+FFFD per maximal ill-formed subsequence, like
  // String::from_utf8_lossy: C3 alone, then E2 82 (a truncated 3-byte
  // sequence) as one.
  EXPECT_EQ(decode(*t, {'a', 0xC3, 'b', 0xE2, 0x82}),
            "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  // add_prefix_space puts a space before a section that has none.
  std::string prefixed =
      R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": false})";
  auto u = load(tokenizerJson(bpe(vocab, "[]"), "[]", "null", prefixed));
  EXPECT_EQ(encode(*u, "x"), (Ids{' ', 'x'}));
  EXPECT_EQ(encode(*u, " x"), (Ids{' ', 'x'}));
}

TEST(TokenizerThreads, ConcurrentEncodesShareTheWordCache) {
  // One tokenizer, four threads, overlapping words: every thread must get
  // the serial result while the cache fills under them (TSan checks the
  // locking in the sanitizer build).
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b)
    vocab += (b ? ", " : "") +
             Json(byteLevelChar(static_cast<unsigned char>(b))).dump() + ": " +
             std::to_string(b);
  vocab += R"(, "th": 256, "he": 257, "the": 258, "Ġthe": 259, "Ġt": 260})";
  std::string merges = R"(["t h", "h e", "th e", "Ġ t", "Ġt he"])";
  auto t = load(tokenizerJson(
      bpe(vocab, merges), "[]", "null",
      R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})"));
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i)
    texts.push_back("the theme of the " + std::to_string(i * 7919) +
                    " thermal theses " + std::string(i % 5, 'h') + "e");
  std::vector<Ids> serial;
  for (const std::string &text : texts)
    serial.push_back(encode(*t, text));
  auto fresh = load(tokenizerJson(
      bpe(vocab, merges), "[]", "null",
      R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})"));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (int round = 0; round < 20; ++round)
        for (size_t i = w; i < texts.size(); i += (round % 3) + 1) {
          std::vector<int32_t> ids;
          std::string error;
          if (!fresh->encode(texts[i], Tokenizer::ParseSpecial, ids, error) ||
              ids != serial[i])
            ++mismatches;
        }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

//===----------------------------------------------------------------------===//
// Post-processing: BOS and EOS
//===----------------------------------------------------------------------===//

const char *bosTemplate = R"({"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})";

TEST(TokenizerPost, TemplateAndConfigFlags) {
  std::string model = bpe(spVocab, spMerges);
  std::string added = "[" + addedToken(1, "<s>") + ", " + addedToken(2, "</s>") + "]";
  std::string json = tokenizerJson(model, added, "null", "null", bosTemplate);
  auto t = load(json);
  EXPECT_EQ(encode(*t, "a"), (Ids{1, 4}));
  EXPECT_EQ(encode(*t, "a", Tokenizer::ParseSpecial), (Ids{4}));
  EXPECT_EQ(t->prefixIds(), (Ids{1}));
  // LLaMA's tokenizer class rewrites the template from the config flags.
  auto eos = load(json, R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>",
                           "eos_token": "</s>", "add_bos_token": false,
                           "add_eos_token": true})");
  EXPECT_EQ(encode(*eos, "a"), (Ids{4, 2}));
  // The generic class does too when tokenizer.json has a template...
  auto generic = load(json, R"({"tokenizer_class": "PreTrainedTokenizerFast",
                               "bos_token": "<s>", "add_bos_token": false})");
  EXPECT_EQ(encode(*generic, "a"), (Ids{4}));
  // ...and not when it has none (GPT-2's config may say add_bos_token).
  auto none = load(tokenizerJson(model, added), R"({"tokenizer_class": "GPT2Tokenizer",
                   "bos_token": "<s>", "add_bos_token": true})");
  EXPECT_EQ(encode(*none, "a"), (Ids{4}));
  // The LLaMA class adds BOS by default, template or not.
  auto llama = load(tokenizerJson(model, added), R"({"tokenizer_class": "LlamaTokenizerFast",
                    "bos_token": {"content": "<s>", "special": true}})");
  EXPECT_EQ(encode(*llama, "a"), (Ids{1, 4}));
  EXPECT_EQ(llama->bosId(), 1);
}

TEST(TokenizerPost, EndOfSequenceIds) {
  std::string added = "[" + addedToken(1, "<s>") + ", " + addedToken(2, "</s>") + "]";
  std::string json = tokenizerJson(bpe(spVocab, spMerges), added);
  EXPECT_EQ(load(json, R"({"eos_token": "</s>"})")->eosIds(), (Ids{2}));
  EXPECT_EQ(load(json, R"({"eos_token": "</s>"})", R"({"eos_token_id": [2, 1]})")
                ->eosIds(),
            (Ids{2, 1}))
      << "generation_config.json wins";
  EXPECT_EQ(load(json)->eosIds(), (Ids{}));
  EXPECT_EQ(loadError(json, "", R"({"eos_token_id": 5000})"),
            "generation_config.json: eos_token_id 5000 is not a token id of "
            "the tokenizer");
  EXPECT_EQ(loadError(json, R"({"eos_token": "<eot>"})"),
            "tokenizer_config.json: eos_token '<eot>' is not a token of "
            "tokenizer.json");
}

//===----------------------------------------------------------------------===//
// Decoders and streaming
//===----------------------------------------------------------------------===//

std::string llamaDecoder = R"({"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";

std::string byteVocab() {
  // LLaMA-style: control pieces, the 256 byte pieces, then words.
  std::string vocab = R"({"<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof(piece), "<0x%02X>", b);
    vocab += ", \"" + std::string(piece) + "\": " + std::to_string(3 + b);
  }
  return vocab + R"(, "\u2581hi": 259, "\u2581there": 260, "!": 261})";
}

TEST(TokenizerDecode, SentencePieceDecoderChain) {
  std::string added = "[" + addedToken(1, "<s>") + "]";
  auto t = load(tokenizerJson(bpe(byteVocab(), "[]"), added, "null", "null",
                              "null", llamaDecoder));
  // The first space is stripped; the others are spaces.
  EXPECT_EQ(decode(*t, {259, 260, 261}), "hi there!");
  EXPECT_EQ(decode(*t, {1, 259}), "<s> hi") << "as Hugging Face decodes it";
  EXPECT_EQ(decode(*t, {1, 259}, true), "hi");
  // Byte pieces: E4 BD A0 is 你; a run that is not UTF-8 becomes one
  // U+FFFD per byte (ByteFallback's rule, unlike the ByteLevel decoder).
  EXPECT_EQ(decode(*t, {259, 3 + 0xE4, 3 + 0xBD, 3 + 0xA0}), "hi\xE4\xBD\xA0");
  EXPECT_EQ(decode(*t, {3 + 0xE4, 3 + 0xBD, 259}),
            "\xEF\xBF\xBD\xEF\xBF\xBD hi");
}

TEST(TokenizerDecode, OtherDecoders) {
  std::string vocab = R"({"\u2581hi": 0, "\u2581there": 1, "x": 2, "a": 3})";
  // Metaspace drops the "▁" of the first token only.
  auto meta = load(tokenizerJson(
      bpe(vocab, "[]"), "[]", "null", "null", "null",
      R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"})"));
  EXPECT_EQ(decode(*meta, {0, 1}), "hi there");
  // No decoder: pieces joined with spaces.
  auto none = load(tokenizerJson(bpe(vocab, "[]")));
  EXPECT_EQ(decode(*none, {2, 3}), "x a");
  // clean_up_tokenization_spaces from the config.
  std::string words = R"({"it": 0, " 's": 1, " .": 2})";
  auto clean = load(tokenizerJson(bpe(words, "[]"), "[]", "null", "null", "null",
                                  R"({"type": "Fuse"})"),
                    R"({"clean_up_tokenization_spaces": true})");
  EXPECT_EQ(decode(*clean, {0, 1, 2}), "it's.");
  std::string error, text;
  int32_t bad = 99;
  EXPECT_FALSE(none->decode(&bad, 1, false, text, error));
  EXPECT_EQ(error, "token id 99 at index 0 is not in the tokenizer's vocabulary "
                   "(ids below 4, with gaps)");
}

TEST(TokenizerDecode, StreamingHoldsBackSplitCharacters) {
  auto t = load(tokenizerJson(bpe(byteVocab(), "[]"), "[]", "null", "null",
                              "null", llamaDecoder));
  DecodeStream stream(*t, true);
  std::vector<int32_t> ids = {259, 3 + 0xE4, 3 + 0xBD, 3 + 0xA0, 260, 261};
  std::vector<std::string> pieces;
  std::string error;
  for (int32_t id : ids) {
    std::string piece;
    ASSERT_TRUE(stream.step(id, piece, error)) << error;
    pieces.push_back(piece);
  }
  // Nothing is printed until 你 is complete, then all of it at once.
  EXPECT_EQ(pieces, (std::vector<std::string>{"hi", "", "", "\xE4\xBD\xA0",
                                              " there", "!"}));
  std::string rest;
  ASSERT_TRUE(stream.flush(rest, error));
  EXPECT_EQ(rest, "");
  // The pieces add up to the whole decode.
  std::string all;
  for (const std::string &piece : pieces)
    all += piece;
  EXPECT_EQ(all, decode(*t, ids));
  // A stream that ends inside a character flushes U+FFFDs, as decode would.
  DecodeStream cut(*t, true);
  std::string out;
  ASSERT_TRUE(cut.step(259, out, error));
  ASSERT_TRUE(cut.step(3 + 0xE4, out, error));
  EXPECT_EQ(out, "hi");
  ASSERT_TRUE(cut.flush(out, error));
  EXPECT_EQ(out, "hi\xEF\xBF\xBD");
}

//===----------------------------------------------------------------------===//
// Bad files: one line naming the file and the problem
//===----------------------------------------------------------------------===//

TEST(TokenizerErrors, UnsupportedComponentsAreNamed) {
  std::string model = bpe(abcVocab, "[]");
  EXPECT_EQ(loadError(tokenizerJson(R"({"type": "WordPiece", "vocab": {}})")),
            "tokenizer.json: model type 'WordPiece' is not supported "
            "(supported: BPE)");
  EXPECT_EQ(
      loadError(tokenizerJson(model, "[]", R"({"type": "StripAccents"})")),
      "tokenizer.json: normalizer type 'StripAccents' is not supported "
      "(supported: Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD, "
      "Lowercase, Strip)");
  EXPECT_EQ(
      loadError(tokenizerJson(model, "[]", "null",
                              R"({"type": "Sequence", "pretokenizers": [
                                   {"type": "Whitespace"}]})")),
      "tokenizer.json: pre_tokenizer.pretokenizers[0] type 'Whitespace' is "
      "not supported (supported: Sequence, ByteLevel, Metaspace, Split)");
  EXPECT_EQ(loadError(tokenizerJson(model, "[]", "null", "null",
                                    R"({"type": "RobertaProcessing"})")),
            "tokenizer.json: post_processor type 'RobertaProcessing' is not "
            "supported (supported: TemplateProcessing, ByteLevel, Sequence)");
  EXPECT_EQ(loadError(tokenizerJson(model, "[]", "null", "null", "null",
                                    R"({"type": "WordPiece"})")),
            "tokenizer.json: decoder type 'WordPiece' is not supported "
            "(supported: Sequence, ByteLevel, ByteFallback, Fuse, Strip, "
            "Replace, Metaspace)");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]", R"("dropout": 0.1)"))),
            "tokenizer.json: model.dropout is 0.1: BPE dropout (random merges, "
            "a training-time augmentation) is not supported; it must be null");
}

TEST(TokenizerErrors, BrokenFilesAreNamed) {
  std::string json = tokenizerJson(bpe(abcVocab, R"(["a b"])"));
  EXPECT_EQ(loadError(json.substr(0, json.size() / 2)).rfind(
                "tokenizer.json: not valid JSON: at byte ", 0),
            0u);
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, R"(["a b", "a q"])"))),
            "tokenizer.json: model.merges[1]: 'q' is not in the vocabulary");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, R"(["b d"])"))),
            "tokenizer.json: model.merges[0]: the merged piece 'bd' is not in "
            "the vocabulary");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, R"(["a b c"])"))),
            "tokenizer.json: model.merges[0]: 'a b c' is not two pieces "
            "separated by one space");
  EXPECT_EQ(loadError(tokenizerJson(bpe(R"({"a": 0, "b": 0})", "[]"))),
            "tokenizer.json: model.vocab: id 0 is given to both 'a' and 'b'");
  EXPECT_EQ(loadError(tokenizerJson(bpe(R"({"a": 0, "b": -1})", "[]"))),
            "tokenizer.json: model.vocab: the id of 'b' is -1, out of range "
            "(a vocabulary of 2 pieces has ids in [0, 1028))");
  EXPECT_EQ(loadError(tokenizerJson(bpe(R"({"a": 0, "b": 5000})", "[]"))),
            "tokenizer.json: model.vocab: the id of 'b' is 5000, out of range "
            "(a vocabulary of 2 pieces has ids in [0, 1028))");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]", R"("unk_token": "<?>")"))),
            "tokenizer.json: model.unk_token '<?>' is not in the vocabulary");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]", "null",
                                    R"({"type": "Split", "pattern": {"Regex": "(a"},
                                        "behavior": "Isolated"})"))
                .rfind("tokenizer.json: pre_tokenizer.pattern.Regex '(a': "
                       "invalid regex at offset 2: ",
                       0),
            0u);
  EXPECT_EQ(loadError("[]"), "tokenizer.json: is an array, not an object");
  EXPECT_EQ(loadError(R"({"model": {"type": "BPE", "vocab": {}, "merges": []},
                          "post_procesor": null})"),
            "tokenizer.json: unknown member 'post_procesor' (tokenizer.json has "
            "version, truncation, padding, added_tokens, normalizer, "
            "pre_tokenizer, post_processor, decoder and model)");
  EXPECT_EQ(loadError(json, "{").rfind("tokenizer_config.json: not valid JSON: ", 0),
            0u);
}

TEST(TokenizerErrors, MisspeltMembersAreErrors) {
  // A typo must not leave a setting at its default without a word.
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]", R"("byte_fallbak": true)"))),
            "tokenizer.json: model has an unknown member 'byte_fallbak' (a BPE "
            "model has type, dropout, unk_token, continuing_subword_prefix, "
            "end_of_word_suffix, fuse_unk, byte_fallback, ignore_merges, vocab, "
            "merges)");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]", "null",
                                    R"({"type": "ByteLevel", "add_prefix": true})")),
            "tokenizer.json: pre_tokenizer has an unknown member 'add_prefix' "
            "(a ByteLevel has type, add_prefix_space, trim_offsets, use_regex)");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]", "null", "null", "null",
                                    R"({"type": "Strip", "content": " ", "start": 1,
                                        "stop": 0, "end": 1})")),
            "tokenizer.json: decoder has an unknown member 'end' (a Strip has "
            "type, content, start, stop)");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]",
                                    R"({"type": "NFC", "form": "C"})")),
            "tokenizer.json: normalizer has an unknown member 'form' (an NFC "
            "has type)");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]",
                                    R"({"type": "Sequence", "normalizers": [
                                         {"type": "Lowercase", "locale": "tr"}]})")),
            "tokenizer.json: normalizer.normalizers[0] has an unknown member "
            "'locale' (a Lowercase has type)");
  EXPECT_EQ(loadError(tokenizerJson(
                bpe(abcVocab, "[]"), "[]",
                R"({"type": "Strip", "left": true, "right": true})")),
            "tokenizer.json: normalizer has an unknown member 'left' (a Strip "
            "has type, strip_left, strip_right)");
  EXPECT_EQ(
      loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]",
                              R"({"type": "Strip", "strip_left": true})")),
      "tokenizer.json: normalizer.strip_right is missing (true or false)");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]",
                                    R"({"type": "Strip", "strip_left": 1,
                                        "strip_right": true})")),
            "tokenizer.json: normalizer.strip_left is a number, not true or "
            "false");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"), "[]",
                                    R"({"type": "Sequence", "normalizers": [
                                         "NFC"]})")),
            "tokenizer.json: normalizer.normalizers[0] is a string, not an "
            "object");
  EXPECT_EQ(loadError(tokenizerJson(bpe(abcVocab, "[]"),
                                    "[" + addedToken(9, "<unk>", R"("strip": true)") + "]")),
            "tokenizer.json: added_tokens[0] has an unknown member 'strip' (an "
            "added token has id, content, single_word, lstrip, rstrip, "
            "normalized, special)");
}

TEST(TokenizerErrors, TemplateIdsMustBeTokens) {
  // Ids may have gaps (ids 0 and 2 here); a template naming id 1 names no
  // token.
  std::string vocab = R"({"a": 0, "<s>": 2})";
  std::string post = R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})";
  EXPECT_EQ(loadError(tokenizerJson(bpe(vocab, "[]"), "[]", "null", "null", post)),
            "tokenizer.json: post_processor.single[0]: special token '<s>' has an "
            "id that is not in the vocabulary");
}

TEST(TokenizerErrors, InvalidUtf8InTheTextIsNamed) {
  auto t = load(tokenizerJson(bpe(abcVocab, "[]")));
  std::vector<int32_t> ids;
  std::string error;
  EXPECT_FALSE(t->encode("ab\xC3(c", Tokenizer::AddSpecial, ids, error));
  EXPECT_EQ(error, "invalid UTF-8 at byte 2 of the text");
  EXPECT_TRUE(ids.empty());
}

TEST(TokenizerErrors, FolderErrorsNameTheFile) {
  attnrt::test::TempDir dir;
  std::string error;
  EXPECT_FALSE(Tokenizer::loadDirectory(dir.file(""), error));
  EXPECT_NE(error.find("tokenizer.json: cannot open: No such file"),
            std::string::npos)
      << error;
  attnrt::test::writeFile(dir.file("tokenizer.json"),
                          tokenizerJson(bpe(abcVocab, R"(["a q"])")));
  EXPECT_FALSE(Tokenizer::loadDirectory(dir.file(""), error));
  EXPECT_EQ(error, dir.file("tokenizer.json") +
                       ": model.merges[0]: 'q' is not in the vocabulary");
}

//===----------------------------------------------------------------------===//
// UTF-8 helpers
//===----------------------------------------------------------------------===//

TEST(Utf8, ValidationAndLossyDecoding) {
  EXPECT_EQ(findInvalidUtf8("abc \xC3\xA9 \xF0\x9F\x99\x82"), std::string::npos);
  EXPECT_EQ(findInvalidUtf8("abcdefgh\xC0\xAF"), 8u) << "overlong";
  EXPECT_EQ(findInvalidUtf8("\xED\xA0\x80"), 0u) << "surrogate";
  EXPECT_EQ(findInvalidUtf8("a\xF4\x90\x80\x80"), 1u) << "past U+10FFFF";
  EXPECT_EQ(findInvalidUtf8("ab\xE2\x82"), 2u) << "truncated";
  std::string out;
  // Maximal subparts (Unicode 15, 3.9): F0 9F 99 is one, 80 alone is one.
  appendUtf8Lossy(out, "a\xF0\x9F\x99" "b\x80");
  EXPECT_EQ(out, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

} // namespace
