//===- ModelStressTest.cpp - a real compiled model under load -------------===//
//
// The runtime with a tiny LLaMA compiled by attn-compile (not the mock):
//  - several sessions of one loaded model, driven from several threads at
//    once, produce exactly the tokens (and logits) of the same runs done one
//    at a time; scripts/sanitize.sh also runs this under ThreadSanitizer;
//  - 10,000 generated tokens with the context reused (attnrt_session_reset)
//    keep heap and resident memory flat: no allocation, no leak per token,
//    per reset or per session.
//
// The model comes from ATTNRT_STRESS_LIB / ATTNRT_STRESS_WEIGHTS when set
// (the sanitizer builds pass a model compiled by another build), otherwise
// from the one this build compiles (target attnrt-stress-model).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "attnrt/attnrt.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <malloc.h>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ATTN_SANITIZER_ALLOCATOR 1
#include <sanitizer/allocator_interface.h>
#endif
#endif

// Counts heap allocations and the bytes live on the heap: the sanitizer
// allocator's hooks and counters under ASan/TSan; otherwise the allocation
// functions are replaced in this executable (glibc supports that, and every
// library, the compiled model and the OpenMP runtime included, then calls
// them), forwarding to glibc's and adding up malloc_usable_size. glibc's own
// mallinfo2 is no use here: it counts blocks parked in the per-thread
// caches as in use.
static std::atomic<long> allocationCount{0};

#ifdef ATTN_SANITIZER_ALLOCATOR
static void countAllocation(const volatile void *, size_t) {
  allocationCount.fetch_add(1, std::memory_order_relaxed);
}
static void ignoreFree(const volatile void *) {}
static const int installHooks =
    __sanitizer_install_malloc_and_free_hooks(countAllocation, ignoreFree);

static size_t heapInUse() { return __sanitizer_get_current_allocated_bytes(); }
#else
static std::atomic<long long> liveBytes{0};

extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void *__libc_memalign(size_t, size_t);
extern "C" void __libc_free(void *);

static void *counted(void *pointer) {
  if (pointer) {
    allocationCount.fetch_add(1, std::memory_order_relaxed);
    liveBytes.fetch_add(static_cast<long long>(malloc_usable_size(pointer)),
                        std::memory_order_relaxed);
  }
  return pointer;
}

extern "C" void *malloc(size_t size) { return counted(__libc_malloc(size)); }
extern "C" void *calloc(size_t count, size_t size) {
  return counted(__libc_calloc(count, size));
}
extern "C" void *memalign(size_t alignment, size_t size) {
  return counted(__libc_memalign(alignment, size));
}
extern "C" void *aligned_alloc(size_t alignment, size_t size) {
  return counted(__libc_memalign(alignment, size));
}
extern "C" int posix_memalign(void **out, size_t alignment, size_t size) {
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  void *pointer = counted(__libc_memalign(alignment, size));
  if (!pointer)
    return ENOMEM;
  *out = pointer;
  return 0;
}
extern "C" void free(void *pointer) {
  if (pointer)
    liveBytes.fetch_sub(static_cast<long long>(malloc_usable_size(pointer)),
                        std::memory_order_relaxed);
  __libc_free(pointer);
}
extern "C" void *realloc(void *pointer, size_t size) {
  long long before =
      pointer ? static_cast<long long>(malloc_usable_size(pointer)) : 0;
  void *moved = __libc_realloc(pointer, size);
  if (moved) {
    allocationCount.fetch_add(1, std::memory_order_relaxed);
    liveBytes.fetch_add(static_cast<long long>(malloc_usable_size(moved)) -
                            before,
                        std::memory_order_relaxed);
  } else if (pointer && size == 0) {
    liveBytes.fetch_sub(before, std::memory_order_relaxed);
  }
  return moved;
}

static size_t heapInUse() { return static_cast<size_t>(liveBytes.load()); }
#endif

namespace {

// The C API handles' RAII types (only the header: this test does not link
// the unit tests' helpers).
using attnrt::test::ModelPtr;
using attnrt::test::SamplerPtr;
using attnrt::test::SessionPtr;

std::string setting(const char *env, const char *fallback) {
  const char *value = std::getenv(env);
  return value && *value ? value : fallback;
}

ModelPtr loadModel() {
  std::string lib = setting("ATTNRT_STRESS_LIB", ATTNRT_STRESS_MODEL_DIR
                            "/libmodel.so");
  std::string weights = setting("ATTNRT_STRESS_WEIGHTS", ATTNRT_STRESS_MODEL_DIR
                                "/model.safetensors");
  char error[1024] = "";
  ModelPtr model(
      attnrt_model_load(lib.c_str(), weights.c_str(), error, sizeof(error)));
  EXPECT_NE(model, nullptr) << error;
  return model;
}

size_t residentBytes() {
  long pages = 0, resident = 0;
  FILE *statm = std::fopen("/proc/self/statm", "r");
  if (!statm)
    return 0;
  if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2)
    resident = 0;
  std::fclose(statm);
  return static_cast<size_t>(resident) *
         static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

/// One generation: the prompt, then `steps` sampled tokens each fed back
/// with a decode. Every logits row is kept.
struct Transcript {
  std::vector<int32_t> tokens;
  std::vector<float> logits;
  std::string error;
};

Transcript runOnce(attnrt_model *model, int seed, int steps) {
  Transcript t;
  char error[512] = "";
  int64_t vocab = attnrt_model_vocab_size(model);
  SessionPtr session(attnrt_session_create(model, error, sizeof(error)));
  // Seeds alternate greedy and sampled runs, with different prompts.
  attnrt_sampler_params params = {seed % 2 ? 0.9f : 0.0f, seed % 3 ? 20 : 0,
                                  seed % 4 ? 0.95f : 1.0f,
                                  static_cast<uint64_t>(seed)};
  SamplerPtr sampler(attnrt_sampler_create(&params, vocab, error,
                                           sizeof(error)));
  if (!session || !sampler) {
    t.error = error;
    return t;
  }
  std::vector<int32_t> prompt;
  for (int i = 0; i < 5; ++i)
    prompt.push_back(static_cast<int32_t>((seed * 13 + i * 7 + 1) % vocab));
  std::vector<float> rows(prompt.size() * vocab);
  if (attnrt_prefill(session.get(), prompt.data(),
                     static_cast<int64_t>(prompt.size()), rows.data(), 1, error,
                     sizeof(error)) != ATTNRT_OK) {
    t.error = error;
    return t;
  }
  t.logits = rows;
  std::vector<float> row(rows.end() - vocab, rows.end());
  for (int i = 0; i < steps; ++i) {
    int32_t token = attnrt_sample(sampler.get(), row.data(), vocab);
    t.tokens.push_back(token);
    if (attnrt_decode(session.get(), token, row.data(), error,
                      sizeof(error)) != ATTNRT_OK) {
      t.error = error;
      return t;
    }
    t.logits.insert(t.logits.end(), row.begin(), row.end());
  }
  // The convenience loop over the same prompt: same sampler contract, so
  // the same tokens from a fresh sampler with the same seed.
  SamplerPtr again(attnrt_sampler_create(&params, vocab, error,
                                         sizeof(error)));
  attnrt_session_reset(session.get());
  std::vector<int32_t> generated(static_cast<size_t>(steps));
  if (attnrt_generate(session.get(), again.get(), prompt.data(),
                      static_cast<int64_t>(prompt.size()), generated.data(),
                      steps, error, sizeof(error)) != ATTNRT_OK) {
    t.error = error;
    return t;
  }
  if (generated != t.tokens)
    t.error = "attnrt_generate differs from the prefill/decode loop";
  return t;
}

TEST(ModelStress, ConcurrentSessionsMatchSerialRuns) {
  ModelPtr model = loadModel();
  ASSERT_NE(model, nullptr);
  int64_t maxSeq = attnrt_model_max_seq(model.get());
  ASSERT_GE(maxSeq, 16);
  const int steps = static_cast<int>(std::min<int64_t>(40, maxSeq - 5));
  constexpr int threads = 4;
  constexpr int rounds = 6;

  std::vector<Transcript> serial;
  for (int t = 0; t < threads; ++t) {
    serial.push_back(runOnce(model.get(), t, steps));
    ASSERT_EQ(serial.back().error, "") << "thread " << t;
    ASSERT_EQ(serial.back().tokens.size(), static_cast<size_t>(steps));
  }
  EXPECT_NE(serial[0].tokens, serial[1].tokens)
      << "runs that differ make the comparison meaningful";

  // Every thread starts at once and runs its transcript `rounds` times on
  // fresh sessions of the one shared model.
  std::vector<std::vector<Transcript>> results(threads);
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      ++ready;
      while (ready.load() < threads)
        std::this_thread::yield();
      for (int r = 0; r < rounds; ++r)
        results[t].push_back(runOnce(model.get(), t, steps));
    });
  for (std::thread &w : workers)
    w.join();

  for (int t = 0; t < threads; ++t) {
    for (int r = 0; r < rounds; ++r) {
      const Transcript &got = results[t][r];
      ASSERT_EQ(got.error, "") << "thread " << t << " round " << r;
      ASSERT_EQ(got.tokens, serial[t].tokens)
          << "thread " << t << " round " << r;
      ASSERT_EQ(got.logits.size(), serial[t].logits.size());
      for (size_t i = 0; i < got.logits.size(); ++i)
        ASSERT_NEAR(got.logits[i], serial[t].logits[i], 1e-5f)
            << "thread " << t << " round " << r << " logit " << i;
    }
  }
}

TEST(ModelStress, TenThousandTokensInFlatMemory) {
  ModelPtr model = loadModel();
  ASSERT_NE(model, nullptr);
  int64_t vocab = attnrt_model_vocab_size(model.get());
  int64_t maxSeq = attnrt_model_max_seq(model.get());
  char error[512] = "";
  SessionPtr session(attnrt_session_create(model.get(), error, sizeof(error)));
  ASSERT_NE(session, nullptr) << error;
  attnrt_sampler_params params = {0.8f, 40, 0.95f, 1234};
  SamplerPtr sampler(
      attnrt_sampler_create(&params, vocab, error, sizeof(error)));
  ASSERT_NE(sampler, nullptr) << error;
  std::vector<float> logits(static_cast<size_t>(vocab));
  const int32_t prompt[4] = {1, 2, 3, 4};

  // Generates `total` tokens: decode until the context is full, then reset
  // and prefill the prompt again (context reuse).
  int64_t resets = 0;
  auto generate = [&](int64_t total) {
    for (int64_t done = 0; done < total;) {
      if (attnrt_session_position(session.get()) == 0 ||
          attnrt_session_position(session.get()) >= maxSeq) {
        attnrt_session_reset(session.get());
        ++resets;
        if (attnrt_prefill(session.get(), prompt, 4, logits.data(), 0, error,
                           sizeof(error)) != ATTNRT_OK)
          return false;
      }
      int32_t token = attnrt_sample(sampler.get(), logits.data(), vocab);
      if (token < 0 || token >= vocab ||
          attnrt_decode(session.get(), token, logits.data(), error,
                        sizeof(error)) != ATTNRT_OK)
        return false;
      ++done;
    }
    return true;
  };

  // Warm up (first touches, lazy binding), then measure.
  ASSERT_TRUE(generate(2 * maxSeq)) << error;
  size_t heapBefore = heapInUse(), rssBefore = residentBytes();
  long allocationsBefore = allocationCount.load();
  constexpr int64_t tokens = 10000;
  resets = 0;
  ASSERT_TRUE(generate(tokens)) << error;
  long allocations = allocationCount.load() - allocationsBefore;
  size_t heapAfter = heapInUse(), rssAfter = residentBytes();

  // Sessions and samplers made and freed over and over return everything.
  for (int i = 0; i < 1000; ++i) {
    SessionPtr s(attnrt_session_create(model.get(), error, sizeof(error)));
    SamplerPtr p(attnrt_sampler_create(&params, vocab, error, sizeof(error)));
    ASSERT_TRUE(s && p) << error;
    int32_t token = 7;
    ASSERT_EQ(attnrt_prefill(s.get(), &token, 1, logits.data(), 0, error,
                             sizeof(error)),
              ATTNRT_OK)
        << error;
  }
  size_t heapCycled = heapInUse();

  long long heapGrowth = static_cast<long long>(heapAfter) -
                         static_cast<long long>(heapBefore);
  long long cycleGrowth = static_cast<long long>(heapCycled) -
                          static_cast<long long>(heapAfter);
  long long rssGrowth = static_cast<long long>(rssAfter) -
                        static_cast<long long>(rssBefore);
  std::printf("%lld tokens, %lld resets: heap %zu -> %zu bytes (%+lld), "
              "after 1000 sessions %zu (%+lld); RSS %zu -> %zu KiB (%+lld "
              "KiB); %ld allocations (%.1f per token, all freed)\n",
              static_cast<long long>(tokens), static_cast<long long>(resets),
              heapBefore, heapAfter, heapGrowth, heapCycled, cycleGrowth,
              rssBefore >> 10, rssAfter >> 10, rssGrowth / 1024, allocations,
              static_cast<double>(allocations) / tokens);
  RecordProperty("heap_growth_bytes", std::to_string(heapGrowth));
  RecordProperty("rss_growth_kib", std::to_string(rssGrowth / 1024));
  RecordProperty("allocations", std::to_string(allocations));
  // Nothing is kept: the bytes in use are the same after 10,000 tokens, and
  // a freed session or sampler returns every byte.
  EXPECT_EQ(heapGrowth, 0) << "bytes allocated and kept while generating";
  EXPECT_LE(cycleGrowth, 0) << "bytes kept by freed sessions/samplers";
#ifndef ATTN_SANITIZER_ALLOCATOR
  // RSS may wobble by a few pages (stack, allocator bookkeeping), nothing
  // that grows with tokens. Not under ASan: its quarantine holds freed
  // blocks (up to 256 MiB) by design.
  EXPECT_LT(rssGrowth, 1 << 20) << "resident memory grew while generating";
#endif
}

// The design says compiled code never calls malloc on the hot path and the
// runtime's prefill/decode/sampling allocate nothing. Compiled code takes its
// temporaries from the session's scratch cache (attn_model_set_allocator),
// which allocates only the first time a shape runs: after one warm-up decode
// no decode reaches malloc. (This also needs the model's parallel loops to
// avoid __kmpc_for_static_init, which mallocs in Debian's libomp build;
// attn-parallel-to-openmp does.)
TEST(ModelStress, DecodeAllocatesNothing) {
  ModelPtr model = loadModel();
  ASSERT_NE(model, nullptr);
  int64_t vocab = attnrt_model_vocab_size(model.get());
  char error[512] = "";
  SessionPtr session(attnrt_session_create(model.get(), error, sizeof(error)));
  ASSERT_NE(session, nullptr) << error;
  std::vector<float> logits(static_cast<size_t>(vocab));
  int32_t token = 3;
  ASSERT_EQ(attnrt_prefill(session.get(), &token, 1, logits.data(), 0, error,
                           sizeof(error)),
            ATTNRT_OK)
      << error;
  // The first decode fills the scratch cache for the decode shapes.
  ASSERT_EQ(attnrt_decode(session.get(), token, logits.data(), error,
                          sizeof(error)),
            ATTNRT_OK)
      << error;
  long before = allocationCount.load();
  for (int i = 0; i < 16; ++i)
    ASSERT_EQ(attnrt_decode(session.get(), token, logits.data(), error,
                            sizeof(error)),
              ATTNRT_OK)
        << error;
  EXPECT_EQ(allocationCount.load() - before, 0)
      << "heap allocations during 16 decode calls";
}

} // namespace
