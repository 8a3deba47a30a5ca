//===- MatmulSuite.cpp - projection-shaped matrix products -----------------===//
//
// C[M, N] = A[M, K] W^T for the shapes of a transformer's projections, with
// the weight packed as the compiled models hold it. The GEMV (M = 1) streams
// its weights from memory: it cycles through enough copies (>= 1 GiB) that
// no copy is still in cache when it is used again.
//
//===----------------------------------------------------------------------===//

#include "MachineLimits.h"
#include "Suites.h"

#include "attn/Compiler/CompiledModule.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/NativeCodegen.h"

#include "llvm/Support/FormatVariadic.h"

#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

using namespace attn::bench;
using mlir::attn::Buffer2D;
using mlir::attn::Buffer3D;
using mlir::attn::CompiledModule;

namespace {

/// The two OpenBLAS entry points we compare with, loaded at run time.
struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);
  using Sgemv = void (*)(int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);
  using SetThreads = void (*)(int);
  Sgemm sgemm = nullptr;
  Sgemv sgemv = nullptr;
  SetThreads setThreads = nullptr;

  static OpenBlas &get() {
    static OpenBlas blas = [] {
      OpenBlas b;
      void *handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
      if (!handle)
        return b;
      b.sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "cblas_sgemm"));
      b.sgemv = reinterpret_cast<Sgemv>(dlsym(handle, "cblas_sgemv"));
      b.setThreads = reinterpret_cast<SetThreads>(
          dlsym(handle, "openblas_set_num_threads"));
      return b;
    }();
    return blas;
  }
  bool available() const { return sgemm && sgemv && setThreads; }
};

// CBLAS enums.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct Shape {
  int64_t m, k, n;
  /// The packed weight in bf16 (widened to f32 in the kernel).
  bool bf16 = false;

  std::string name() const {
    return llvm::formatv("mm{0}_{1}_{2}", bf16 ? "_bf16" : "", k, n).str();
  }
};

/// A weight of f32 values rounded to bf16 (the top half of each f32, ties to
/// even), as the bits a bf16 memref holds.
std::vector<uint16_t> bf16Values(const std::vector<float> &values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t wide;
    std::memcpy(&wide, &values[i], sizeof wide);
    bits[i] = static_cast<uint16_t>((wide + 0x7FFF + ((wide >> 16) & 1)) >> 16);
  }
  return bits;
}

std::vector<float> randomValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (float &v : values)
    v = dist(rng);
  return values;
}

} // namespace

double attn::bench::medianSeconds(int repeats, const std::function<void()> &run) {
  run();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double attn::bench::Range::median() const {
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string attn::bench::Range::format(int decimals) const {
  if (values.empty())
    return "-";
  auto [low, high] = std::minmax_element(values.begin(), values.end());
  char text[96];
  std::snprintf(text, sizeof(text), "%.*f (%.*f-%.*f)", decimals, median(),
                decimals, *low, decimals, *high);
  return text;
}

void attn::bench::setThreads(int threads) {
  omp_set_num_threads(threads);
  if (OpenBlas::get().available())
    OpenBlas::get().setThreads(threads);
}

void attn::bench::printMachine(const MachineFigures &machine,
                               const BenchOptions &options) {
  std::printf("\n## Machine (best measured in this run; every ratio above is against the best seen before its suite)\n| figure |");
  for (int t : options.threads)
    std::printf(" %d thread%s |", t, t == 1 ? "" : "s");
  std::printf("\n| --- |");
  for (size_t i = 0; i < options.threads.size(); ++i)
    std::printf(" --- |");
  std::printf("\n| fp32 FMA peak (GFLOP/s) |");
  for (int t : options.threads)
    std::printf(" %.0f |", machine.fmaPeak.at(t) / 1e9);
  if (machine.int8Peak.at(options.threads.front()) > 0) {
    std::printf("\n| int8 dot peak (GOP/s; %s) |",
                hostHasAvx512Vnni() ? "vpdpbusd" : "vpmaddubsw");
    for (int t : options.threads)
      std::printf(" %.0f |", machine.int8Peak.at(t) / 1e9);
  }
  if (machine.bf16DotPeak.at(options.threads.front()) > 0) {
    std::printf("\n| bf16 dot peak (GFLOP/s; vdpbf16ps) |");
    for (int t : options.threads)
      std::printf(" %.0f |", machine.bf16DotPeak.at(t) / 1e9);
  }
  if (machine.amxBf16Peak.count(options.threads.front()) &&
      machine.amxBf16Peak.at(options.threads.front()) > 0) {
    std::printf("\n| AMX bf16 tile peak (GFLOP/s; tdpbf16ps) |");
    for (int t : options.threads)
      std::printf(" %.0f |", machine.amxBf16Peak.at(t) / 1e9);
  }
  for (const auto &[bytes, byThreads] : machine.bandwidthAt) {
    std::printf("\n| read bandwidth, %zu MiB (GB/s) |", bytes >> 20);
    for (int t : options.threads)
      std::printf(" %.1f |", byThreads.at(t) / 1e9);
  }
  std::printf("\n");
}

void attn::bench::runMatmulSuite(const MachineFigures &machine,
                                 const BenchOptions &options) {
  const std::vector<Shape> shapes = {
      {128, 768, 2304},       {128, 768, 3072},      {1, 768, 3072},
      {1024, 1024, 1024},     {128, 768, 3072, true}, {1, 768, 3072, true}};
  const int64_t block = 32;
  std::string source;
  std::set<std::string> emitted;
  for (const Shape &s : shapes) {
    if (!emitted.insert(s.name()).second)
      continue;
    int64_t blocks = (s.n + block - 1) / block;
    source += llvm::formatv(R"mlir(
      func.func @{4}(%x: tensor<?x{0}xf32>, %w: tensor<{2}x{0}x{3}x{5}>) -> tensor<?x{1}xf32> {
        %0 = attn.linear %x, %w layout(packed) : tensor<?x{0}xf32>, tensor<{2}x{0}x{3}x{5}> -> tensor<?x{1}xf32>
        return %0 : tensor<?x{1}xf32>
      })mlir", s.k, s.n, blocks, block, s.name(), s.bf16 ? "bf16" : "f32").str();
  }
  std::string error;
  // The host's vector width and int8 dot product (CompiledModule's default).
  mlir::attn::CompileOptions compileOptions;
  std::unique_ptr<CompiledModule> module =
      CompiledModule::compile(source, compileOptions, error);
  if (!module) {
    std::printf("matmul suite: compilation failed: %s\n", error.c_str());
    return;
  }
  OpenBlas &blas = OpenBlas::get();

  std::printf("\n## Matrix products C = A W^T (GFLOP/s; %% of the FMA peak; "
              "GEMV: GB/s of weights, %% of read bandwidth)\n");
  std::printf("| M x K x N (weights) | threads | attn | %% | OpenBLAS | %% |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const Shape &s : shapes) {
    int64_t blocks = (s.n + block - 1) / block;
    bool gemv = s.m == 1;
    // A GEMV reads each weight byte once: cycle through >= 1 GiB of copies.
    size_t weightBytes = size_t(blocks * s.k * block) * (s.bf16 ? 2 : sizeof(float));
    int copies = gemv ? static_cast<int>((size_t(1) << 30) / weightBytes + 1) : 1;
    std::vector<Buffer3D> packed;
    std::vector<mlir::attn::Buffer<uint16_t, 3>> packedBf16;
    std::vector<std::vector<float>> plain;
    // OpenBLAS has no bf16-weight product with f32 activations to compare.
    bool compare = blas.available() && !s.bf16;
    for (int c = 0; c < copies; ++c) {
      std::array<int64_t, 3> shape{blocks, s.k, block};
      std::vector<float> values = randomValues(blocks * s.k * block, 10 + c);
      if (s.bf16)
        packedBf16.emplace_back(bf16Values(values), shape);
      else
        packed.emplace_back(std::move(values), shape);
      if (compare)
        plain.push_back(randomValues(s.n * s.k, 20 + c));
    }
    auto weight = [&](int c) -> void * {
      return s.bf16 ? static_cast<void *>(packedBf16[c].memref()) : packed[c].memref();
    };
    Buffer2D input(randomValues(s.m * s.k, 1), {s.m, s.k});
    Buffer2D output(std::vector<float>(s.m * s.n), {s.m, s.n});
    std::vector<float> blasOut(s.m * s.n);
    std::string name = s.name();
    double flops = 2.0 * s.m * s.k * s.n;
    for (int threads : options.threads) {
      setThreads(threads);
      // One sample is a pass over every copy (one copy when it fits cache).
      double attnTime = medianSeconds(options.repeats, [&] {
        for (int c = 0; c < copies; ++c)
          module->call(name, input.memref(), weight(c), output.memref());
      }) / copies;
      double blasTime = 0;
      if (compare) {
        blasTime = medianSeconds(options.repeats, [&] {
          for (int c = 0; c < copies; ++c) {
            const float *w = plain[c].data();
            if (gemv)
              blas.sgemv(kRowMajor, kNoTrans, s.n, s.k, 1.0f, w, s.k,
                         input.values().data(), 1, 0.0f, blasOut.data(), 1);
            else
              blas.sgemm(kRowMajor, kNoTrans, kTrans, s.m, s.n, s.k, 1.0f,
                         input.values().data(), s.k, w, s.k, 0.0f,
                         blasOut.data(), s.n);
          }
        }) / copies;
      }
      auto cell = [&](double t, double &figure, double &share) {
        if (gemv) {
          figure = weightBytes / t / 1e9;
          share = 100 * figure * 1e9 / machine.bandwidth.at(threads);
        } else {
          figure = flops / t / 1e9;
          share = 100 * figure * 1e9 / machine.fmaPeak.at(threads);
        }
      };
      double attnFigure, attnShare, blasFigure = 0, blasShare = 0;
      cell(attnTime, attnFigure, attnShare);
      if (compare)
        cell(blasTime, blasFigure, blasShare);
      std::printf("| %lld x %lld x %lld %s%s | %d | %.1f | %.0f%% | ",
                  (long long)s.m, (long long)s.k, (long long)s.n,
                  s.bf16 ? "bf16" : "f32", gemv ? " (from memory, GB/s)" : "",
                  threads, attnFigure, attnShare);
      if (compare)
        std::printf("%.1f | %.0f%% |\n", blasFigure, blasShare);
      else
        std::printf("n/a | |\n");
    }
  }
}
