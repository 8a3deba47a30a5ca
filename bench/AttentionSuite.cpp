//===- AttentionSuite.cpp - causal self-attention at long sequences -------===//
//
// GPT-2's attention shape (12 heads of 64) over 1024 and 2048 positions,
// causal, through the flash-attention kernel (attn-lower-attention) and
// through the linalg lowering, as GFLOP/s and a share of the FMA peak. Causal
// attention costs 4 * heads * head_dim FLOPs per (query, visible key) pair:
// a multiply-add for the score and one for the value.
//
// A second table runs the kernel with the position biases of the families
// (ALiBi, sliding windows) next to plain causal attention on the same
// shape, in interleaved rounds: each variant's rate counts only the pairs it
// computes, so a variant that costs more per pair shows as a lower rate.
//
//===----------------------------------------------------------------------===//

#include "Suites.h"

#include "attn/Compiler/CompiledModule.h"
#include "attn/Pipelines/Pipelines.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

using namespace attn::bench;
using mlir::attn::AttnPipelineOptions;
using mlir::attn::Buffer2D;
using mlir::attn::CompiledModule;
using mlir::attn::CompileOptions;

namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64, kFeatures = kHeads * kHeadDim;

/// One function per variant: `@name` with attention options `options`.
struct Variant {
  std::string name, options;
  int64_t window = 0;
};

std::string attentionFunction(const Variant &variant) {
  return llvm::formatv(R"mlir(
    func.func @{2}(%q: tensor<?x{0}xf32>, %k: tensor<?x{0}xf32>, %v: tensor<?x{0}xf32>) -> tensor<?x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads({1}) causal{3} : tensor<?x{0}xf32>, tensor<?x{0}xf32>, tensor<?x{0}xf32> -> tensor<?x{0}xf32>
      return %0 : tensor<?x{0}xf32>
    })mlir", kFeatures, kHeads, variant.name, variant.options).str();
}

std::unique_ptr<CompiledModule>
compileAttention(bool kernel, const std::vector<Variant> &variants) {
  std::string source;
  for (const Variant &variant : variants)
    source += attentionFunction(variant);
  CompileOptions options;
  options.configure = [kernel](AttnPipelineOptions &pipeline) {
    pipeline.attentionKernel = kernel;
  };
  std::string error;
  std::unique_ptr<CompiledModule> module =
      CompiledModule::compile(source, options, error);
  if (!module)
    std::printf("attention suite: compilation failed: %s\n", error.c_str());
  return module;
}

std::vector<float> normalValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> values(n);
  for (float &v : values)
    v = dist(rng);
  return values;
}

/// (query, visible key) pairs of causal attention over `seq` positions,
/// with a window of `window` keys (0: none).
double visiblePairs(int64_t seq, int64_t window) {
  double pairs = 0;
  for (int64_t p = 0; p < seq; ++p)
    pairs += window ? std::min(p + 1, window) : p + 1;
  return pairs;
}

/// ALiBi's slopes for kHeads heads (BLOOM's build_alibi_tensor: 8 heads
/// take 2^-1..2^-8, the other 4 the odd powers of 2^-0.5).
std::string alibiOption() {
  std::string slopes;
  for (int64_t h = 0; h < kHeads; ++h) {
    double slope = h < 8 ? std::pow(2.0, -(h + 1.0))
                         : std::pow(2.0, -0.5 * (2 * (h - 8) + 1));
    slopes += llvm::formatv("{0}{1:e}", h ? ", " : "", slope).str();
  }
  return " alibi([" + slopes + "])";
}

void runBiasTable(const MachineFigures &machine, const BenchOptions &options) {
  constexpr int64_t kSeq = 4096;
  constexpr int kRounds = 5;
  const std::vector<Variant> variants = {
      {"causal", ""},
      {"alibi", alibiOption()},
      {"window1024", " window(1024)", 1024},
      {"window256", " window(256)", 256},
      {"alibi_window1024", " window(1024)" + alibiOption(), 1024}};
  std::unique_ptr<CompiledModule> module = compileAttention(true, variants);
  if (!module)
    return;
  std::vector<float> q = normalValues(kSeq * kFeatures, 4),
                     k = normalValues(kSeq * kFeatures, 5),
                     v = normalValues(kSeq * kFeatures, 6);
  Buffer2D qBuf(q, {kSeq, kFeatures}), kBuf(k, {kSeq, kFeatures}),
      vBuf(v, {kSeq, kFeatures});
  Buffer2D out(std::vector<float>(kSeq * kFeatures), {kSeq, kFeatures});

  std::printf("\n## Position biases on the flash kernel, %lld positions, %lld "
              "heads x %lld: GFLOP/s over the pairs each computes, median "
              "(range) of %d interleaved rounds\n",
              (long long)kSeq, (long long)kHeads, (long long)kHeadDim, kRounds);
  std::printf("| threads |");
  for (const Variant &variant : variants)
    std::printf(" %s |", variant.name.c_str());
  std::printf(" worst vs causal |\n| --- |");
  for (size_t i = 0; i <= variants.size(); ++i)
    std::printf(" --- |");
  std::printf("\n");
  for (int threads : options.threads) {
    setThreads(threads);
    std::vector<Range> rates(variants.size());
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < variants.size(); ++i) {
        double seconds = medianSeconds(std::max(1, options.repeats / 3), [&] {
          module->call(variants[i].name, qBuf.memref(), kBuf.memref(),
                       vBuf.memref(), out.memref());
        });
        double flops = 4.0 * kHeads * kHeadDim *
                       visiblePairs(kSeq, variants[i].window);
        rates[i].values.push_back(flops / seconds / 1e9);
      }
    }
    std::printf("| %d |", threads);
    double worst = 1e300;
    for (size_t i = 0; i < variants.size(); ++i) {
      std::printf(" %s |", rates[i].format(1).c_str());
      worst = std::min(worst, rates[i].median() / rates[0].median());
    }
    std::printf(" %.0f%% (peak %.0f) |\n", 100 * worst,
                machine.fmaPeak.at(threads) / 1e9);
  }
}

} // namespace

void attn::bench::runAttentionSuite(const MachineFigures &machine,
                                    const BenchOptions &options) {
  std::unique_ptr<CompiledModule> kernel = compileAttention(true, {{"causal", ""}});
  std::unique_ptr<CompiledModule> linalg = compileAttention(false, {{"causal", ""}});
  if (!kernel || !linalg)
    return;

  std::printf("\n## Causal self-attention, %lld heads x %lld (GFLOP/s; %% of "
              "the FMA peak)\n",
              (long long)kHeads, (long long)kHeadDim);
  std::printf("| sequence | threads | flash kernel | %% | linalg lowering | %% |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (int64_t seq : {1024, 2048}) {
    std::vector<float> q = normalValues(seq * kFeatures, 1),
                       k = normalValues(seq * kFeatures, 2),
                       v = normalValues(seq * kFeatures, 3);
    Buffer2D qBuf(q, {seq, kFeatures}), kBuf(k, {seq, kFeatures}),
        vBuf(v, {seq, kFeatures});
    Buffer2D out(std::vector<float>(seq * kFeatures), {seq, kFeatures});
    double flops = 4.0 * kHeads * kHeadDim * (seq * (seq + 1) / 2.0);
    for (int threads : options.threads) {
      setThreads(threads);
      auto rate = [&](CompiledModule &module) {
        double seconds = medianSeconds(options.repeats, [&] {
          module.call("causal", qBuf.memref(), kBuf.memref(), vBuf.memref(),
                      out.memref());
        });
        return flops / seconds;
      };
      double fast = rate(*kernel), slow = rate(*linalg);
      double peak = machine.fmaPeak.at(threads);
      std::printf("| %lld | %d | %.1f | %.0f%% | %.1f | %.0f%% |\n",
                  (long long)seq, threads, fast / 1e9, 100 * fast / peak,
                  slow / 1e9, 100 * slow / peak);
    }
  }
  runBiasTable(machine, options);
}
