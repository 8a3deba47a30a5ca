//===- InspectReportTest.cpp - attn-inspect's scores and report files -----===//
//
// scoreHead on hand-made attention patterns, then writeReport on synthetic
// data (SampleData.h): every file is there and reads back, the page escapes
// the token texts, bad data and unwritable folders give errors.
//
//===----------------------------------------------------------------------===//

#include "InspectReport.h"
#include "PngRead.h"
#include "SampleData.h"

#include "attnrt/attnrt.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using namespace attn::inspect;
using namespace attn::inspect::test;

namespace {

/// A causal [T, T] matrix whose row i is `row(i)` on j <= i.
template <typename Row> std::vector<float> causal(int64_t T, Row row) {
  std::vector<float> p(T * T, 0.0f);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j <= i; ++j)
      p[i * T + j] = row(i, j);
  return p;
}

std::vector<int32_t> distinctIds(int64_t T) {
  std::vector<int32_t> ids(T);
  for (int64_t t = 0; t < T; ++t)
    ids[t] = static_cast<int32_t>(100 + t);
  return ids;
}

TEST(HeadScores, PreviousTokenHeadScoresOneAndStandsOut) {
  const int64_t T = 10;
  auto p = causal(T, [](int64_t i, int64_t j) { return j == std::max<int64_t>(i - 1, 0); });
  HeadScores s = scoreHead(p.data(), T, distinctIds(T));
  EXPECT_DOUBLE_EQ(s.previousToken, 1.0);
  EXPECT_DOUBLE_EQ(s.firstToken, 1.0 / 9); // row 1's previous token is token 0
  EXPECT_DOUBLE_EQ(s.self, 0.0);
  EXPECT_TRUE(std::isnan(s.induction));
  EXPECT_EQ(s.inductionRows, 0);
  EXPECT_TRUE(previousTokenStandsOut(s, T));
}

TEST(HeadScores, UniformHeadScoresTheBaselineAndDoesNotStandOut) {
  const int64_t T = 10;
  auto p = causal(T, [](int64_t i, int64_t) { return 1.0f / static_cast<float>(i + 1); });
  HeadScores s = scoreHead(p.data(), T, distinctIds(T));
  // Mean of 1/(i+1) over i = 1..9: (H(10) - 1) / 9.
  const double baseline = (7381.0 / 2520 - 1) / 9;
  EXPECT_NEAR(uniformScore(T), baseline, 1e-12);
  EXPECT_NEAR(s.previousToken, baseline, 1e-6);
  EXPECT_NEAR(s.firstToken, baseline, 1e-6);
  EXPECT_NEAR(s.self, baseline, 1e-6);
  EXPECT_FALSE(previousTokenStandsOut(s, T));
}

TEST(HeadScores, SinkHead) {
  const int64_t T = 12;
  auto p = causal(T, [](int64_t, int64_t j) { return j == 0 ? 1.0f : 0.0f; });
  HeadScores s = scoreHead(p.data(), T, distinctIds(T));
  EXPECT_DOUBLE_EQ(s.firstToken, 1.0);
  EXPECT_DOUBLE_EQ(s.previousToken, 1.0 / 11); // row 1 only
  EXPECT_DOUBLE_EQ(s.self, 0.0);
  EXPECT_TRUE(standsOut(s.firstToken, uniformScore(T)));
  EXPECT_FALSE(previousTokenStandsOut(s, T));
}

TEST(HeadScores, InductionLooksAfterTheMostRecentOccurrence) {
  // Rows 2, 3, 4 repeat an earlier token (at 0, 1, 2: the most recent one
  // for row 4, not position 0): their targets are 1, 2, 3.
  const std::vector<int32_t> ids = {4, 8, 4, 8, 4};
  const int64_t T = 5;
  std::vector<float> p(T * T, 0.0f);
  for (int64_t i = 0; i < T; ++i)
    p[i * T + i] = 1.0f;
  p[2 * T + 2] = 0.75f, p[2 * T + 1] = 0.25f;
  p[3 * T + 3] = 0.5f, p[3 * T + 2] = 0.5f;
  p[4 * T + 4] = 0.0f, p[4 * T + 3] = 1.0f;
  HeadScores s = scoreHead(p.data(), T, ids);
  EXPECT_EQ(s.inductionRows, 3);
  EXPECT_NEAR(s.induction, (0.25 + 0.5 + 1.0) / 3, 1e-7);
  EXPECT_NEAR(s.inductionUniform, (1.0 / 3 + 1.0 / 4 + 1.0 / 5) / 3, 1e-12);
}

TEST(HeadScores, InductionSkipsTheDirectlyPreviousToken) {
  // Row 2's token equals row 1's, but j = 1 = i - 1 has no position between
  // it and the query: no induction row.
  const int64_t T = 3;
  auto p = causal(T, [](int64_t i, int64_t j) { return i == j ? 1.0f : 0.0f; });
  HeadScores s = scoreHead(p.data(), T, {1, 2, 2});
  EXPECT_EQ(s.inductionRows, 0);
  EXPECT_TRUE(std::isnan(s.induction));
}

TEST(HeadScores, SingleTokenHasNoRows) {
  const float p = 1.0f;
  HeadScores s = scoreHead(&p, 1, {7});
  EXPECT_TRUE(std::isnan(s.previousToken));
  EXPECT_TRUE(std::isnan(s.firstToken));
  EXPECT_TRUE(std::isnan(s.self));
  EXPECT_TRUE(std::isnan(s.induction));
  EXPECT_EQ(s.inductionRows, 0);
  EXPECT_TRUE(std::isnan(uniformScore(1)));
  EXPECT_FALSE(previousTokenStandsOut(s, 1));
}

TEST(HeadScores, NothingStandsOutBelowEightTokens) {
  // 4 x uniform exceeds 1 up to T = 7: even a pure previous-token head.
  for (int64_t T : {2, 7}) {
    auto p = causal(T, [](int64_t i, int64_t j) { return j == std::max<int64_t>(i - 1, 0); });
    EXPECT_FALSE(previousTokenStandsOut(scoreHead(p.data(), T, distinctIds(T)), T)) << T;
  }
}

TEST(HeatMap, LayoutAndColours) {
  HeatMapLayout small = heatMapLayout(5); // 512 / 5 > 16: cells of 16, labels
  EXPECT_EQ(small.cell, 16);
  EXPECT_GT(small.left, 0);
  EXPECT_GT(small.top, 0);
  EXPECT_EQ(small.width, small.left + 80);
  EXPECT_EQ(small.height, small.top + 80);
  HeatMapLayout medium = heatMapLayout(100); // cells of 5: no room for text
  EXPECT_EQ(medium.cell, 5);
  EXPECT_EQ(medium.left, 0);
  EXPECT_EQ(medium.width, 500);
  EXPECT_EQ(heatMapLayout(1000).cell, 1);
  EXPECT_EQ(heatColour(0.0f), 0x440154u);
  EXPECT_EQ(heatColour(1.0f), 0xfde725u);
  EXPECT_EQ(heatColour(std::nanf("")), 0x440154u);
  EXPECT_EQ(heatColour(2.0f), 0xfde725u);
}

TEST(EscapeTokenText, OneLineOfValidUtf8) {
  EXPECT_EQ(escapeTokenText("a\nb\tc\\d\re"), "a\\nb\\tc\\\\d\\re");
  EXPECT_EQ(escapeTokenText(" caf\xc3\xa9 \x01\x7f"), " caf\xc3\xa9 \\x01\\x7f");
  // A lone continuation byte, a truncated sequence, a surrogate.
  EXPECT_EQ(escapeTokenText("\xff\xe2\x82"), "\\xff\\xe2\\x82");
  EXPECT_EQ(escapeTokenText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

/// A fresh folder, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "attn-inspect-test-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string &name) const { return path + "/" + name; }

  std::string path;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string &text, const std::regex &pattern) {
  return std::distance(std::sregex_iterator(text.begin(), text.end(), pattern),
                       std::sregex_iterator());
}

/// The JSON of the page's data element.
nlohmann::json pageData(const std::string &html) {
  const std::string open = "<script type=\"application/json\" id=\"attn-data\">";
  size_t begin = html.find(open);
  if (begin == std::string::npos)
    return nullptr;
  begin += open.size();
  return nlohmann::json::parse(html.substr(begin, html.find("</script>", begin) - begin));
}

class WriteReport : public ::testing::Test {
protected:
  static constexpr int64_t L = 2, H = 3, T = 5, D = 4;
  InspectData data = makeSampleData(L, H, T, D);
  TempDir dir;
  std::string out = dir.file("report");
  std::string error;
};

TEST_F(WriteReport, WritesEveryFile) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  for (const char *name : {"index.html", "attention.npy", "residual.npy", "final_norm.npy",
                           "tokens.txt", "scores.json"})
    EXPECT_TRUE(std::filesystem::is_regular_file(out + "/" + name)) << name;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h)
      EXPECT_TRUE(std::filesystem::is_regular_file(out + "/L" + std::to_string(l) + "H" +
                                                   std::to_string(h) + ".png"));
}

TEST_F(WriteReport, ArraysReadBack) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  struct Expected {
    const char *name;
    const std::vector<float> &values;
    std::vector<int64_t> shape;
  };
  for (const Expected &e : {Expected{"attention.npy", data.attention, {L, H, T, T}},
                            Expected{"residual.npy", data.residual, {L + 1, T, D}},
                            Expected{"final_norm.npy", data.finalNorm, {T, D}}}) {
    float *values = nullptr;
    int64_t shape[4];
    int32_t ndim = 0;
    char message[256] = "";
    ASSERT_EQ(attnrt_npy_read_f32((out + "/" + e.name).c_str(), &values, shape, 4, &ndim, message,
                                  sizeof(message)),
              ATTNRT_OK)
        << message;
    EXPECT_EQ(std::vector<int64_t>(shape, shape + ndim), e.shape) << e.name;
    EXPECT_EQ(std::vector<float>(values, values + e.values.size()), e.values) << e.name;
    attnrt_free(values);
  }
}

TEST_F(WriteReport, HeatMapsDecode) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  HeatMapLayout layout = heatMapLayout(T);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h) {
      RgbImage image;
      std::string path = out + "/L" + std::to_string(l) + "H" + std::to_string(h) + ".png";
      ASSERT_TRUE(readPng(path, image, error)) << error;
      EXPECT_EQ(image.width, layout.width) << path;
      EXPECT_EQ(image.height, layout.height) << path;
    }
  // L0H0 is a previous-token head: cell (1, 0) bright, (1, 1) dark, (0, 1)
  // masked; the margins hold dark text pixels on white.
  RgbImage image;
  ASSERT_TRUE(readPng(out + "/L0H0.png", image, error)) << error;
  auto cell = [&](int64_t i, int64_t j) {
    return image.at(layout.left + j * layout.cell + layout.cell / 2,
                    layout.top + i * layout.cell + layout.cell / 2);
  };
  EXPECT_EQ(cell(1, 0), heatColour(data.attention[1 * T + 0]));
  EXPECT_EQ(cell(1, 1), heatColour(data.attention[1 * T + 1]));
  EXPECT_GT(cell(1, 0) >> 16, cell(1, 1) >> 16);
  EXPECT_EQ(cell(0, 1), kMaskedColour);
  EXPECT_EQ(image.at(0, 0), 0xffffffu);
  size_t textPixels = 0;
  for (uint32_t y = layout.top; y < image.height; ++y)
    for (int64_t x = 0; x < layout.left; ++x)
      textPixels += image.at(x, y) != 0xffffffu;
  EXPECT_GT(textPixels, 20u);
}

TEST_F(WriteReport, TokensOnePerLineEscaped) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  std::string text = readFile(out + "/tokens.txt");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), T);
  EXPECT_EQ(text, "0\t<s>\n1\t The\n2\t cat\n3\t</script><b>&\n4\t\\n\n");
}

TEST_F(WriteReport, ScoresJsonParses) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  nlohmann::json scores = nlohmann::json::parse(readFile(out + "/scores.json"));
  EXPECT_EQ(scores["layers"], L);
  EXPECT_EQ(scores["heads"], H);
  EXPECT_EQ(scores["tokens"], T);
  ASSERT_EQ(scores["heads_scores"].size(), static_cast<size_t>(L * H));
  const nlohmann::json &first = scores["heads_scores"][0];
  EXPECT_EQ(first["layer"], 0);
  EXPECT_EQ(first["head"], 0);
  EXPECT_NEAR(first["previous_token"].get<double>(),
              scoreHead(data.attention.data(), T, data.ids).previousToken, 1e-5);
  EXPECT_TRUE(first["first_token"].is_number());
  EXPECT_TRUE(first["self"].is_number());
  EXPECT_TRUE(first["induction"].is_null()); // no token repeats in 5
  EXPECT_EQ(first["induction_rows"], 0);
  EXPECT_EQ(first["previous_token_stands_out"], false); // T < 8
}

TEST_F(WriteReport, PageHasTheCellsAndEscapesTokens) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  std::string html = readFile(out + "/index.html");
  EXPECT_EQ(count(html, std::regex("class=\"cell[ \"]")), static_cast<size_t>(L * H));
  EXPECT_EQ(html.find(kMarkupPiece), std::string::npos);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;b&gt;&amp;"), std::string::npos);
  // Only the two script elements close.
  EXPECT_EQ(count(html, std::regex("</script>")), 2u);
  EXPECT_NE(html.find("src=\"L1H2.png\""), std::string::npos);
  nlohmann::json page = pageData(html);
  ASSERT_TRUE(page.is_object());
  EXPECT_EQ(page["tokens"][3], kMarkupPiece);
  EXPECT_EQ(page["tokens"][4], "\\n");
  EXPECT_EQ(page["tokens"][1], "\xc2\xb7The"); // a leading space as a middle dot
  ASSERT_EQ(page["attention"].size(), static_cast<size_t>(L * H));
  EXPECT_EQ(page["attention"][0].size(), static_cast<size_t>(T * (T + 1) / 2));
  // Lens ids outside lensPieces show as "#id".
  EXPECT_NE(html.find("#9999"), std::string::npos);
}

TEST_F(WriteReport, LensTextComesFromPieceOf) {
  data.pieceOf = [](int32_t id) { return "<lens:" + std::to_string(id) + ">"; };
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  std::string html = readFile(out + "/index.html");
  EXPECT_NE(html.find("&lt;lens:9999&gt;"), std::string::npos);
  EXPECT_EQ(html.find("#9999"), std::string::npos);
}

TEST_F(WriteReport, StandingOutHeadsAreMarked) {
  // 12 tokens: heads 0 and 4 (L0H0, L1H1) are previous-token heads that
  // stand out; head 4's tokens repeat from position 10 on.
  data = makeSampleData(L, H, 12, D);
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  std::string html = readFile(out + "/index.html");
  EXPECT_EQ(count(html, std::regex("class=\"cell stands-out\"")), 2u);
  EXPECT_NE(html.find("class=\"cell stands-out\" data-layer=\"1\" data-head=\"1\""),
            std::string::npos);
  nlohmann::json scores = nlohmann::json::parse(readFile(out + "/scores.json"));
  for (const nlohmann::json &head : scores["heads_scores"]) {
    int64_t k = head["layer"].get<int64_t>() * H + head["head"].get<int64_t>();
    EXPECT_EQ(head["previous_token_stands_out"], k % 4 == 0) << k;
    EXPECT_EQ(head["induction_rows"], 2);
    EXPECT_TRUE(head["induction"].is_number());
  }
}

TEST_F(WriteReport, InconsistentSizesNameTheField) {
  auto expectError = [&](InspectData bad, const std::string &field) {
    std::string message;
    EXPECT_FALSE(writeReport(bad, out, message)) << field;
    EXPECT_NE(message.find(field), std::string::npos) << message;
  };
  InspectData bad = data;
  bad.attention.pop_back();
  expectError(bad, "attention");
  bad = data;
  bad.residual.resize(L * T * D);
  expectError(bad, "residual");
  bad = data;
  bad.finalNorm.push_back(0);
  expectError(bad, "finalNorm");
  bad = data;
  bad.pieces.pop_back();
  expectError(bad, "pieces");
  bad = data;
  bad.lens.resize(L * T);
  expectError(bad, "lens");
  bad = data;
  bad.heads = 4;
  expectError(bad, "attention");
  bad = data;
  bad.layers = 0;
  expectError(bad, "layers");
  bad = data;
  bad.ids.clear();
  expectError(bad, "ids");
  bad = data;
  bad.layers = INT64_MAX / 2; // the expected size overflows
  expectError(bad, "attention");
  EXPECT_FALSE(std::filesystem::exists(out));
}

// A mixture of experts' routing: experts.npy (int32) and expert_weights.npy
// [L, T, K] as given, and a table in the page with a row per layer and
// choice, a dense layer named as such, and each layer's load.
TEST_F(WriteReport, RoutingOfAMixtureOfExperts) {
  const int64_t K = 2, E = 6;
  data.numExperts = E;
  data.expertsPerToken = K;
  for (int64_t t = 0; t < T; ++t) // layer 0 dense, layer 1 routed
    for (int64_t k = 0; k < K; ++k) {
      data.experts.push_back(-1);
      data.expertWeights.push_back(0.0f);
    }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k) {
      data.experts.push_back(static_cast<int32_t>(k == 0 ? 4 : t % 3));
      data.expertWeights.push_back(k == 0 ? 0.75f : 0.25f);
    }
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  std::string bytes = readFile(out + "/experts.npy");
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 5, 2), }";
  ASSERT_NE(bytes.find(dict), std::string::npos);
  ASSERT_EQ(bytes.size() % 64, (L * T * K * 4) % 64);
  EXPECT_EQ(std::memcmp(bytes.data() + bytes.size() - L * T * K * 4, data.experts.data(),
                        L * T * K * 4),
            0);
  float *weights = nullptr;
  int64_t shape[3];
  int32_t ndim = 0;
  char message[256] = "";
  ASSERT_EQ(attnrt_npy_read_f32((out + "/expert_weights.npy").c_str(), &weights, shape, 3, &ndim,
                                message, sizeof(message)),
            ATTNRT_OK)
      << message;
  EXPECT_EQ(std::vector<int64_t>(shape, shape + ndim), (std::vector<int64_t>{L, T, K}));
  EXPECT_EQ(std::vector<float>(weights, weights + L * T * K), data.expertWeights);
  attnrt_free(weights);

  std::string html = readFile(out + "/index.html");
  EXPECT_NE(html.find("<h2>Expert routing</h2>"), std::string::npos);
  EXPECT_NE(html.find("<th>L0</th><td colspan=\"5\" style=\"text-align:left\">dense MLP"),
            std::string::npos);
  EXPECT_NE(html.find("<th>L1 #2</th>"), std::string::npos);
  EXPECT_NE(html.find("-&gt; expert 4: weight 0.7500"), std::string::npos);
  // Experts 4, 0, 1 and 2 chosen; 4 by every token.
  EXPECT_NE(html.find("4 of 6 experts chosen; the busiest, expert 4, by 5 of 5 tokens"),
            std::string::npos);

  InspectData bad = data;
  bad.experts.pop_back();
  EXPECT_FALSE(writeReport(bad, out, error));
  EXPECT_NE(error.find("InspectData.experts has 19 elements"), std::string::npos) << error;
  bad = data;
  bad.expertsPerToken = E + 1;
  EXPECT_FALSE(writeReport(bad, out, error));
  EXPECT_NE(error.find("expertsPerToken 7"), std::string::npos) << error;
}

// A dense model's report has no routing.
TEST_F(WriteReport, NoRoutingWithoutExperts) {
  ASSERT_TRUE(writeReport(data, out, error)) << error;
  EXPECT_FALSE(std::filesystem::exists(out + "/experts.npy"));
  EXPECT_EQ(readFile(out + "/index.html").find("Expert routing"), std::string::npos);
}

TEST_F(WriteReport, UnwritableFolderIsNamed) {
  std::ofstream(dir.file("plain-file")) << "not a folder";
  std::string below = dir.file("plain-file") + "/report";
  EXPECT_FALSE(writeReport(data, below, error));
  EXPECT_NE(error.find(below), std::string::npos) << error;

  std::filesystem::create_directories(out + "/index.html");
  error.clear();
  EXPECT_FALSE(writeReport(data, out, error));
  EXPECT_NE(error.find(out + "/index.html"), std::string::npos) << error;
  EXPECT_NE(error.find("directory"), std::string::npos) << error; // EISDIR's text
}

} // namespace
