//===- attn-run.cpp - run a compiled model from the command line ----------===//
//
//   attn-run --lib libmodel.so --weights model.safetensors --tokens 1,2,3
//            [--generate N] [--temperature T] [--top-k K] [--top-p P]
//            [--seed S] [--threads N] [--dump-logits out.npy]
//
// Prefills the prompt, then generates N tokens: the first is sampled from the
// prefill's last logits row, and each generated token is fed back with one
// decode call. Prints (parsed by tests):
//   generated: <ids separated by spaces>
//   prefill: <n> tokens in <ms> ms (<tok/s> tok/s)
//   decode: <N> tokens in <ms> ms (<tok/s> tok/s)
// Errors: one line "attn-run: error: ..." on stderr, exit code 1.
//
// A thin main over the runtime's C API; links only libattnrt.
//
//===----------------------------------------------------------------------===//

#include "attnrt/attnrt.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

const char *const usage =
    "usage: attn-run --lib libmodel.so --weights model.safetensors "
    "--tokens 1,2,3\n"
    "                [--generate N] [--temperature T] [--top-k K] [--top-p P]\n"
    "                [--seed S] [--threads N] [--dump-logits out.npy]\n"
    "\n"
    "  --lib PATH          model library built by attn-compile\n"
    "  --weights PATH      safetensors weights matching the library's "
    "manifest\n"
    "  --tokens IDS        prompt token ids, comma separated\n"
    "  --generate N        tokens to generate after the prompt (default 0)\n"
    "  --temperature T     0 = greedy (default); > 0 samples\n"
    "  --top-k K           keep the K most likely tokens (0 = all, default)\n"
    "  --top-p P           nucleus sampling mass in (0, 1] (default 1)\n"
    "  --seed S            sampling seed (default 0)\n"
    "  --threads N         threads the compiled code may use\n"
    "  --dump-logits PATH  write float32 .npy logits, [prompt + N, vocab]\n";

struct Options {
  std::string lib, weights, tokens, dumpLogits;
  bool haveTokens = false;
  int64_t generate = 0;
  float temperature = 0.0f;
  int64_t topK = 0;
  float topP = 1.0f;
  uint64_t seed = 0;
  int64_t threads = 0; // 0: leave the library's default.
};

int fail(const std::string &message) {
  std::fprintf(stderr, "attn-run: error: %s\n", message.c_str());
  return 1;
}

template <typename T> bool parseInteger(std::string_view text, T &value) {
  if (!text.empty() && text[0] == '+')
    text.remove_prefix(1);
  auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && result.ec == std::errc() &&
         result.ptr == text.data() + text.size();
}

bool parseFloat(std::string_view text, float &value) {
  double d;
  auto result = std::from_chars(text.data(), text.data() + text.size(), d);
  if (text.empty() || result.ec != std::errc() ||
      result.ptr != text.data() + text.size() || !std::isfinite(d))
    return false;
  value = static_cast<float>(d);
  return std::isfinite(value);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

/// "1,2,3" -> ids; each item a decimal integer in [0, 2^31).
bool parseTokens(const std::string &text, std::vector<int32_t> &tokens,
                 std::string &error) {
  if (trim(text).empty()) {
    error = "--tokens is empty: the prompt needs at least one token";
    return false;
  }
  std::string_view rest = text;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) {
      error = "malformed --tokens '" + text + "': empty item";
      return false;
    }
    int64_t id;
    if (!parseInteger(item, id)) {
      bool digits = item.find_first_not_of("-+0123456789") == item.npos;
      error = "malformed --tokens '" + text + "': '" + std::string(item) +
              (digits ? "' is out of range" : "' is not an integer");
      return false;
    }
    if (id < 0) {
      error = "token id " + std::to_string(id) + " in --tokens is negative";
      return false;
    }
    if (id > INT32_MAX) {
      error = "token id " + std::to_string(id) + " in --tokens is out of range";
      return false;
    }
    tokens.push_back(static_cast<int32_t>(id));
    if (comma == rest.npos)
      return true;
    rest.remove_prefix(comma + 1);
  }
}

/// Parses argv; returns -1 to continue, otherwise the exit code.
int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg.compare(0, 2, "--") != 0)
      return fail("unexpected argument '" + arg + "' (see --help)");
    std::string name = arg, value;
    bool haveValue = false;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      haveValue = true;
    }
    static const char *const known[] = {
        "--lib",   "--weights", "--tokens", "--generate",    "--temperature",
        "--top-k", "--top-p",   "--seed",   "--dump-logits", "--threads"};
    bool isKnown = false;
    for (const char *k : known)
      isKnown |= name == k;
    if (!isKnown)
      return fail("unknown option '" + name + "' (see --help)");
    if (!haveValue) {
      if (i + 1 >= argc)
        return fail("missing value for " + name);
      value = argv[++i];
    }

    if (name == "--lib") {
      options.lib = value;
    } else if (name == "--weights") {
      options.weights = value;
    } else if (name == "--tokens") {
      options.tokens = value;
      options.haveTokens = true;
    } else if (name == "--dump-logits") {
      options.dumpLogits = value;
      if (value.empty())
        return fail("--dump-logits needs a path");
    } else if (name == "--generate") {
      if (!parseInteger(value, options.generate) || options.generate < 0)
        return fail("--generate must be an integer >= 0, got '" + value + "'");
    } else if (name == "--temperature") {
      if (!parseFloat(value, options.temperature) || options.temperature < 0)
        return fail("--temperature must be a number >= 0, got '" + value + "'");
    } else if (name == "--top-k") {
      if (!parseInteger(value, options.topK) || options.topK < 0 ||
          options.topK > INT32_MAX)
        return fail("--top-k must be an integer >= 0 (0 = all), got '" + value +
                    "'");
    } else if (name == "--top-p") {
      if (!parseFloat(value, options.topP) || !(options.topP > 0) ||
          options.topP > 1)
        return fail("--top-p must be in (0, 1], got '" + value + "'");
    } else if (name == "--seed") {
      if (!parseInteger(value, options.seed))
        return fail("--seed must be an integer in [0, 2^64), got '" + value +
                    "'");
    } else if (name == "--threads") {
      if (!parseInteger(value, options.threads) || options.threads < 1 ||
          options.threads > 4096)
        return fail("--threads must be an integer >= 1, got '" + value + "'");
    }
  }
  if (options.lib.empty())
    return fail("missing --lib (see --help)");
  if (options.weights.empty())
    return fail("missing --weights (see --help)");
  if (!options.haveTokens)
    return fail("missing --tokens (see --help)");
  return -1;
}

struct ModelDeleter {
  void operator()(attnrt_model *m) const { attnrt_model_free(m); }
};
struct SessionDeleter {
  void operator()(attnrt_session *s) const { attnrt_session_free(s); }
};
struct SamplerDeleter {
  void operator()(attnrt_sampler *s) const { attnrt_sampler_free(s); }
};

void printRate(const char *what, int64_t tokens, double seconds) {
  double rate = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  std::printf("%s: %" PRId64 " tokens in %.1f ms (%.1f tok/s)\n", what, tokens,
              seconds * 1e3, rate);
}

int run(int argc, char **argv) {
  Options options;
  int status = parseOptions(argc, argv, options);
  if (status >= 0)
    return status;
  std::vector<int32_t> prompt;
  std::string message;
  if (!parseTokens(options.tokens, prompt, message))
    return fail(message);

  char error[1024];
  std::unique_ptr<attnrt_model, ModelDeleter> model(attnrt_model_load(
      options.lib.c_str(), options.weights.c_str(), error, sizeof(error)));
  if (!model)
    return fail(error);
  // Warnings come one per line, each ending in '\n'.
  for (const char *w = attnrt_model_warnings(model.get()); *w;) {
    const char *end = std::strchr(w, '\n');
    size_t length = end ? static_cast<size_t>(end - w) : std::strlen(w);
    std::fprintf(stderr, "attn-run: warning: %.*s\n", static_cast<int>(length),
                 w);
    w += length + (end ? 1 : 0);
  }
  if (options.threads > 0 &&
      !attnrt_model_set_num_threads(model.get(),
                                    static_cast<int32_t>(options.threads)))
    std::fprintf(stderr, "attn-run: warning: the library does not export "
                         "attn_model_set_num_threads; --threads ignored\n");

  int64_t vocab = attnrt_model_vocab_size(model.get());
  int64_t maxSeq = attnrt_model_max_seq(model.get());
  int64_t promptLength = static_cast<int64_t>(prompt.size());
  for (int64_t i = 0; i < promptLength; ++i)
    if (prompt[i] >= vocab)
      return fail("token " + std::to_string(prompt[i]) + " at index " +
                  std::to_string(i) + " is outside the vocabulary [0, " +
                  std::to_string(vocab) + ")");
  if (promptLength > maxSeq || options.generate > maxSeq - promptLength)
    return fail("prompt of " + std::to_string(promptLength) + " tokens plus " +
                std::to_string(options.generate) +
                " generated exceeds the context of " + std::to_string(maxSeq) +
                " positions");

  attnrt_sampler_params params;
  params.temperature = options.temperature;
  params.top_k = static_cast<int32_t>(options.topK);
  params.top_p = options.topP;
  params.seed = options.seed;
  std::unique_ptr<attnrt_sampler, SamplerDeleter> sampler(
      attnrt_sampler_create(&params, vocab, error, sizeof(error)));
  if (!sampler)
    return fail(error);
  std::unique_ptr<attnrt_session, SessionDeleter> session(
      attnrt_session_create(model.get(), error, sizeof(error)));
  if (!session)
    return fail(error);

  // Every buffer exists before the clock starts. With --dump-logits each
  // call writes its rows in place; otherwise one row is reused.
  bool dump = !options.dumpLogits.empty();
  int64_t rows = dump ? promptLength + options.generate : 1;
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  std::vector<int32_t> generated;
  generated.reserve(static_cast<size_t>(options.generate));
  if (dump) {
    // Fail on an unwritable path now, not after the run.
    FILE *probe = std::fopen(options.dumpLogits.c_str(), "wb");
    if (!probe)
      return fail("cannot write '" + options.dumpLogits +
                  "': " + std::strerror(errno));
    std::fclose(probe);
  }

  using Clock = std::chrono::steady_clock;
  auto prefillStart = Clock::now();
  if (attnrt_prefill(session.get(), prompt.data(), promptLength, logits.data(),
                     dump ? 1 : 0, error, sizeof(error)) != ATTNRT_OK)
    return fail(error);
  auto prefillEnd = Clock::now();

  // Decode time covers sampling too: it is the cost per generated token.
  const float *row =
      dump ? logits.data() + (promptLength - 1) * vocab : logits.data();
  auto decodeStart = Clock::now();
  for (int64_t i = 0; i < options.generate; ++i) {
    int32_t token = attnrt_sample(sampler.get(), row, vocab);
    if (token < 0)
      return fail("every logit is NaN: nothing to sample");
    generated.push_back(token);
    float *out =
        dump ? logits.data() + (promptLength + i) * vocab : logits.data();
    if (attnrt_decode(session.get(), token, out, error, sizeof(error)) !=
        ATTNRT_OK)
      return fail(error);
    row = out;
  }
  auto decodeEnd = Clock::now();

  std::string line = "generated:";
  for (int32_t token : generated)
    line += " " + std::to_string(token);
  std::printf("%s\n", line.c_str());
  printRate("prefill", promptLength,
            std::chrono::duration<double>(prefillEnd - prefillStart).count());
  printRate("decode", options.generate,
            options.generate
                ? std::chrono::duration<double>(decodeEnd - decodeStart).count()
                : 0.0);
  std::fflush(stdout);

  if (dump) {
    int64_t shape[2] = {rows, vocab};
    if (attnrt_npy_write_f32(options.dumpLogits.c_str(), logits.data(), 2,
                             shape, error, sizeof(error)) != ATTNRT_OK)
      return fail(error);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) { return run(argc, argv); }
