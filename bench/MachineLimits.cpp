//===- MachineLimits.cpp - the FMA peak and read bandwidth of this host ---===//
//
// Measured in the same run as everything else so that ratios compare like
// with like on a shared, noisy machine.
//
//===----------------------------------------------------------------------===//

#include "MachineLimits.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace attn::bench {
namespace {

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// FLOPs of `iterations` rounds of 16 independent 16-lane FMA chains: enough
/// chains to cover FMA latency on two pipes.
__attribute__((target("avx512f"))) double fmaKernelAvx512(int64_t iterations) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i)
    acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 16; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  float sink = 0;
  for (int i = 0; i < 16; ++i)
    sink += _mm512_reduce_add_ps(acc[i]);
  volatile float keep = sink;
  (void)keep;
  return 2.0 * 16 * 16 * static_cast<double>(iterations);
}

/// Integer multiply-adds (counted as 2 ops each, like FLOPs) of `iterations`
/// rounds of 16 independent vpdpbusd chains: 64 byte products per lane group.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double
int8DotKernel(int64_t iterations) {
  __m512i acc[16];
  for (int i = 0; i < 16; ++i)
    acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 16; ++i)
      acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  int64_t sink = 0;
  for (int i = 0; i < 16; ++i)
    sink += _mm512_reduce_add_epi32(acc[i]);
  volatile int64_t keep = sink;
  (void)keep;
  return 2.0 * 16 * 64 * static_cast<double>(iterations);
}

/// The same without VNNI (AVX2): 12 independent chains of vpmaddubsw, 32
/// byte products summed in pairs, added in int16 by vpaddw: the q4_0
/// kernel's inner step (q8_0's also widens each to int32), so the upper
/// bound of both.
__attribute__((target("avx2"))) double int8MaddKernelAvx2(int64_t iterations) {
  __m256i acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_epi16(static_cast<short>(i));
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) {
      // A barrier per chain keeps the compiler from folding the invariant
      // product out of the loop.
      __m256i x = a;
      __asm__ volatile("" : "+x"(x));
      acc[i] = _mm256_add_epi16(acc[i], _mm256_maddubs_epi16(x, b));
    }
  int64_t sink = 0;
  for (int i = 0; i < 12; ++i) {
    alignas(32) int16_t lanes[16];
    _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), acc[i]);
    for (int16_t v : lanes)
      sink += v;
  }
  volatile int64_t keep = sink;
  (void)keep;
  return 2.0 * 12 * 32 * static_cast<double>(iterations);
}

/// FLOPs of `iterations` rounds of 4 independent AMX bf16 tile products
/// (tdpbf16ps: 16 x 16 f32 accumulators += 16 x 32 bf16 times 16 pairs of
/// k rows x 16 outputs, 16384 FLOPs each), the instruction of the bf16
/// prefill kernel; four accumulator tiles cover its latency.
__attribute__((target("amx-tile,amx-bf16"))) double amxBf16Kernel(int64_t iterations) {
  // Palette 1, tiles 0-7 of 16 rows by 64 bytes.
  alignas(64) unsigned char config[64] = {};
  config[0] = 1;
  for (int t = 0; t < 8; ++t) {
    config[16 + 2 * t] = 64;
    config[48 + t] = 16;
  }
  _tile_loadconfig(config);
  alignas(64) uint16_t operand[16 * 32];
  for (int i = 0; i < 16 * 32; ++i)
    operand[i] = 0x3c00 + (i % 7); // bf16 values near 2^-7
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float sums[16 * 16];
  _tile_stored(0, sums, 64);
  _tile_release();
  volatile float keep = sums[0];
  (void)keep;
  return 4.0 * 16384 * static_cast<double>(iterations);
}

/// FLOPs of `iterations` rounds of 16 independent vdpbf16ps chains (16 f32
/// lanes each += two bf16 products), the bf16 prefill kernel's instruction
/// on Zen 4 and 5.
__attribute__((target("avx512f,avx512bf16"))) double bf16DotKernel(int64_t iterations) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i)
    acc[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80); // 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380); // 2^-24
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 16; ++i)
      acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  float sink = 0;
  for (int i = 0; i < 16; ++i)
    sink += _mm512_reduce_add_ps(acc[i]);
  volatile float keep = sink;
  (void)keep;
  return 4.0 * 16 * 16 * static_cast<double>(iterations);
}

__attribute__((target("avx2,fma"))) double fmaKernelAvx2(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  float lanes[8], sink = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_storeu_ps(lanes, acc[i]);
    for (float lane : lanes)
      sink += lane;
  }
  volatile float keep = sink;
  (void)keep;
  return 2.0 * 12 * 8 * static_cast<double>(iterations);
}

/// The ways of reading memory the bandwidth limit takes the best of: one
/// sequential stream per thread, several streams at once (more prefetcher
/// streams and misses in flight), and one stream with software prefetch.
/// A decode kernel reads its weights in whichever pattern is fastest, so
/// the limit must be the best any pattern reaches, or its ratios overshoot.
enum class ReadMethod { OneStream, FourStreams, Prefetch, PrefetchFar };
constexpr ReadMethod kReadMethods[] = {ReadMethod::OneStream, ReadMethod::FourStreams,
                                       ReadMethod::Prefetch, ReadMethod::PrefetchFar};
/// Floats per step of every method: 4 streams x 4 vectors of 16 lanes.
constexpr size_t kReadStep = 256;
/// Software prefetch distances: 2 KiB and 16 KiB ahead of the loads (from
/// a large last-level cache one core reads fastest prefetching far ahead,
/// as the q4_0 decode kernel does).
constexpr size_t kPrefetchFloats = 512, kFarPrefetchFloats = 4096;

size_t prefetchDistance(ReadMethod method) {
  return method == ReadMethod::PrefetchFar ? kFarPrefetchFloats : kPrefetchFloats;
}

/// Sums `count` floats (a multiple of kReadStep) as `method` says, with
/// independent accumulators: bound by memory, not by add latency.
__attribute__((target("avx512f"))) float sumAvx512(const float *data,
                                                   size_t count,
                                                   ReadMethod method) {
  __m512 acc[8];
  for (__m512 &a : acc)
    a = _mm512_setzero_ps();
  if (method == ReadMethod::FourStreams) {
    size_t part = count / 4;
    for (size_t i = 0; i < part; i += 64)
      for (int s = 0; s < 4; ++s)
        for (int j = 0; j < 4; ++j)
          acc[(s * 4 + j) % 8] = _mm512_add_ps(
              acc[(s * 4 + j) % 8], _mm512_load_ps(data + s * part + i + 16 * j));
  } else {
    bool prefetch = method == ReadMethod::Prefetch || method == ReadMethod::PrefetchFar;
    const size_t ahead = prefetchDistance(method);
    for (size_t i = 0; i < count; i += 128) {
      // Every cache line of the step, as the decode kernels prefetch.
      if (prefetch)
        for (int line = 0; line < 8; ++line)
          _mm_prefetch(reinterpret_cast<const char *>(data + i + ahead + 16 * line),
                       _MM_HINT_T0);
      for (int j = 0; j < 8; ++j)
        acc[j] = _mm512_add_ps(acc[j], _mm512_load_ps(data + i + 16 * j));
    }
  }
  for (int j = 1; j < 8; ++j)
    acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2"))) float sumAvx2(const float *data, size_t count,
                                              ReadMethod method) {
  __m256 acc[8];
  for (__m256 &a : acc)
    a = _mm256_setzero_ps();
  if (method == ReadMethod::FourStreams) {
    size_t part = count / 4;
    for (size_t i = 0; i < part; i += 32)
      for (int s = 0; s < 4; ++s)
        for (int j = 0; j < 4; ++j)
          acc[(s * 4 + j) % 8] = _mm256_add_ps(
              acc[(s * 4 + j) % 8], _mm256_load_ps(data + s * part + i + 8 * j));
  } else {
    bool prefetch = method == ReadMethod::Prefetch || method == ReadMethod::PrefetchFar;
    const size_t ahead = prefetchDistance(method);
    for (size_t i = 0; i < count; i += 64) {
      if (prefetch)
        _mm_prefetch(reinterpret_cast<const char *>(data + i + ahead), _MM_HINT_T0);
      for (int j = 0; j < 8; ++j)
        acc[j] = _mm256_add_ps(acc[j], _mm256_load_ps(data + i + 8 * j));
    }
  }
  for (int j = 1; j < 8; ++j)
    acc[0] = _mm256_add_ps(acc[0], acc[j]);
  float lanes[8], total = 0;
  _mm256_storeu_ps(lanes, acc[0]);
  for (float lane : lanes)
    total += lane;
  return total;
}

float sumRange(const float *data, size_t count, ReadMethod method) {
  return __builtin_cpu_supports("avx512f") ? sumAvx512(data, count, method)
                                           : sumAvx2(data, count, method);
}

/// Runs `work` on `threads` threads at once; returns total units / seconds.
template <typename Fn> double parallelRate(int threads, Fn work) {
  std::vector<double> units(threads);
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  double start = 0, end = 0;
  std::atomic<bool> go{false};
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load())
        ;
      units[t] = work(t);
    });
  while (ready.load() != threads)
    ;
  start = seconds();
  go.store(true);
  for (std::thread &thread : pool)
    thread.join();
  end = seconds();
  double total = 0;
  for (double u : units)
    total += u;
  return total / (end - start);
}

/// A compute peak: `run` once on one thread to warm up the frequency, then
/// the best of 5 rounds on `threads` threads (on a shared machine a
/// neighbour only ever lowers the figure, and a low peak would flatter
/// every ratio against it).
template <typename Fn> double bestPeak(int threads, Fn run) {
  run(0);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep)
    best = std::max(best, parallelRate(threads, run));
  return best;
}

} // namespace

bool hostHasAvx512() { return __builtin_cpu_supports("avx512f"); }

bool hostHasAvx512Vnni() {
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
}

double measureInt8DotPeak(int threads) {
  bool vnni = hostHasAvx512Vnni();
  if (!vnni && !__builtin_cpu_supports("avx2"))
    return 0;
  const int64_t iterations = 20'000'000;
  auto run = [&](int) {
    return vnni ? int8DotKernel(iterations) : int8MaddKernelAvx2(iterations);
  };
  return bestPeak(threads, run);
}

double measureBf16DotPeak(int threads) {
  if (!__builtin_cpu_supports("avx512bf16"))
    return 0;
  const int64_t iterations = 40'000'000;
  auto run = [&](int) { return bf16DotKernel(iterations); };
  return bestPeak(threads, run);
}

double measureAmxBf16Peak(int threads) {
#if defined(__linux__) && defined(__x86_64__)
  // Linux grants the tiles' state per process on request
  // (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), as the runtime
  // asks for a library that uses them.
  constexpr long kRequestPermission = 0x1023, kTileData = 18; // asm/prctl.h
  if (syscall(SYS_arch_prctl, kRequestPermission, kTileData) != 0)
    return 0;
  const int64_t iterations = 2'000'000;
  auto run = [&](int) { return amxBf16Kernel(iterations); };
  return bestPeak(threads, run);
#else
  return 0;
#endif
}

double measureFmaPeak(int threads) {
  bool avx512 = hostHasAvx512();
  const int64_t iterations = 40'000'000;
  auto run = [&](int) {
    return avx512 ? fmaKernelAvx512(iterations) : fmaKernelAvx2(iterations);
  };
  return bestPeak(threads, run);
}

double measureReadBandwidth(int threads, size_t bytes) {
  size_t count = bytes / sizeof(float);
  // Room past the end for the prefetches of the last step. In 2 MiB pages
  // where the kernel gives them, as the runtime's weights are: on a VM
  // whose page walks are nested, 4 KiB pages held this probe to 29-31 GB/s
  // on 2 threads while q4_0 decode streamed its weights at 33-36 GB/s.
  constexpr size_t kHugePage = 2 << 20;
  size_t allocated = ((count + 2 * kFarPrefetchFloats) * sizeof(float) + kHugePage - 1) /
                     kHugePage * kHugePage;
  float *data = static_cast<float *>(std::aligned_alloc(kHugePage, allocated));
  (void)madvise(data, allocated, MADV_HUGEPAGE);
  for (size_t i = 0; i < count + 2 * kFarPrefetchFloats; ++i)
    data[i] = 1.0f;
  auto sum = [&](ReadMethod method) {
    return [&, method](int t) {
      size_t begin = count * t / threads / kReadStep * kReadStep,
             end = count * (t + 1) / threads / kReadStep * kReadStep;
      volatile float keep = sumRange(data + begin, end - begin, method);
      (void)keep;
      return static_cast<double>((end - begin) * sizeof(float));
    };
  };
  parallelRate(threads, sum(ReadMethod::OneStream)); // warm the TLB
  // The best of every method and round, as for the FMA peak: a neighbour
  // only lowers a figure, and a low limit flatters every ratio against it.
  double best = 0;
  for (int rep = 0; rep < 3; ++rep)
    for (ReadMethod method : kReadMethods)
      best = std::max(best, parallelRate(threads, sum(method)));
  std::free(data);
  return best;
}

} // namespace attn::bench
