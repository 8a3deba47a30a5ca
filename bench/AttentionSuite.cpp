//===- AttentionSuite.cpp - causal self-attention at long sequences -------===//
//
// GPT-2's attention shape (12 heads of 64) over 1024 and 2048 positions,
// causal, through the flash-attention kernel (attn-lower-attention) and
// through the linalg lowering, as GFLOP/s and a share of the FMA peak. Causal
// attention costs 4 * heads * head_dim FLOPs per (query, visible key) pair:
// a multiply-add for the score and one for the value.
//
//===----------------------------------------------------------------------===//

#include "Suites.h"

#include "attn/Compiler/CompiledModule.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/NativeCodegen.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <random>

using namespace attn::bench;
using mlir::attn::AttnPipelineOptions;
using mlir::attn::Buffer2D;
using mlir::attn::CompiledModule;
using mlir::attn::CompileOptions;

namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64, kFeatures = kHeads * kHeadDim;

std::unique_ptr<CompiledModule> compileAttention(bool kernel) {
  std::string source = llvm::formatv(R"mlir(
    func.func @causal(%q: tensor<?x{0}xf32>, %k: tensor<?x{0}xf32>, %v: tensor<?x{0}xf32>) -> tensor<?x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads({1}) causal : tensor<?x{0}xf32>, tensor<?x{0}xf32>, tensor<?x{0}xf32> -> tensor<?x{0}xf32>
      return %0 : tensor<?x{0}xf32>
    })mlir", kFeatures, kHeads).str();
  CompileOptions options;
  options.configure = [kernel](AttnPipelineOptions &pipeline) {
    pipeline.attentionKernel = kernel;
    pipeline.vectorWidth = mlir::attn::hostVectorWidth();
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

} // namespace

void attn::bench::runAttentionSuite(const MachineFigures &machine,
                                    const BenchOptions &options) {
  std::unique_ptr<CompiledModule> kernel = compileAttention(true);
  std::unique_ptr<CompiledModule> linalg = compileAttention(false);
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
}
