//===- Suites.h - the benchmark suites of attn-bench -------------*- C++ -*-===//

#ifndef ATTN_BENCH_SUITES_H
#define ATTN_BENCH_SUITES_H

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
  /// What scripts/test-data.sh wrote (tokenizers, texts, the node packages).
  std::string testData = ATTN_TEST_DATA_DIR;
};

/// The machine's limits by thread count: the best measured so far in the run.
struct MachineFigures {
  std::map<int, double> fmaPeak;   // FLOP/s
  std::map<int, double> bandwidth; // bytes/s
};

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

void printMachine(const MachineFigures &machine, const BenchOptions &options);
void runMatmulSuite(const MachineFigures &machine, const BenchOptions &options);
void runAttentionSuite(const MachineFigures &machine,
                       const BenchOptions &options);
void runModelSuite(const MachineFigures &machine, const BenchOptions &options);
void runTokenizerSuite(const BenchOptions &options);

} // namespace attn::bench

#endif // ATTN_BENCH_SUITES_H
