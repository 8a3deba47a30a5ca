//===- attn-perplexity.cpp - how well a model predicts a text -------------===//
//
//   attn-perplexity MODEL_DIR -f FILE [--ctx N] [--chunks K] [--threads N]
//                   [--save-logits F] [--kl-divergence F]
//
// Like llama.cpp's perplexity tool, with this method: FILE is tokenized once
// (BOS first when the tokenizer adds one); the ids are cut into consecutive
// windows of N (default 256; a last partial window is dropped); each window
// is scored on its own, from an empty KV cache: the negative log-likelihood
// of its tokens 1..N-1 given the tokens before them in the window.
// Perplexity = exp(mean NLL over every scored token); its error is
// llama.cpp's: exp(mean) * sqrt(var / (count - 1)). --chunks K scores the
// first K windows only.
//
// Prints a progress line per window on stderr, then on stdout:
//   perplexity: P +/- E
//   scored: T tokens in W windows of N in S s (R tok/s)
//
// --save-logits F writes every scored position's log-probabilities (float32,
// the format is below); --kl-divergence F compares this run against such a
// file of a base run (same text, context and vocabulary): mean KL(base ||
// this) with its error, median/99%/max, top-1 agreement, both perplexities.
//
// The file: "ATTNLOGP" | u32 version (1) | u32 vocab | u32 ctx | u32 windows
// | i32 tokens[windows * ctx] | then per window, per scored position, vocab
// float32 log-probabilities. Little-endian.
//
//===----------------------------------------------------------------------===//

#include "ProcessGroup.h"
#include "ToolSupport.h"

#include "attn/Support/Version.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/statvfs.h>
#include <thread>
#include <vector>

using namespace attn::tools;

namespace {

const char *const tool = "attn-perplexity";

const char *const usage =
    "usage: attn-perplexity MODEL_DIR -f FILE [--ctx N] [--chunks K] [--threads N]\n"
    "                       [--save-logits F] [--kl-divergence F]\n"
    "\n"
    "  -f, --file FILE        the text to score\n"
    "  --ctx N                window length in tokens (default 256); also the KV\n"
    "                         cache the model is compiled for\n"
    "  --chunks K             score the first K windows only (default: all)\n"
    "  --threads N            threads the compiled code may use\n"
    "  --save-logits F        write the log-probabilities of every scored\n"
    "                         position to F (windows x (N-1) x vocab float32)\n"
    "  --kl-divergence F      compare against a file written by --save-logits\n"
    "  --compiler PATH        the attn-compile to run for MODEL_DIR\n"
    "  --cache-dir DIR        where MODEL_DIR's compiled library is cached\n"
    "  --weight-format F      how the projections are stored: f32 (default; a\n"
    "                         .gguf: the format its tensors call for), bf16,\n"
    "                         q8_0 or q4_0\n"
    "  --head-format F        the output projection's format when not the\n"
    "                         weight format's (as attn-run)\n"
    "  --kv-format F          how the KV cache stores keys and values: f32\n"
    "                         (default), bf16 or f16\n"
    "\n"
    "Under mpirun -np N: the model split N-way tensor parallel; rank 0 scores,\n"
    "prints and writes the files (docs/scale-out.md).\n";

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'L', 'O', 'G', 'P'};
constexpr uint32_t kVersion = 1;

struct Options {
  std::string modelDir, file, saveLogits, klBase;
  int64_t ctx = 256, chunks = -1;
  FolderOptions folder;
};

int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::fputs(attnVersionText(tool).c_str(), stdout);
      return 0;
    }
    if (arg.empty() || arg[0] != '-') {
      if (!options.modelDir.empty())
        return fail(tool, "unexpected argument '" + arg + "' (see --help)");
      options.modelDir = arg;
      continue;
    }
    static const char *const known[] = {"-f",       "--file",        "--ctx",
                                        "--chunks", "--save-logits", "--kl-divergence"};
    bool isKnown = FolderOptions::isOption(arg);
    for (const char *k : known)
      isKnown |= arg == k;
    if (!isKnown)
      return fail(tool, "unknown option '" + arg + "' (see --help)");
    if (i + 1 >= argc)
      return fail(tool, "missing value for " + arg);
    std::string value = argv[++i], error;
    if (FolderOptions::isOption(arg)) {
      if (!options.folder.parse(arg, value, error))
        return fail(tool, error);
    } else if (arg == "-f" || arg == "--file") {
      options.file = value;
    } else if (arg == "--ctx") {
      if (!parseInteger(value, options.ctx) || options.ctx < 2)
        return fail(tool, "--ctx must be an integer >= 2, got '" + value + "'");
    } else if (arg == "--chunks") {
      if (!parseInteger(value, options.chunks) || options.chunks < 1)
        return fail(tool, "--chunks must be an integer >= 1, got '" + value + "'");
    } else if (arg == "--save-logits") {
      options.saveLogits = value;
    } else if (arg == "--kl-divergence") {
      options.klBase = value;
    }
  }
  if (options.modelDir.empty())
    return fail(tool, "missing MODEL_DIR (see --help)");
  if (options.file.empty())
    return fail(tool, "missing -f FILE (see --help)");
  if (!options.saveLogits.empty() && options.saveLogits == options.klBase)
    return fail(tool, "--save-logits and --kl-divergence name the same file");
  return -1;
}

/// log(sum(exp(row))), summed in double. The exponentials are float:
/// vectorized (libmvec, see CMakeLists.txt), each within 1 ulp, and only
/// relative to the row's maximum, so the result is good to ~1e-7 — three
/// orders below what a perplexity comparison needs — at a fraction of a
/// scalar double exp's cost (the whole of Persuasion has 3.9e9 of them).
__attribute__((target_clones("avx512f", "avx2", "default")))
double logSumExp(const float *row, int64_t vocab) {
  float maximum = -INFINITY;
  for (int64_t v = 0; v < vocab; ++v)
    maximum = std::max(maximum, row[v]);
  constexpr int64_t block = 256;
  float terms[block];
  double sum = 0;
  for (int64_t start = 0; start < vocab; start += block) {
    int64_t n = std::min(block, vocab - start);
    for (int64_t k = 0; k < n; ++k)
      terms[k] = std::exp(row[start + k] - maximum);
    float partial = 0;
    for (int64_t k = 0; k < n; ++k)
      partial += terms[k];
    sum += partial;
  }
  return static_cast<double>(maximum) + std::log(sum);
}

/// Mean and llama.cpp's standard error of the mean of `values`.
struct Summary {
  double mean = 0, error = 0;
};
Summary summarize(const std::vector<double> &values) {
  Summary s;
  double n = static_cast<double>(values.size());
  if (values.empty())
    return s;
  double sum = 0, squares = 0;
  for (double v : values) {
    sum += v;
    squares += v * v;
  }
  s.mean = sum / n;
  double variance = squares / n - s.mean * s.mean;
  if (variance > 0 && values.size() > 1)
    s.error = std::sqrt(variance / (n - 1));
  return s;
}

class BinaryFile {
public:
  ~BinaryFile() {
    if (file)
      std::fclose(file);
  }
  bool open(const std::string &path, const char *mode, std::string &error) {
    file = std::fopen(path.c_str(), mode);
    if (!file)
      error = "cannot open '" + path + "': " + std::strerror(errno);
    name = path;
    return file != nullptr;
  }
  bool write(const void *data, size_t bytes, std::string &error) {
    if (std::fwrite(data, 1, bytes, file) == bytes)
      return true;
    error = "cannot write '" + name + "': " + std::strerror(errno);
    return false;
  }
  bool read(void *data, size_t bytes, std::string &error) {
    if (std::fread(data, 1, bytes, file) == bytes)
      return true;
    error = "'" + name + "' ends early (truncated, or not written by "
                         "--save-logits)";
    return false;
  }
  bool close(std::string &error) {
    bool ok = std::fclose(file) == 0;
    file = nullptr;
    if (!ok)
      error = "cannot write '" + name + "': " + std::strerror(errno);
    return ok;
  }

private:
  FILE *file = nullptr;
  std::string name;
};

int run(int argc, char **argv) {
  Options options;
  int status = parseOptions(argc, argv, options);
  if (status >= 0)
    return status;

  // Under mpirun -np N: the model split over N ranks. Every rank prefills
  // rank 0's windows; rank 0 scores them, prints and writes the files. A
  // rank that fails ends the job.
  ProcessGroup group;
  std::string message;
  if (!group.start(&argc, &argv, message))
    return fail(tool, message);

  char error[1024];
  TokenizerPtr tokenizer(
      attnrt_tokenizer_load(options.modelDir.c_str(), error, sizeof(error)));
  if (!tokenizer)
    return group.fail(tool, error);
  std::string text;
  std::vector<int32_t> ids;
  if (!readTextFile(options.file, text, message) ||
      !tokenize(tokenizer.get(), text, ATTNRT_TOKENIZE_DEFAULT,
                "'" + options.file + "'", ids, message))
    return group.fail(tool, message);
  int64_t ctx = options.ctx;
  int64_t windows = static_cast<int64_t>(ids.size()) / ctx;
  if (windows == 0)
    return group.fail(tool, "'" + options.file + "' encodes to " +
                          std::to_string(ids.size()) +
                          " tokens, fewer than one window of " +
                          std::to_string(ctx) + " (--ctx)");
  if (options.chunks > 0)
    windows = std::min(windows, options.chunks);
  if (group.communicator()) {
    // Rank 0's text, so that every rank runs the same windows.
    int64_t count[2] = {static_cast<int64_t>(ids.size()), windows};
    group.broadcast(count, sizeof count);
    ids.resize(static_cast<size_t>(count[0]));
    windows = count[1];
    group.broadcast(ids.data(), count[0] * static_cast<int64_t>(sizeof(int32_t)));
  }

  ModelPtr model(loadModelFolder(tool, options.modelDir, ctx, options.folder, message,
                                 /*inspect=*/false, group.communicator()));
  if (!model)
    return group.fail(tool, message);
  if (!group.waitForLoads(message))
    return group.fail(tool, message);
  int32_t threads = group.threadsFor(options.folder.threads);
  if (threads > 0)
    attnrt_model_set_num_threads(model.get(), threads);
  int64_t vocab = attnrt_model_vocab_size(model.get());
  if (!checkTokenizerFits(tokenizer.get(), model.get(), options.modelDir, message))
    return group.fail(tool, message);
  SessionPtr session(attnrt_session_create(model.get(), error, sizeof(error)));
  if (!session)
    return group.fail(tool, error);
  if (!group.leader()) {
    // The other ranks' share of each window's prefill; rank 0 scores.
    std::vector<float> logits(static_cast<size_t>(ctx * vocab));
    for (int64_t w = 0; w < windows; ++w) {
      attnrt_session_reset(session.get());
      if (attnrt_prefill(session.get(), ids.data() + w * ctx, ctx, logits.data(), 1, error,
                         sizeof(error)) != ATTNRT_OK)
        return group.fail(tool, error);
    }
    return 0;
  }
  int64_t scoredPerWindow = ctx - 1;
  size_t rowBytes = static_cast<size_t>(vocab) * sizeof(float);

  // The log-probabilities file of this run, checked for space up front.
  BinaryFile save, base;
  std::vector<int32_t> windowTokens(ids.begin(), ids.begin() + windows * ctx);
  if (!options.saveLogits.empty()) {
    double bytes = static_cast<double>(windows) * scoredPerWindow * rowBytes;
    struct statvfs fs;
    std::string folder = options.saveLogits.find('/') == std::string::npos
                             ? "."
                             : options.saveLogits.substr(0, options.saveLogits.rfind('/') + 1);
    if (statvfs(folder.c_str(), &fs) == 0 &&
        bytes > static_cast<double>(fs.f_bavail) * fs.f_frsize)
      return group.fail(tool, "--save-logits needs " + std::to_string(bytes / 1e9).substr(0, 5) +
                            " GB (" + std::to_string(windows) + " windows x " +
                            std::to_string(scoredPerWindow) + " positions x " +
                            std::to_string(vocab) + " floats), more than the " +
                            std::to_string(static_cast<double>(fs.f_bavail) * fs.f_frsize / 1e9).substr(0, 5) +
                            " GB free there; use --chunks");
    uint32_t header[4] = {kVersion, static_cast<uint32_t>(vocab),
                          static_cast<uint32_t>(ctx), static_cast<uint32_t>(windows)};
    if (!save.open(options.saveLogits, "wb", message) ||
        !save.write(kMagic, sizeof(kMagic), message) ||
        !save.write(header, sizeof(header), message) ||
        !save.write(windowTokens.data(), windowTokens.size() * sizeof(int32_t), message))
      return group.fail(tool, message);
  }
  if (!options.klBase.empty()) {
    char magic[8];
    uint32_t header[4];
    if (!base.open(options.klBase, "rb", message) ||
        !base.read(magic, sizeof(magic), message) ||
        !base.read(header, sizeof(header), message))
      return group.fail(tool, message);
    if (std::memcmp(magic, kMagic, sizeof(magic)) != 0 || header[0] != kVersion)
      return group.fail(tool, "'" + options.klBase +
                            "' is not a --save-logits file of this version");
    if (header[1] != vocab || header[2] != ctx || header[3] < windows)
      return group.fail(tool, "'" + options.klBase + "' is for vocab " +
                            std::to_string(header[1]) + ", ctx " +
                            std::to_string(header[2]) + ", " +
                            std::to_string(header[3]) + " windows; this run has vocab " +
                            std::to_string(vocab) + ", ctx " + std::to_string(ctx) +
                            ", " + std::to_string(windows) + " windows");
    std::vector<int32_t> baseTokens(static_cast<size_t>(header[3]) * ctx);
    if (!base.read(baseTokens.data(), baseTokens.size() * sizeof(int32_t), message))
      return group.fail(tool, message);
    for (size_t i = 0; i < windowTokens.size(); ++i)
      if (baseTokens[i] != windowTokens[i])
        return group.fail(tool, "'" + options.klBase + "' scored other text: token " +
                              std::to_string(i) + " is " +
                              std::to_string(baseTokens[i]) + " there and " +
                              std::to_string(windowTokens[i]) + " here");
  }

  std::vector<float> logits(static_cast<size_t>(ctx * vocab));
  std::vector<float> row32(static_cast<size_t>(vocab)), base32(static_cast<size_t>(vocab));
  std::vector<double> lses(static_cast<size_t>(ctx));
  std::vector<double> nll, baseNll, kl;
  int64_t agree = 0;
  nll.reserve(static_cast<size_t>(windows * scoredPerWindow));
  double modelSeconds = 0;
  std::fprintf(stderr, "%s: %zu tokens; scoring %" PRId64 " windows of %" PRId64
                       " (%" PRId64 " scored tokens each)\n",
               tool, ids.size(), windows, ctx, scoredPerWindow);
  for (int64_t w = 0; w < windows; ++w) {
    const int32_t *window = ids.data() + w * ctx;
    attnrt_session_reset(session.get());
    auto start = std::chrono::steady_clock::now();
    if (attnrt_prefill(session.get(), window, ctx, logits.data(), 1, error,
                       sizeof(error)) != ATTNRT_OK)
      return group.fail(tool, error);
    modelSeconds += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    // The rows' normalizers on every core (the model's threads are idle
    // now): this is as much work as the prefill of a small model.
    std::vector<std::thread> workers;
    unsigned parts = std::max(1u, std::thread::hardware_concurrency());
    if (threads > 0)
      parts = static_cast<unsigned>(threads);
    for (unsigned p = 0; p < parts; ++p)
      workers.emplace_back([&, p] {
        for (int64_t t = p; t + 1 < ctx; t += parts)
          lses[static_cast<size_t>(t)] = logSumExp(logits.data() + t * vocab, vocab);
      });
    for (std::thread &worker : workers)
      worker.join();
    double windowNll = 0;
    for (int64_t t = 0; t + 1 < ctx; ++t) {
      const float *row = logits.data() + t * vocab;
      double lse = lses[static_cast<size_t>(t)];
      int32_t next = window[t + 1];
      double value = lse - row[next];
      nll.push_back(value);
      windowNll += value;
      // The log-probabilities, rounded to float (what the file stores).
      if (!options.saveLogits.empty() || !options.klBase.empty())
        for (int64_t v = 0; v < vocab; ++v)
          row32[static_cast<size_t>(v)] = static_cast<float>(row[v] - lse);
      if (!options.saveLogits.empty() &&
          !save.write(row32.data(), rowBytes, message))
        return group.fail(tool, message);
      if (!options.klBase.empty()) {
        if (!base.read(base32.data(), rowBytes, message))
          return group.fail(tool, message);
        double divergence = 0;
        int64_t best = 0, baseBest = 0;
        for (int64_t v = 0; v < vocab; ++v) {
          // Both rounded to float the same way: a run against itself is 0.
          double p = base32[static_cast<size_t>(v)];
          double q = row32[static_cast<size_t>(v)];
          divergence += std::exp(p) * (p - q);
          if (row[v] > row[best])
            best = v;
          if (p > base32[static_cast<size_t>(baseBest)])
            baseBest = v;
        }
        kl.push_back(std::max(divergence, 0.0));
        baseNll.push_back(-static_cast<double>(base32[static_cast<size_t>(next)]));
        agree += best == baseBest;
      }
    }
    Summary running = summarize(nll);
    std::fprintf(stderr, "%s: [%" PRId64 "/%" PRId64 "] window perplexity %.4f, "
                         "running %.4f\n",
                 tool, w + 1, windows, std::exp(windowNll / scoredPerWindow),
                 std::exp(running.mean));
  }
  if (!options.saveLogits.empty() && !save.close(message))
    return group.fail(tool, message);

  Summary total = summarize(nll);
  double perplexity = std::exp(total.mean);
  std::printf("perplexity: %.4f +/- %.5f\n", perplexity, perplexity * total.error);
  std::printf("scored: %zu tokens in %" PRId64 " windows of %" PRId64
              " in %.2f s (%.1f tok/s)\n",
              nll.size(), windows, ctx, modelSeconds,
              modelSeconds > 0 ? static_cast<double>(windows * ctx) / modelSeconds : 0.0);
  if (!options.klBase.empty()) {
    Summary divergence = summarize(kl);
    std::vector<double> sorted = kl;
    std::sort(sorted.begin(), sorted.end());
    auto quantile = [&](double q) {
      return sorted[std::min(sorted.size() - 1,
                             static_cast<size_t>(q * static_cast<double>(sorted.size())))];
    };
    double top1 = static_cast<double>(agree) / static_cast<double>(kl.size());
    Summary baseTotal = summarize(baseNll);
    std::printf("base perplexity: %.4f (this run %.4f, ratio %.6f)\n",
                std::exp(baseTotal.mean), perplexity,
                perplexity / std::exp(baseTotal.mean));
    std::printf("kl divergence: mean %.6f +/- %.6f, median %.6f, 99%% %.6f, "
                "max %.6f\n",
                divergence.mean, divergence.error, quantile(0.5), quantile(0.99),
                sorted.back());
    std::printf("top-1 agreement: %.4f%% +/- %.4f%% (%" PRId64 " of %zu)\n",
                100 * top1,
                100 * std::sqrt(top1 * (1 - top1) / static_cast<double>(kl.size())),
                agree, kl.size());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // Between prefills this tool scores on every core; an OpenMP worker of the
  // compiled code that spins for its default 200 ms after each parallel
  // region would take one of them (10.8 s instead of 14.2 s on Persuasion,
  // 2 cores). Read by libomp when the model library loads.
  setenv("KMP_BLOCKTIME", "0", /*overwrite=*/0);
  return run(argc, argv);
}
