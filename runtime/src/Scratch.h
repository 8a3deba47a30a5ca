//===- Scratch.h - the temporaries of compiled code, cached per session ---===//
//
// Compiled code allocates its temporaries (activations between kernels)
// through attn_model_set_allocator. A session owns a ScratchCache; while a
// session's prefill or decode runs, the hooks take blocks from it and give
// them back to it. Blocks are binned by power-of-two size and never returned
// to the system while the session lives, so after the first call of a shape
// no page is freshly touched (slow on these machines) and nothing reaches
// malloc. Calls without a session in scope (worker threads, other users of
// the library) fall back to malloc and free.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_SCRATCH_H
#define ATTNRT_SCRATCH_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace attnrt {

class ScratchCache {
public:
  ScratchCache();
  ~ScratchCache();
  ScratchCache(const ScratchCache &) = delete;
  ScratchCache &operator=(const ScratchCache &) = delete;

  /// Bytes held in blocks, in use or cached.
  size_t bytesHeld() const { return held; }

private:
  friend struct ScratchScope;
  friend void *scratchAllocate(uint64_t bytes);
  friend void scratchRelease(void *pointer);

  void *allocate(uint64_t bytes);
  void release(void *block, unsigned bin);

  static constexpr unsigned kBins = 48;
  /// Compiled code allocates on the calling thread; the lock keeps a block
  /// released from a worker thread safe anyway.
  std::mutex mutex;
  std::array<std::vector<void *>, kBins> free;
  std::vector<void *> owned;
  size_t held = 0;
};

/// Makes `cache` the current thread's scratch for its lifetime.
struct ScratchScope {
  explicit ScratchScope(ScratchCache &cache);
  ~ScratchScope();
  ScratchScope(const ScratchScope &) = delete;
  ScratchScope &operator=(const ScratchScope &) = delete;

private:
  ScratchCache *previous;
};

/// The hooks handed to attn_model_set_allocator.
void *scratchAllocate(uint64_t bytes);
void scratchRelease(void *pointer);

} // namespace attnrt

#endif // ATTNRT_SCRATCH_H
