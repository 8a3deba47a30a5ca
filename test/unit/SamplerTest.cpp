//===- SamplerTest.cpp - sampling and the PRNG ----------------------------===//

#include "Sampler.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace attnrt;
using namespace attnrt::test;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

SamplerPtr makeSampler(float temperature, int32_t topK, float topP,
                       uint64_t seed, int64_t maxVocab = 1024) {
  attnrt_sampler_params params = {temperature, topK, topP, seed};
  char error[256] = "";
  SamplerPtr sampler(
      attnrt_sampler_create(&params, maxVocab, error, sizeof(error)));
  EXPECT_NE(sampler, nullptr) << error;
  return sampler;
}

std::string createError(float temperature, int32_t topK, float topP,
                        int64_t maxVocab = 10) {
  attnrt_sampler_params params = {temperature, topK, topP, 0};
  char error[256] = "";
  SamplerPtr sampler(
      attnrt_sampler_create(&params, maxVocab, error, sizeof(error)));
  EXPECT_EQ(sampler, nullptr);
  return error;
}

/// Deterministic pseudo-random logits rows for property tests.
std::vector<float> randomLogits(Xoshiro256 &rng, int64_t n) {
  std::vector<float> row(n);
  for (float &x : row)
    x = static_cast<float>(rng.nextDouble() * 8.0 - 4.0);
  return row;
}

// Golden values from an independent implementation (Python) of splitmix64
// and xoshiro256**: the same seed must give the same stream on every
// platform and standard library.
TEST(Prng, MatchesReferenceStream) {
  uint64_t state = 0;
  EXPECT_EQ(splitMix64(state), 0xe220a8397b1dcdafull);
  Xoshiro256 zero(0);
  EXPECT_EQ(zero.next(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(zero.next(), 0xbf6e1f784956452aull);
  EXPECT_EQ(zero.next(), 0x1a5f849d4933e6e0ull);
  EXPECT_EQ(zero.next(), 0x6aa594f1262d2d2cull);
  Xoshiro256 fortyTwo(42);
  EXPECT_EQ(fortyTwo.next(), 0x15780b2e0c2ec716ull);
  EXPECT_EQ(fortyTwo.next(), 0x6104d9866d113a7eull);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    double u = fortyTwo.nextDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(Sampler, GoldenTokenSequence) {
  // Also computed by the Python reference: the draw walks the candidates in
  // id order against cumulative exp((l - max) / T).
  std::vector<float> logits = {0.5f, -1.0f,  2.0f, 1.5f,
                               0.0f, -0.25f, 1.0f, 0.75f};
  SamplerPtr sampler = makeSampler(0.7f, 0, 1.0f, 1234);
  std::vector<int32_t> drawn;
  for (int i = 0; i < 12; ++i)
    drawn.push_back(attnrt_sample(sampler.get(), logits.data(), 8));
  EXPECT_EQ(drawn, (std::vector<int32_t>{0, 6, 3, 6, 2, 6, 2, 2, 3, 3, 2, 2}));
}

TEST(Sampler, DefaultParamsAreGreedy) {
  attnrt_sampler_params params = attnrt_sampler_default_params();
  EXPECT_EQ(params.temperature, 0.0f);
  EXPECT_EQ(params.top_k, 0);
  EXPECT_EQ(params.top_p, 1.0f);
  EXPECT_EQ(params.seed, 0u);
}

TEST(Sampler, RejectsBadParameters) {
  EXPECT_EQ(createError(-0.5f, 0, 1.0f), "temperature -0.5 must be >= 0");
  EXPECT_NE(createError(nan, 0, 1.0f).find("temperature"), std::string::npos);
  EXPECT_EQ(createError(1.0f, -1, 1.0f),
            "top-k -1 must be >= 0 (0 disables it)");
  EXPECT_EQ(createError(1.0f, 0, 0.0f), "top-p 0 must be in (0, 1]");
  EXPECT_EQ(createError(1.0f, 0, 1.5f), "top-p 1.5 must be in (0, 1]");
  EXPECT_NE(createError(1.0f, 0, nan).find("top-p"), std::string::npos);
  EXPECT_NE(createError(1.0f, 0, 1.0f, 0).find("vocabulary size"),
            std::string::npos);
  char error[64];
  EXPECT_EQ(attnrt_sampler_create(nullptr, 10, error, sizeof(error)), nullptr);
  // A null error buffer is allowed.
  attnrt_sampler_params bad = {-1.0f, 0, 1.0f, 0};
  EXPECT_EQ(attnrt_sampler_create(&bad, 10, nullptr, 0), nullptr);
}

TEST(Sampler, GreedyPicksLowestIndexOfMaximum) {
  SamplerPtr sampler = makeSampler(0.0f, 0, 1.0f, 0);
  std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  EXPECT_EQ(attnrt_sample(sampler.get(), logits.data(), 5), 1);
  logits = {-inf, -inf, -5.0f};
  EXPECT_EQ(attnrt_sample(sampler.get(), logits.data(), 3), 2);
  logits = {1.0f, inf, inf};
  EXPECT_EQ(attnrt_sample(sampler.get(), logits.data(), 3), 1);
}

TEST(Sampler, NaNIsNeverPicked) {
  std::vector<float> logits = {nan, -3.0f, nan, -4.0f, nan};
  SamplerPtr greedy = makeSampler(0.0f, 0, 1.0f, 0);
  EXPECT_EQ(attnrt_sample(greedy.get(), logits.data(), 5), 1);
  SamplerPtr hot = makeSampler(5.0f, 0, 1.0f, 7);
  for (int i = 0; i < 1000; ++i) {
    int32_t t = attnrt_sample(hot.get(), logits.data(), 5);
    ASSERT_TRUE(t == 1 || t == 3) << t;
  }
  std::vector<float> allNaN = {nan, nan};
  EXPECT_EQ(attnrt_sample(greedy.get(), allNaN.data(), 2), -1);
  EXPECT_EQ(attnrt_sample(hot.get(), allNaN.data(), 2), -1);
  // All -inf (or NaN): nothing to weigh; sampling falls back to greedy.
  std::vector<float> allMinusInf = {nan, -inf, -inf};
  EXPECT_EQ(attnrt_sample(hot.get(), allMinusInf.data(), 3), 1);
}

TEST(Sampler, InfiniteLogitsWinUniformly) {
  std::vector<float> logits = {0.0f, inf, 5.0f, inf, nan};
  SamplerPtr sampler = makeSampler(1.0f, 0, 1.0f, 3);
  int counts[5] = {};
  for (int i = 0; i < 2000; ++i)
    ++counts[attnrt_sample(sampler.get(), logits.data(), 5)];
  EXPECT_EQ(counts[0] + counts[2] + counts[4], 0);
  EXPECT_GT(counts[1], 800);
  EXPECT_GT(counts[3], 800);
}

TEST(Sampler, InfiniteLogitsStillRankForTopKAndTopP) {
  // Four +inf logits tie and rank by id: top-k 2 keeps ids 1 and 3, top-p
  // 0.5 the first half of them (1 and 3), top-k 3 then top-p 0.3 only id 1.
  std::vector<float> logits = {0.0f, inf, 5.0f, inf, inf, inf};
  struct Case {
    int32_t topK;
    float topP;
    std::vector<int32_t> allowed;
  } cases[] = {{2, 1.0f, {1, 3}}, {0, 0.5f, {1, 3}}, {3, 0.3f, {1}},
               {0, 1.0f, {1, 3, 4, 5}}};
  for (const Case &c : cases) {
    SamplerPtr sampler = makeSampler(1.0f, c.topK, c.topP, 5);
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < 400; ++i)
      ++counts[attnrt_sample(sampler.get(), logits.data(), 6)];
    for (size_t id = 0; id < logits.size(); ++id) {
      bool allowed = std::find(c.allowed.begin(), c.allowed.end(), id) !=
                     c.allowed.end();
      EXPECT_EQ(counts[id] > 0, allowed)
          << "id " << id << " top-k " << c.topK << " top-p " << c.topP;
    }
  }
}

TEST(Sampler, VanishingTemperatureIsGreedy) {
  // 1 / 1e-39 overflows float: the weights must still favour the best
  // logit (it once made every token weigh the same).
  std::vector<float> logits = {0.0f, 3.0f, 1.0f, -2.0f, 2.5f};
  for (float temperature : {1e-39f, 1e-45f, 1e-30f}) {
    for (int32_t topK : {0, 3}) {
      SamplerPtr sampler = makeSampler(temperature, topK, 1.0f, 9);
      for (int i = 0; i < 200; ++i)
        ASSERT_EQ(attnrt_sample(sampler.get(), logits.data(), 5), 1)
            << "temperature " << temperature << " top-k " << topK;
    }
  }
  SamplerPtr nucleus = makeSampler(1e-40f, 0, 0.5f, 9);
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(attnrt_sample(nucleus.get(), logits.data(), 5), 1);
}

TEST(Sampler, RejectsBadCalls) {
  SamplerPtr sampler = makeSampler(1.0f, 0, 1.0f, 0, 4);
  std::vector<float> logits(5, 0.0f);
  EXPECT_EQ(attnrt_sample(sampler.get(), logits.data(), 5), -1)
      << "more logits than the sampler was made for";
  EXPECT_EQ(attnrt_sample(sampler.get(), logits.data(), 0), -1);
  EXPECT_EQ(attnrt_sample(sampler.get(), nullptr, 4), -1);
  EXPECT_EQ(attnrt_sample(nullptr, logits.data(), 4), -1);
}

TEST(Sampler, SameSeedSameTokens) {
  Xoshiro256 rng(99);
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 50; ++i)
    rows.push_back(randomLogits(rng, 300));
  auto draw = [&](uint64_t seed) {
    SamplerPtr sampler = makeSampler(0.9f, 40, 0.95f, seed);
    std::vector<int32_t> tokens;
    for (const auto &row : rows)
      tokens.push_back(attnrt_sample(sampler.get(), row.data(), 300));
    return tokens;
  };
  EXPECT_EQ(draw(5), draw(5));
  EXPECT_NE(draw(5), draw(6));
}

TEST(Sampler, TopKOneAndTinyTopPAreGreedy) {
  Xoshiro256 rng(1);
  SamplerPtr greedy = makeSampler(0.0f, 0, 1.0f, 0);
  SamplerPtr topK1 = makeSampler(2.0f, 1, 1.0f, 11);
  SamplerPtr tinyP = makeSampler(2.0f, 0, 1e-6f, 12);
  for (int i = 0; i < 200; ++i) {
    std::vector<float> row = randomLogits(rng, 1000);
    // A tie for the maximum: greedy and both filters keep the lower index.
    if (i % 10 == 0)
      row[999] = row[500] = 10.0f;
    int32_t expected = attnrt_sample(greedy.get(), row.data(), 1000);
    ASSERT_EQ(attnrt_sample(topK1.get(), row.data(), 1000), expected);
    ASSERT_EQ(attnrt_sample(tinyP.get(), row.data(), 1000), expected);
  }
}

/// Draw `n` tokens and return their frequencies.
std::vector<double> frequencies(attnrt_sampler *sampler,
                                const std::vector<float> &logits, int n) {
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) {
    int32_t t = attnrt_sample(sampler, logits.data(),
                              static_cast<int64_t>(logits.size()));
    EXPECT_GE(t, 0);
    counts[t] += 1.0;
  }
  for (double &c : counts)
    c /= n;
  return counts;
}

/// softmax(logits / temperature) over the kept ids.
std::vector<double> softmax(const std::vector<float> &logits,
                            double temperature, const std::vector<bool> &kept) {
  std::vector<double> p(logits.size(), 0.0);
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    if (kept[i])
      total += p[i] = std::exp(logits[i] / temperature);
  for (double &x : p)
    x /= total;
  return p;
}

// Four-sigma bounds: with 40000 draws a probability p is estimated within
// 4 * sqrt(p (1 - p) / 40000) <= 0.01.
constexpr int draws = 40000;
constexpr double tolerance = 0.01;

TEST(Sampler, TemperatureStatistics) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  std::vector<bool> all(logits.size(), true);
  for (float temperature : {1.0f, 0.5f, 2.0f}) {
    SamplerPtr sampler = makeSampler(temperature, 0, 1.0f, 2024);
    std::vector<double> observed = frequencies(sampler.get(), logits, draws);
    std::vector<double> expected = softmax(logits, temperature, all);
    for (size_t i = 0; i < logits.size(); ++i)
      EXPECT_NEAR(observed[i], expected[i], tolerance)
          << "token " << i << " at temperature " << temperature;
  }
}

TEST(Sampler, TopKStatistics) {
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  SamplerPtr sampler = makeSampler(1.0f, 2, 1.0f, 77);
  std::vector<double> observed = frequencies(sampler.get(), logits, draws);
  std::vector<double> expected =
      softmax(logits, 1.0, {false, true, true, false, false});
  for (size_t i = 0; i < logits.size(); ++i)
    EXPECT_NEAR(observed[i], expected[i], tolerance) << "token " << i;
  EXPECT_EQ(observed[0] + observed[3] + observed[4], 0.0);
}

TEST(Sampler, TopPStatistics) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: top-p 0.75 keeps the first two
  // (0.8 >= 0.75), renormalized to 0.625 / 0.375.
  std::vector<float> logits = {std::log(0.3f), std::log(0.05f), std::log(0.5f),
                               std::log(0.15f)};
  SamplerPtr sampler = makeSampler(1.0f, 0, 0.75f, 8);
  std::vector<double> observed = frequencies(sampler.get(), logits, draws);
  EXPECT_NEAR(observed[2], 0.625, tolerance);
  EXPECT_NEAR(observed[0], 0.375, tolerance);
  EXPECT_EQ(observed[1] + observed[3], 0.0);
}

TEST(Sampler, TopPKeepsALargeNucleus) {
  // Equal logits: the nucleus for 0.9 is the 900 lowest ids (ties rank the
  // lower id first), found by several rounds of partitioning.
  std::vector<float> logits(1000, 1.0f);
  SamplerPtr sampler = makeSampler(1.0f, 0, 0.9f, 5);
  int32_t highest = 0;
  for (int i = 0; i < 5000; ++i) {
    int32_t t = attnrt_sample(sampler.get(), logits.data(), 1000);
    ASSERT_GE(t, 0);
    ASSERT_LT(t, 900);
    highest = std::max(highest, t);
  }
  EXPECT_GT(highest, 800);
}

TEST(Sampler, TopKThenTopP) {
  // top-k 3 keeps {2, 1, 3} (p ∝ e^2, e^1, e^0.5); top-p 0.7 of that keeps
  // {2, 1}: e^2 / (e^2 + e + e^0.5) = 0.63 < 0.7.
  std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  SamplerPtr sampler = makeSampler(1.0f, 3, 0.7f, 31);
  std::vector<double> observed = frequencies(sampler.get(), logits, draws);
  std::vector<double> expected =
      softmax(logits, 1.0, {false, true, true, false, false});
  EXPECT_NEAR(observed[1], expected[1], tolerance);
  EXPECT_NEAR(observed[2], expected[2], tolerance);
  EXPECT_EQ(observed[0] + observed[3] + observed[4], 0.0);
}

} // namespace
