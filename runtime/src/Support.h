//===- Support.h - small helpers shared by the runtime sources --*- C++ -*-===//
//
// Error formatting (one-line messages into caller buffers), quoting of
// untrusted names, and page-touched aligned buffers.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_SUPPORT_H
#define ATTNRT_SUPPORT_H

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

/// printf into a std::string.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/// Copies `message` into a caller buffer (NUL-terminated, truncated to fit);
/// a null buffer or zero size is allowed and ignored.
void copyError(const std::string &message, char *buffer, size_t size);

/// `'name'` with control and non-ASCII bytes escaped (\n, \xNN) and long
/// names shortened, so a hostile tensor name cannot break the one-line
/// message format.
std::string quote(std::string_view name);

/// Runs `body` and returns its result; an exception escaping it (only
/// std::bad_alloc can: the runtime throws nothing itself) becomes an error
/// message and `failValue`, since none may cross the C API.
template <typename T, typename Body>
T guarded(char *error, size_t errorSize, T failValue, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    copyError("out of memory", error, errorSize);
  } catch (...) {
    copyError("internal error", error, errorSize);
  }
  return failValue;
}

/// "[2, 3, 4]".
std::string formatShape(const std::vector<int64_t> &shape);

/// Element count of a shape; false when it overflows int64 (or a dimension is
/// negative).
bool shapeElements(const std::vector<int64_t> &shape, int64_t &elements);

/// Memory the system can hand out without swapping: MemAvailable from
/// /proc/meminfo, else (no such line) the physical memory. `source` says
/// which, for messages.
uint64_t availableMemory(const char *&source);

/// Asks the kernel to let this process use AMX tiles (Linux 5.16 and later
/// grant their state per process on request; without it the first tile
/// instruction raises SIGILL). False, with why in `reason`, when refused.
bool allowAmxTiles(std::string &reason);

/// Whether `name` is an LLVM feature name of model_abi.h's
/// ATTN_MODEL_CPU_FEATURES table.
bool isKnownCpuFeature(const std::string &name);

/// Whether this CPU has feature `name` of that table and the OS enables its
/// registers (CPUID and XCR0, as LLVM's host detection reads them: a
/// library compiled for the host never fails this check).
bool hostHasCpuFeature(const std::string &name);

/// The features of `required` this CPU lacks, in order.
std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &required);

/// The CPU's brand string ("AMD EPYC 9B45"); "" when it has none.
std::string hostCpuBrand();

/// A heap buffer, aligned and zero-filled at allocation so its pages are
/// faulted in once here rather than on the first token.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  AlignedBuffer(AlignedBuffer &&other) noexcept { *this = std::move(other); }
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;
  ~AlignedBuffer() { reset(); }

  /// Allocates `bytes` (at least one cache line) and, with `zeroFill`,
  /// touches every page. Without it the caller must write the whole buffer
  /// itself (which faults the pages in just the same, once). Returns false
  /// when the allocation fails.
  bool allocate(size_t bytes, bool zeroFill = true);
  void reset();

  void *data() const { return ptr; }
  size_t size() const { return bytes; }

private:
  void *ptr = nullptr;
  size_t bytes = 0;
};

} // namespace attnrt

#endif // ATTNRT_SUPPORT_H
