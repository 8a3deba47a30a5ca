//===- AttnRunTest.cpp - the attn-run CLI and the C example ---------------===//
//
// Runs the real binaries (linked against libattnrt.so) on the mock model and
// checks their output format, logits dumps and error reporting.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <sys/wait.h>

using namespace attnrt::test;

namespace {

struct RunResult {
  int exitCode = -1;
  std::string out, err;
};

std::string shellQuote(const std::string &arg) {
  std::string quoted = "'";
  for (char c : arg)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

class AttnRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    writeFile(weights, safetensorsBytes(mockTensors(mockWeights())));
  }

  RunResult run(const std::string &binary,
                const std::vector<std::string> &args) {
    std::string command = shellQuote(binary);
    for (const std::string &arg : args)
      command += " " + shellQuote(arg);
    command += " >" + shellQuote(dir.file("stdout")) + " 2>" +
               shellQuote(dir.file("stderr"));
    int status = std::system(command.c_str());
    RunResult result;
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = readFile(dir.file("stdout"));
    result.err = readFile(dir.file("stderr"));
    return result;
  }

  /// attn-run with --lib/--weights for the mock, then `args`.
  RunResult attnRun(std::vector<std::string> args) {
    args.insert(args.begin(), {"--lib", mockLibrary(), "--weights", weights});
    return run(ATTNRT_TEST_ATTN_RUN, args);
  }

  /// Expects exit code 1 and exactly one "attn-run: error: " line containing
  /// `message`.
  void expectError(const RunResult &result, const std::string &message) {
    EXPECT_EQ(result.exitCode, 1) << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("attn-run: error: ", 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
        << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos)
        << "expected '" << message << "' in: " << result.err;
  }

  TempDir dir;
  std::string weights = dir.file("model.safetensors");
};

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> result;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);)
    result.push_back(line);
  return result;
}

std::vector<int32_t> parseGenerated(const std::string &line) {
  std::vector<int32_t> ids;
  std::istringstream stream(line.substr(line.find(':') + 1));
  for (int32_t id; stream >> id;)
    ids.push_back(id);
  return ids;
}

/// Greedy continuation of `prompt` under the reference model.
std::vector<int32_t> greedyReference(std::vector<int32_t> tokens, int n) {
  MockWeights weights = mockWeights();
  std::vector<int32_t> generated;
  for (int i = 0; i < n; ++i) {
    std::vector<float> logits = mockReference(weights, tokens);
    const float *last = logits.data() + logits.size() - mockVocab;
    int32_t best = 0;
    for (int32_t v = 1; v < mockVocab; ++v)
      if (last[v] > last[best])
        best = v;
    generated.push_back(best);
    tokens.push_back(best);
  }
  return generated;
}

TEST_F(AttnRunTest, GreedyGenerationAndOutputFormat) {
  RunResult result = attnRun({"--tokens", "3,1,4", "--generate", "6"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::vector<std::string> out = lines(result.out);
  ASSERT_EQ(out.size(), 3u) << result.out;
  EXPECT_EQ(out[0].rfind("generated: ", 0), 0u);
  EXPECT_EQ(parseGenerated(out[0]), greedyReference({3, 1, 4}, 6));
  std::regex rate(
      R"((prefill|decode): (\d+) tokens in \d+\.\d ms \(\d+\.\d tok/s\))");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(out[1], match, rate)) << out[1];
  EXPECT_EQ(match[1], "prefill");
  EXPECT_EQ(match[2], "3");
  ASSERT_TRUE(std::regex_match(out[2], match, rate)) << out[2];
  EXPECT_EQ(match[1], "decode");
  EXPECT_EQ(match[2], "6");
}

TEST_F(AttnRunTest, NoGeneration) {
  RunResult result = attnRun({"--tokens", "5"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<std::string> out = lines(result.out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], "generated:");
  EXPECT_EQ(out[2], "decode: 0 tokens in 0.0 ms (0.0 tok/s)");
}

TEST_F(AttnRunTest, DumpLogits) {
  std::string dump = dir.file("logits.npy");
  RunResult result =
      attnRun({"--tokens", "7, 8,9", "--generate", "4", "--temperature", "1.3",
               "--seed", "11", "--dump-logits", dump});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<int32_t> generated = parseGenerated(lines(result.out)[0]);
  ASSERT_EQ(generated.size(), 4u);
  float *data = nullptr;
  int64_t shape[4];
  int32_t ndim = 0;
  char error[256] = "";
  ASSERT_EQ(attnrt_npy_read_f32(dump.c_str(), &data, shape, 4, &ndim, error,
                                sizeof(error)),
            ATTNRT_OK)
      << error;
  std::unique_ptr<float, decltype(&attnrt_free)> owned(data, attnrt_free);
  ASSERT_EQ(ndim, 2);
  EXPECT_EQ(shape[0], 7);
  EXPECT_EQ(shape[1], mockVocab);
  // One row per token fed to the model: the prompt, then each generated
  // token.
  std::vector<int32_t> fed = {7, 8, 9};
  fed.insert(fed.end(), generated.begin(), generated.end());
  std::vector<float> expected = mockReference(mockWeights(), fed);
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(data[i], expected[i], 1e-5) << "element " << i;
}

TEST_F(AttnRunTest, SamplingIsReproducible) {
  std::vector<std::string> args = {
      "--tokens", "1,2",     "--generate", "15",     "--temperature",
      "2",        "--top-p", "0.9",        "--seed", "123456789012345"};
  RunResult first = attnRun(args);
  RunResult second = attnRun(args);
  ASSERT_EQ(first.exitCode, 0) << first.err;
  EXPECT_EQ(lines(first.out)[0], lines(second.out)[0]);
  // top-k 1 at any temperature is greedy.
  RunResult topK = attnRun({"--tokens", "1,2", "--generate", "5",
                            "--temperature", "5", "--top-k", "1"});
  ASSERT_EQ(topK.exitCode, 0) << topK.err;
  EXPECT_EQ(parseGenerated(lines(topK.out)[0]), greedyReference({1, 2}, 5));
}

TEST_F(AttnRunTest, ThreadsAndEqualsSyntax) {
  RunResult result = attnRun({"--tokens=2,3", "--generate=2", "--threads=2"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(parseGenerated(lines(result.out)[0]), greedyReference({2, 3}, 2));
}

TEST_F(AttnRunTest, WarningsGoToStderr) {
  std::vector<Tensor> tensors = mockTensors(mockWeights());
  tensors.push_back(f32Tensor("extra", {1}, {0.0f}));
  writeFile(weights, safetensorsBytes(tensors));
  RunResult result = attnRun({"--tokens", "1"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(result.err, "attn-run: warning: weights file '" + weights +
                            "': tensor 'extra' is not used by the model; "
                            "ignored\n");
}

TEST_F(AttnRunTest, Help) {
  RunResult result = run(ATTNRT_TEST_ATTN_RUN, {"--help"});
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_EQ(result.out.rfind("usage: attn-run MODEL_DIR", 0), 0u) << result.out;
  EXPECT_NE(result.out.find("\n       attn-run --lib"), std::string::npos);
}

TEST_F(AttnRunTest, UsageErrors) {
  std::string lib = mockLibrary();
  expectError(run(ATTNRT_TEST_ATTN_RUN, {}), "missing MODEL_DIR or --lib");
  expectError(run(ATTNRT_TEST_ATTN_RUN, {"--lib", lib, "--tokens", "1"}),
              "missing --weights");
  expectError(attnRun({}), "missing --tokens");
  expectError(attnRun({"--tokens", "1", "--bogus", "2"}),
              "unknown option '--bogus'");
  expectError(attnRun({"--tokens", "1", "extra"}),
              "give either MODEL_DIR or --lib and --weights, not both");
  expectError(run(ATTNRT_TEST_ATTN_RUN, {"a", "b"}), "unexpected argument 'b'");
  expectError(attnRun({"-p", "text"}),
              "-p and -f need MODEL_DIR (its tokenizer); with --lib give "
              "--tokens");
  expectError(attnRun({"--tokens", "1", "--ctx", "8"}),
              "--ctx needs MODEL_DIR");
  expectError(attnRun({"--tokens"}), "missing value for --tokens");
  expectError(attnRun({"--tokens", ""}), "--tokens is empty");
  expectError(attnRun({"--tokens", "1,,2"}), "malformed --tokens '1,,2': "
                                             "empty item");
  expectError(attnRun({"--tokens", "1,2,"}), "empty item");
  expectError(attnRun({"--tokens", "1,x"}), "'x' is not an integer");
  expectError(attnRun({"--tokens", "1.5"}), "'1.5' is not an integer");
  expectError(attnRun({"--tokens", "99999999999999999999"}),
              "'99999999999999999999' is out of range");
  expectError(attnRun({"--tokens", "4294967296"}),
              "token id 4294967296 in --tokens is out of range");
  expectError(attnRun({"--tokens", "3,-1"}),
              "token id -1 in --tokens is negative");
  expectError(attnRun({"--tokens", "1", "--generate", "-2"}),
              "--generate must be an integer >= -1 (-1: until the end)");
  expectError(attnRun({"--tokens", "1", "--generate", "two"}),
              "--generate must be an integer >= -1");
  expectError(attnRun({"--tokens", "1", "--temperature", "-0.5"}),
              "--temperature must be a number >= 0, got '-0.5'");
  expectError(attnRun({"--tokens", "1", "--temperature", "nan"}),
              "--temperature must be a number >= 0");
  expectError(attnRun({"--tokens", "1", "--top-p", "0"}),
              "--top-p must be in (0, 1], got '0'");
  expectError(attnRun({"--tokens", "1", "--top-p", "1.01"}),
              "--top-p must be in (0, 1]");
  expectError(attnRun({"--tokens", "1", "--top-k", "-3"}),
              "--top-k must be an integer >= 0");
  expectError(attnRun({"--tokens", "1", "--seed", "-3"}),
              "--seed must be an integer");
  expectError(attnRun({"--tokens", "1", "--threads", "0"}),
              "--threads must be an integer >= 1");
}

TEST_F(AttnRunTest, ModelErrors) {
  expectError(attnRun({"--tokens", "1,40"}),
              "token 40 at index 1 is outside the vocabulary [0, 40)");
  expectError(attnRun({"--tokens", "1,2,3,4", "--generate", "21"}),
              "prompt of 4 tokens plus 21 generated exceeds the context of 24 "
              "positions");
  expectError(
      run(ATTNRT_TEST_ATTN_RUN, {"--lib", dir.file("missing.so"), "--weights",
                                 weights, "--tokens", "1"}),
      "cannot load");
  expectError(run(ATTNRT_TEST_ATTN_RUN,
                  {"--lib", weights, "--weights", weights, "--tokens", "1"}),
              "cannot load");
  expectError(
      run(ATTNRT_TEST_ATTN_RUN, {"--lib", mockLibraryNoDecode(), "--weights",
                                 weights, "--tokens", "1"}),
      "does not export attn_model_decode");
  expectError(attnRun({"--tokens", "1", "--weights", dir.file("none")}),
              "cannot open: No such file or directory");
  std::vector<Tensor> tensors = mockTensors(mockWeights());
  tensors[1].shape = {3, 12};
  writeFile(weights, safetensorsBytes(tensors));
  expectError(attnRun({"--tokens", "1"}),
              "tensor 'h.0.mix.weight' has shape [3, 12], the model expects "
              "[6, 6]");
}

TEST_F(AttnRunTest, UnwritableDumpPath) {
  std::string dump = dir.file("no-such-dir/out.npy");
  expectError(attnRun({"--tokens", "1", "--dump-logits", dump}),
              "cannot write '" + dump + "': No such file or directory");
}

TEST_F(AttnRunTest, GenerateUntilTheContextIsFull) {
  // -1: as many tokens as the context holds after the prompt (24 - 4).
  RunResult result = attnRun({"--tokens", "1,2,3,4", "--generate", "-1"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_EQ(parseGenerated(lines(result.out)[0]).size(), 20u) << result.out;
}

TEST_F(AttnRunTest, CExampleRuns) {
  // docs/runtime.md's example, text in and text out, on the trained LLaMA
  // model of ../shared (compiled on first use into a cache of this test).
  std::string model = std::string(ATTN_SHARED_DIR) + "/models/austen-llama";
  if (readFile(model + "/config.json").empty()) {
    if (const char *ci = std::getenv("CI"); ci && std::string(ci) == "true")
      FAIL() << model << " is missing: CI must run this test";
    GTEST_SKIP() << model << " is missing";
  }
  std::string prompt = "It is a truth universally acknowledged";
  RunResult result = run("/usr/bin/env", {"XDG_CACHE_HOME=" + dir.file("cache"),
                                          ATTNRT_TEST_C_EXAMPLE, model, prompt});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  // The prompt, then sampled words.
  EXPECT_EQ(result.out.rfind(prompt, 0), 0u) << result.out;
  EXPECT_TRUE(std::regex_search(result.out.substr(prompt.size()),
                                std::regex("[a-z]+ [a-z]+ [a-z]+")))
      << result.out;
  RunResult failure =
      run(ATTNRT_TEST_C_EXAMPLE, {dir.file("nothing"), prompt});
  EXPECT_EQ(failure.exitCode, 1);
  EXPECT_NE(failure.err.find("nothing': config.json: cannot open"), std::string::npos)
      << failure.err;
}

} // namespace
