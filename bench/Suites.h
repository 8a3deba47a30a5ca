//===- Suites.h - the benchmark suites of attn-bench -------------*- C++ -*-===//

#ifndef ATTN_BENCH_SUITES_H
#define ATTN_BENCH_SUITES_H

#include "ModelWriter.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace attn::bench {

struct BenchOptions {
  int repeats = 7;
  std::vector<int> threads = {1, 2};
  /// Where the model suite writes (and reuses) its random-weight models.
  std::string modelDir = "/tmp/attn-bench-models";
  /// The model suite's attn-make-model presets, in order; PRESET:N takes
  /// the preset's first N layers (a shape too large for the machine whole).
  std::vector<std::string> models = {"llama-110m", "gpt2-small", "qwen3-0.6b",
                                     "gemma3-1b"};
  /// The model suite's weight formats (empty: every one the host runs).
  std::vector<std::string> formats;
  /// What scripts/test-data.sh wrote (tokenizers, texts, the node packages).
  std::string testData = ATTN_TEST_DATA_DIR;
};

/// The machine's limits by thread count: the best measured so far in the run.
struct MachineFigures {
  std::map<int, double> fmaPeak;   // FLOP/s
  std::map<int, double> int8Peak;  // int8 multiply-add ops/s (VNNI or AVX2), 0 without
  std::map<int, double> amxBf16Peak;  // FLOP/s of AMX bf16 tiles, 0 without
  std::map<int, double> bf16DotPeak;  // FLOP/s of vdpbf16ps, 0 without
  /// Read bytes/s: the best over the probe's sizes, the limit every ratio
  /// is against (a model whose weights fit in the last-level cache streams
  /// them from there).
  std::map<int, double> bandwidth;
  /// Per probe size (bytes), per thread count.
  std::map<size_t, std::map<int, double>> bandwidthAt;
};

/// The read-bandwidth probe's buffer sizes: one the last-level cache of a
/// large server part holds (models of 64 MB and more stream at least this
/// far) and one far beyond any cache.
constexpr size_t kBandwidthProbeSizes[] = {size_t(64) << 20, size_t(1) << 30};

/// Figures gathered over interleaved rounds: "median (min-max)".
struct Range {
  std::vector<double> values;
  std::string format(int decimals = 2) const;
  double median() const;
};

/// Median seconds of `repeats` calls of `run` after one warm-up call.
double medianSeconds(int repeats, const std::function<void()> &run);

/// Sets the OpenMP threads of compiled kernels (and of OpenBLAS).
void setThreads(int threads);

/// The model of a --models entry, PRESET or PRESET:N; false with `error`
/// set when it names no preset or N is not in [1, the preset's layers].
bool modelEntrySpec(const std::string &entry, attn::modelgen::ModelSpec &spec,
                    std::string &error);

void printMachine(const MachineFigures &machine, const BenchOptions &options);
void runMatmulSuite(const MachineFigures &machine, const BenchOptions &options);
void runAttentionSuite(const MachineFigures &machine,
                       const BenchOptions &options);
void runModelSuite(const MachineFigures &machine, const BenchOptions &options);
void runTokenizerSuite(const BenchOptions &options);

} // namespace attn::bench

#endif // ATTN_BENCH_SUITES_H
