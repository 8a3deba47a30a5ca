//===- AttnRunTest.cpp - the attn-run CLI and the C example ---------------===//
//
// Runs the real binaries (linked against libattnrt.so) on the mock model and
// checks their output format, logits dumps and error reporting.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <filesystem>
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
                const std::vector<std::string> &args,
                const std::string &input = "") {
    std::string command = shellQuote(binary);
    for (const std::string &arg : args)
      command += " " + shellQuote(arg);
    writeFile(dir.file("stdin"), input);
    command += " <" + shellQuote(dir.file("stdin")) + " >" +
               shellQuote(dir.file("stdout")) + " 2>" +
               shellQuote(dir.file("stderr"));
    int status = std::system(command.c_str());
    RunResult result;
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = readFile(dir.file("stdout"));
    result.err = readFile(dir.file("stderr"));
    return result;
  }

  /// attn-run with --lib/--weights for the mock, then `args`.
  RunResult attnRun(std::vector<std::string> args,
                    const std::string &input = "") {
    args.insert(args.begin(), {"--lib", mockLibrary(), "--weights", weights});
    return run(ATTNRT_TEST_ATTN_RUN, args, input);
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

//===----------------------------------------------------------------------===//
// attn-run --chat
//===----------------------------------------------------------------------===//

namespace {

/// A tokenizer of the mock's 40 ids: three special tokens (<u>, <a>, </s>,
/// the end of a turn) and one piece per character of [a-z0-9 ], no merges;
/// its chat template writes "<u>TEXT" for a user turn and "<a>TEXT</s>" for
/// an assistant one.
void writeChatTokenizer(const std::string &folder) {
  std::string vocab = R"({"<u>": 0, "<a>": 1, "</s>": 2)";
  const std::string chars = "abcdefghijklmnopqrstuvwxyz0123456789 ";
  for (size_t i = 0; i < chars.size(); ++i)
    vocab += ", \"" + chars.substr(i, 1) + "\": " + std::to_string(3 + i);
  vocab += "}";
  std::string added;
  const char *special[] = {"<u>", "<a>", "</s>"};
  for (int i = 0; i < 3; ++i)
    added += std::string(i ? ", " : "") + R"({"id": )" + std::to_string(i) +
             R"(, "content": ")" + special[i] +
             R"(", "single_word": false, "lstrip": false, "rstrip": false,
                 "normalized": false, "special": true})";
  std::filesystem::create_directories(folder);
  writeFile(folder + "/tokenizer.json",
            R"({"version": "1.0", "added_tokens": [)" + added +
                R"(], "normalizer": null, "pre_tokenizer": null,
                "post_processor": null, "decoder": {"type": "Fuse"}, "model": {"type": "BPE",
                "vocab": )" + vocab + R"(, "merges": []}})");
  writeFile(folder + "/tokenizer_config.json",
            R"({"eos_token": "</s>", "chat_template": "{% for m in messages %}{% if m.role == 'user' %}<u>{{ m.content }}{% else %}<a>{{ m.content }}</s>{% endif %}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"})");
}

std::vector<int32_t> encode(const attnrt_tokenizer *tokenizer,
                            const std::string &text) {
  std::vector<int32_t> ids(64);
  int64_t n = 0;
  char error[256];
  EXPECT_EQ(attnrt_tokenize(tokenizer, text.data(), text.size(),
                            ATTNRT_TOKENIZE_PARSE_SPECIAL, ids.data(),
                            static_cast<int64_t>(ids.size()), &n, error,
                            sizeof error),
            ATTNRT_OK)
      << error;
  ids.resize(static_cast<size_t>(n));
  return ids;
}

std::string decode(const attnrt_tokenizer *tokenizer,
                   const std::vector<int32_t> &ids) {
  char text[256], error[256];
  size_t length = 0;
  EXPECT_EQ(attnrt_detokenize(tokenizer, ids.data(),
                              static_cast<int64_t>(ids.size()), 1, text,
                              sizeof text, &length, error, sizeof error),
            ATTNRT_OK)
      << error;
  return std::string(text, length);
}

/// The greedy reply to `prompt`: at most n tokens, ending before </s>.
std::vector<int32_t> greedyReply(const std::vector<int32_t> &prompt, int n) {
  std::vector<int32_t> reply = greedyReference(prompt, n);
  for (size_t i = 0; i < reply.size(); ++i)
    if (reply[i] == 2)
      reply.resize(i);
  return reply;
}

} // namespace

TEST_F(AttnRunTest, ChatKeepsTheCacheBetweenTurns) {
  std::string folder = dir.file("chat-tokenizer");
  writeChatTokenizer(folder);
  char error[256];
  std::unique_ptr<attnrt_tokenizer, void (*)(attnrt_tokenizer *)> tokenizer(
      attnrt_tokenizer_load(folder.c_str(), error, sizeof error),
      attnrt_tokenizer_free);
  ASSERT_TRUE(tokenizer) << error;

  RunResult result = attnRun(
      {"--tokenizer", folder, "--chat", "-n", "3", "--verbose"}, "hi\nyo\n");
  ASSERT_EQ(result.exitCode, 0) << result.err;
  std::vector<std::string> out = lines(result.out);
  ASSERT_EQ(out.size(), 2u) << result.out;

  // Turn 1: the prompt "<u>hi<a>", all prefilled.
  std::vector<int32_t> first = encode(tokenizer.get(), "<u>hi<a>");
  ASSERT_EQ(first.size(), 4u);
  std::vector<int32_t> reply1 = greedyReply(first, 3);
  std::string text1 = decode(tokenizer.get(), reply1);
  EXPECT_EQ(out[0], text1);
  // Turn 2: the conversation again, with the reply as the assistant's turn;
  // it extends the cached tokens (the prompt and the reply), so only the
  // rest is prefilled, and the reply equals a fresh greedy run on the whole
  // conversation.
  std::vector<int32_t> second =
      encode(tokenizer.get(), "<u>hi<a>" + text1 + "</s><u>yo<a>");
  std::vector<int32_t> cached = first;
  cached.insert(cached.end(), reply1.begin(), reply1.end());
  ASSERT_TRUE(std::equal(cached.begin(), cached.end(), second.begin()))
      << "the reply '" << text1 << "' does not tokenize back to itself";
  EXPECT_EQ(out[1], decode(tokenizer.get(), greedyReply(second, 3)));
  std::vector<std::string> err = lines(result.err);
  ASSERT_EQ(err.size(), 4u) << result.err;
  EXPECT_EQ(err[0], "chat: turn 1: 4 tokens, 0 cached, 4 prefilled");
  EXPECT_EQ(err[1], "chat: turn 1: " + std::to_string(reply1.size()) +
                        " generated");
  EXPECT_EQ(err[2], "chat: turn 2: " + std::to_string(second.size()) +
                        " tokens, " + std::to_string(cached.size()) +
                        " cached, " +
                        std::to_string(second.size() - cached.size()) +
                        " prefilled");
  EXPECT_GT(cached.size(), first.size());

  // A system message; EOF without a final newline still ends a turn.
  result = attnRun({"--tokenizer", folder, "--chat", "-n", "2", "--system",
                    "be brief", "--verbose"},
                   "hi");
  ASSERT_EQ(result.exitCode, 0) << result.err;
  // The template drops the system turn (it writes only user and assistant).
  EXPECT_EQ(lines(result.out).size(), 1u);

  // Usage errors.
  expectError(attnRun({"--chat"}), "--chat needs MODEL_DIR, or --lib, --weights and --tokenizer DIR");
  expectError(attnRun({"--tokenizer", folder, "--chat", "-p", "x"}),
              "--chat reads its turns from stdin");
  expectError(attnRun({"--tokens", "1", "--system", "x"}), "--system needs --chat");
  expectError(attnRun({"--tokens", "1", "--tokenizer", folder}),
              "--tokenizer is for --chat with --lib");
}
