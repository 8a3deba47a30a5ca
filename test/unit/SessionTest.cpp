//===- SessionTest.cpp - prefill, decode, generate, threads ---------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <thread>

using namespace attnrt::test;

namespace {

class SessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    writeFile(path, safetensorsBytes(mockTensors(weights)));
    std::string error;
    model = loadModel(mockLibrary(), path, error);
    ASSERT_NE(model, nullptr) << error;
  }

  SessionPtr newSession() {
    char error[256] = "";
    SessionPtr session(
        attnrt_session_create(model.get(), error, sizeof(error)));
    EXPECT_NE(session, nullptr) << error;
    return session;
  }

  /// One prefill over `tokens` returning every row.
  std::vector<float> prefillAll(attnrt_session *session,
                                const std::vector<int32_t> &tokens) {
    std::vector<float> logits(tokens.size() * mockVocab);
    char error[256] = "";
    EXPECT_EQ(attnrt_prefill(session, tokens.data(),
                             static_cast<int64_t>(tokens.size()), logits.data(),
                             1, error, sizeof(error)),
              ATTNRT_OK)
        << error;
    return logits;
  }

  TempDir dir;
  std::string path = dir.file("model.safetensors");
  MockWeights weights = mockWeights();
  ModelPtr model;
  char error[256] = "";
};

std::vector<float> row(const std::vector<float> &rows, size_t i) {
  return std::vector<float>(rows.begin() + i * mockVocab,
                            rows.begin() + (i + 1) * mockVocab);
}

TEST_F(SessionTest, PrefillRowsMatchTheReference) {
  std::vector<int32_t> tokens = {7, 0, 39, 12, 12, 5};
  SessionPtr session = newSession();
  EXPECT_EQ(attnrt_session_position(session.get()), 0);
  std::vector<float> all = prefillAll(session.get(), tokens);
  EXPECT_EQ(attnrt_session_position(session.get()), 6);
  std::vector<float> expected = mockReference(weights, tokens);
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_NEAR(all[i], expected[i], 1e-5) << i;

  // all_logits = 0 writes exactly one row: the last.
  attnrt_session_reset(session.get());
  EXPECT_EQ(attnrt_session_position(session.get()), 0);
  std::vector<float> last(2 * mockVocab, 123.0f);
  ASSERT_EQ(attnrt_prefill(session.get(), tokens.data(), 6, last.data(), 0,
                           error, sizeof(error)),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(row(last, 0), row(all, 5));
  EXPECT_EQ(row(last, 1), std::vector<float>(mockVocab, 123.0f));
}

TEST_F(SessionTest, PrefillThenDecodeEqualsOnePrefill) {
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  SessionPtr reference = newSession();
  std::vector<float> all = prefillAll(reference.get(), tokens);

  for (size_t split = 1; split < tokens.size(); split += 4) {
    SessionPtr session = newSession();
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + split);
    std::vector<float> rows = prefillAll(session.get(), head);
    std::vector<float> logits(mockVocab);
    for (size_t i = split; i < tokens.size(); ++i) {
      ASSERT_EQ(attnrt_decode(session.get(), tokens[i], logits.data(), error,
                              sizeof(error)),
                ATTNRT_OK)
          << error;
      rows.insert(rows.end(), logits.begin(), logits.end());
    }
    EXPECT_EQ(rows, all) << "split at " << split;
    EXPECT_EQ(attnrt_session_position(session.get()),
              static_cast<int64_t>(tokens.size()));
  }

  // Chunked prefill: three calls continue one sequence.
  SessionPtr chunked = newSession();
  std::vector<float> rows;
  for (size_t start = 0; start < tokens.size(); start += 5) {
    std::vector<int32_t> chunk(tokens.begin() + start,
                               tokens.begin() +
                                   std::min(tokens.size(), start + 5));
    std::vector<float> part = prefillAll(chunked.get(), chunk);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  EXPECT_EQ(rows, all);
}

TEST_F(SessionTest, ResetStartsOver) {
  SessionPtr session = newSession();
  std::vector<float> first = prefillAll(session.get(), {5, 6, 7});
  prefillAll(session.get(), {8, 9});
  attnrt_session_reset(session.get());
  EXPECT_EQ(prefillAll(session.get(), {5, 6, 7}), first);
}

TEST_F(SessionTest, TokenValidation) {
  SessionPtr session = newSession();
  std::vector<float> logits(8 * mockVocab);
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 40, 6};
  EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(), 7, logits.data(), 1,
                           error, sizeof(error)),
            ATTNRT_ERROR_TOKEN);
  EXPECT_STREQ(error, "token 40 at index 5 is outside the vocabulary [0, 40)");
  tokens = {-1};
  EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(), 1, logits.data(), 1,
                           error, sizeof(error)),
            ATTNRT_ERROR_TOKEN);
  EXPECT_STREQ(error, "token -1 at index 0 is outside the vocabulary [0, 40)");
  EXPECT_EQ(
      attnrt_decode(session.get(), 1000, logits.data(), error, sizeof(error)),
      ATTNRT_ERROR_TOKEN);
  EXPECT_STREQ(error, "token 1000 is outside the vocabulary [0, 40)");
  EXPECT_EQ(
      attnrt_decode(session.get(), -7, logits.data(), error, sizeof(error)),
      ATTNRT_ERROR_TOKEN);
  EXPECT_EQ(attnrt_session_position(session.get()), 0)
      << "a rejected call changes nothing";
}

TEST_F(SessionTest, PositionValidation) {
  SessionPtr session = newSession();
  std::vector<int32_t> tokens(mockMaxSeq + 1, 3);
  std::vector<float> logits(tokens.size() * mockVocab);
  EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(), 25, logits.data(), 1,
                           error, sizeof(error)),
            ATTNRT_ERROR_POSITION);
  EXPECT_STREQ(error, "prompt of 25 tokens at position 0 exceeds the context "
                      "of 24 positions");
  EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(), 0, logits.data(), 1,
                           error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_STREQ(error, "prefill needs at least one token, got 0");
  EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(), -3, logits.data(), 1,
                           error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);

  // Fill the context exactly: 20 by prefill, 4 by decode.
  ASSERT_EQ(attnrt_prefill(session.get(), tokens.data(), 20, logits.data(), 0,
                           error, sizeof(error)),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(), 5, logits.data(), 0,
                           error, sizeof(error)),
            ATTNRT_ERROR_POSITION);
  EXPECT_STREQ(error, "prompt of 5 tokens at position 20 exceeds the context "
                      "of 24 positions");
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(
        attnrt_decode(session.get(), 2, logits.data(), error, sizeof(error)),
        ATTNRT_OK)
        << error;
  EXPECT_EQ(attnrt_session_position(session.get()), 24);
  EXPECT_EQ(
      attnrt_decode(session.get(), 2, logits.data(), error, sizeof(error)),
      ATTNRT_ERROR_POSITION);
  EXPECT_STREQ(error, "decode at position 24 exceeds the context of 24 "
                      "positions");
  EXPECT_EQ(attnrt_session_position(session.get()), 24);
}

TEST_F(SessionTest, RefusesAKvCacheLargerThanMemory) {
  // 1 PiB: more than any machine has. Refused before anything is allocated
  // (a zero-filled allocation that size would be the OOM killer's).
  ManifestOverride manifest(mockManifestWith(
      "\"kv_cache\": {\"bytes\": 96}",
      "\"kv_cache\": {\"bytes\": 1125899906842624}"));
  std::string message;
  ModelPtr huge = loadModel(mockLibrary(), path, message);
  ASSERT_NE(huge, nullptr) << message;
  EXPECT_EQ(attnrt_session_create(huge.get(), error, sizeof(error)), nullptr);
  message = error;
  EXPECT_EQ(message.rfind("the KV cache needs 1048576.0 GiB (24 positions), "
                          "more than the ",
                          0),
            0u)
      << message;
  const char *tail = " GiB of memory available (MemAvailable in "
                     "/proc/meminfo); use a smaller context";
  EXPECT_NE(message.find(tail), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST_F(SessionTest, NullArguments) {
  SessionPtr session = newSession();
  int32_t token = 1;
  float logits[mockVocab];
  EXPECT_EQ(attnrt_prefill(nullptr, &token, 1, logits, 0, error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(attnrt_prefill(session.get(), nullptr, 1, logits, 0, error,
                           sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(attnrt_prefill(session.get(), &token, 1, nullptr, 0, nullptr, 0),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(attnrt_decode(session.get(), 1, nullptr, error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(attnrt_decode(nullptr, 1, logits, error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(attnrt_session_create(nullptr, error, sizeof(error)), nullptr);
  attnrt_session_free(nullptr);
  attnrt_session_reset(nullptr);
  EXPECT_EQ(attnrt_session_position(nullptr), 0);
}

TEST_F(SessionTest, GenerateMatchesAManualLoop) {
  std::vector<int32_t> prompt = {4, 8, 15, 16, 23};
  attnrt_sampler_params params = {0.8f, 10, 0.9f, 77};
  SamplerPtr sampler(
      attnrt_sampler_create(&params, mockVocab, error, sizeof(error)));
  ASSERT_NE(sampler, nullptr) << error;
  SessionPtr session = newSession();
  std::vector<int32_t> generated(10, -1);
  ASSERT_EQ(attnrt_generate(session.get(), sampler.get(), prompt.data(), 5,
                            generated.data(), 10, error, sizeof(error)),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(attnrt_session_position(session.get()), 15);

  // By hand, with a fresh sampler of the same seed.
  SamplerPtr again(
      attnrt_sampler_create(&params, mockVocab, error, sizeof(error)));
  SessionPtr manual = newSession();
  std::vector<float> logits(mockVocab);
  ASSERT_EQ(attnrt_prefill(manual.get(), prompt.data(), 5, logits.data(), 0,
                           error, sizeof(error)),
            ATTNRT_OK);
  std::vector<int32_t> expected;
  for (int i = 0; i < 10; ++i) {
    expected.push_back(attnrt_sample(again.get(), logits.data(), mockVocab));
    ASSERT_EQ(attnrt_decode(manual.get(), expected.back(), logits.data(), error,
                            sizeof(error)),
              ATTNRT_OK);
  }
  EXPECT_EQ(generated, expected);

  // The context is checked before anything runs.
  attnrt_session_reset(session.get());
  EXPECT_EQ(attnrt_generate(session.get(), sampler.get(), prompt.data(), 5,
                            generated.data(), 20, error, sizeof(error)),
            ATTNRT_ERROR_POSITION);
  EXPECT_STREQ(error, "prompt of 5 tokens plus 20 generated at position 0 "
                      "exceeds the context of 24 positions");
  EXPECT_EQ(attnrt_session_position(session.get()), 0);
  // A sampler made for a smaller vocabulary cannot sample this model.
  SamplerPtr small(attnrt_sampler_create(&params, 10, error, sizeof(error)));
  EXPECT_EQ(attnrt_generate(session.get(), small.get(), prompt.data(), 5,
                            generated.data(), 1, error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_STREQ(error, "the sampler holds 10 logits, the model has a "
                      "vocabulary of 40");
  // Zero tokens to generate: a prefill only.
  EXPECT_EQ(attnrt_generate(session.get(), sampler.get(), prompt.data(), 5,
                            nullptr, 0, error, sizeof(error)),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(attnrt_session_position(session.get()), 5);
}

/// Prompt + greedy continuation, every logits row kept.
std::vector<float> transcript(attnrt_model *model, int32_t seed) {
  char error[256] = "";
  SessionPtr session(attnrt_session_create(model, error, sizeof(error)));
  std::vector<int32_t> prompt;
  for (int i = 0; i < 6; ++i)
    prompt.push_back((seed * 7 + i * 3) % mockVocab);
  std::vector<float> rows(prompt.size() * mockVocab);
  if (attnrt_prefill(session.get(), prompt.data(), 6, rows.data(), 1, error,
                     sizeof(error)) != ATTNRT_OK)
    return {};
  attnrt_sampler_params params = {1.0f, 0, 1.0f, static_cast<uint64_t>(seed)};
  SamplerPtr sampler(
      attnrt_sampler_create(&params, mockVocab, error, sizeof(error)));
  std::vector<float> logits(mockVocab);
  const float *last = rows.data() + 5 * mockVocab;
  for (int i = 0; i < 18; ++i) {
    int32_t token = attnrt_sample(sampler.get(), last, mockVocab);
    if (attnrt_decode(session.get(), token, logits.data(), error,
                      sizeof(error)) != ATTNRT_OK)
      return {};
    rows.insert(rows.end(), logits.begin(), logits.end());
    last = rows.data() + rows.size() - mockVocab;
  }
  return rows;
}

TEST_F(SessionTest, ConcurrentSessionsMatchSerialRuns) {
  // A second model from the same library with other weights shares nothing
  // mutable with the first.
  std::string otherPath = dir.file("other.safetensors");
  writeFile(otherPath, safetensorsBytes(mockTensors(mockWeights(2))));
  std::string loadError;
  ModelPtr other = loadModel(mockLibrary(), otherPath, loadError);
  ASSERT_NE(other, nullptr) << loadError;

  constexpr int threads = 8;
  constexpr int rounds = 20;
  auto modelFor = [&](int t) { return t % 2 ? other.get() : model.get(); };
  std::vector<std::vector<float>> serial(threads);
  for (int t = 0; t < threads; ++t)
    serial[t] = transcript(modelFor(t), t);

  std::vector<std::vector<std::vector<float>>> results(
      threads, std::vector<std::vector<float>>(rounds));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r)
        results[t][r] = transcript(modelFor(t), t);
    });
  for (std::thread &w : workers)
    w.join();
  for (int t = 0; t < threads; ++t) {
    ASSERT_FALSE(serial[t].empty());
    for (int r = 0; r < rounds; ++r)
      ASSERT_EQ(results[t][r], serial[t]) << "thread " << t << " round " << r;
  }
  EXPECT_NE(serial[0], serial[1]);
}

} // namespace
