//===- Scratch.cpp - the temporaries of compiled code, cached per session -===//

#include "Scratch.h"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

using namespace attnrt;

namespace {

/// Every block starts with this header; the caller's pointer follows it.
struct alignas(64) BlockHeader {
  /// The ScratchCache that owns the block, or null for a malloc block.
  ScratchCache *owner;
  unsigned bin;
};

thread_local ScratchCache *current = nullptr;

constexpr size_t kMinBlock = 256;

unsigned binOf(uint64_t bytes) {
  unsigned bin = 0;
  while ((uint64_t(kMinBlock) << bin) < bytes)
    ++bin;
  return bin;
}

} // namespace

ScratchCache::ScratchCache() {
  // Room for the blocks a model typically keeps per bin, so that caching a
  // released block does not allocate.
  for (std::vector<void *> &bin : free)
    bin.reserve(32);
}

ScratchCache::~ScratchCache() {
  for (void *block : owned)
    std::free(block);
}

void *ScratchCache::allocate(uint64_t bytes) {
  uint64_t total = bytes + sizeof(BlockHeader);
  if (total < bytes)
    return nullptr;
  unsigned bin = binOf(total);
  if (bin >= kBins)
    return nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  void *block;
  if (!free[bin].empty()) {
    block = free[bin].back();
    free[bin].pop_back();
  } else {
    size_t size = size_t(kMinBlock) << bin;
    size_t alignment = size >= (size_t(4) << 20) ? (size_t(2) << 20) : 64;
    if (posix_memalign(&block, alignment, size) != 0)
      return nullptr;
    if (alignment > 64)
      (void)madvise(block, size, MADV_HUGEPAGE);
    owned.push_back(block);
    held += size;
  }
  auto *header = static_cast<BlockHeader *>(block);
  header->owner = this;
  header->bin = bin;
  return header + 1;
}

void ScratchCache::release(void *block, unsigned bin) {
  std::lock_guard<std::mutex> lock(mutex);
  free[bin].push_back(block);
}

ScratchScope::ScratchScope(ScratchCache &cache) : previous(current) {
  current = &cache;
}

ScratchScope::~ScratchScope() { current = previous; }

void *attnrt::scratchAllocate(uint64_t bytes) {
  if (current)
    return current->allocate(bytes);
  uint64_t total = bytes + sizeof(BlockHeader);
  if (total < bytes)
    return nullptr;
  void *block;
  if (posix_memalign(&block, alignof(BlockHeader), total) != 0)
    return nullptr;
  auto *header = static_cast<BlockHeader *>(block);
  header->owner = nullptr;
  header->bin = 0;
  return header + 1;
}

void attnrt::scratchRelease(void *pointer) {
  if (!pointer)
    return;
  BlockHeader *header = static_cast<BlockHeader *>(pointer) - 1;
  if (header->owner)
    header->owner->release(header, header->bin);
  else
    std::free(header);
}
