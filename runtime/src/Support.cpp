//===- Support.cpp - small helpers shared by the runtime sources ----------===//

#include "Support.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace attnrt {

std::string format(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int length = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string result;
  if (length > 0) {
    result.resize(static_cast<size_t>(length) + 1);
    std::vsnprintf(&result[0], result.size(), fmt, args);
    result.pop_back();
  }
  va_end(args);
  return result;
}

void copyError(const std::string &message, char *buffer, size_t size) {
  if (!buffer || size == 0)
    return;
  size_t n = message.size() < size - 1 ? message.size() : size - 1;
  std::memcpy(buffer, message.data(), n);
  buffer[n] = '\0';
}

std::string quote(std::string_view name) {
  constexpr size_t maxShown = 200;
  std::string out = "'";
  size_t shown = 0;
  for (unsigned char c : name) {
    if (shown++ == maxShown) {
      out += "...";
      break;
    }
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      // Escape non-ASCII too: the message must stay one printable line
      // whatever bytes the file holds.
      out += format("\\x%02x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "'";
  return out;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  out += "]";
  return out;
}

bool shapeElements(const std::vector<int64_t> &shape, int64_t &elements) {
  int64_t n = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(n, dim, &n))
      return false;
  }
  elements = n;
  return true;
}

uint64_t availableMemory(const char *&source) {
  if (FILE *meminfo = std::fopen("/proc/meminfo", "re")) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof(line), meminfo))
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(meminfo);
    if (found) {
      source = "MemAvailable in /proc/meminfo";
      return static_cast<uint64_t>(kib) * 1024;
    }
  }
  source = "physical memory";
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return UINT64_MAX; // Unknown: nothing to refuse on.
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    ptr = other.ptr;
    bytes = other.bytes;
    other.ptr = nullptr;
    other.bytes = 0;
  }
  return *this;
}

bool AlignedBuffer::allocate(size_t size, bool zeroFill) {
  reset();
  constexpr size_t hugePage = size_t(2) << 20;
  // Large buffers are aligned to a huge page so transparent huge pages can
  // back them: far fewer faults when they are touched below.
  size_t alignment = size >= 2 * hugePage ? hugePage : 64;
  size_t rounded = size < 64 ? 64 : size;
  if (rounded > SIZE_MAX - alignment)
    return false;
  rounded = (rounded + alignment - 1) / alignment * alignment;
  void *p = nullptr;
  if (posix_memalign(&p, alignment, rounded) != 0)
    return false;
  if (alignment == hugePage)
    (void)madvise(p, rounded, MADV_HUGEPAGE);
  if (zeroFill)
    std::memset(p, 0, rounded);
  ptr = p;
  bytes = size;
  return true;
}

void AlignedBuffer::reset() {
  std::free(ptr);
  ptr = nullptr;
  bytes = 0;
}

bool allowAmxTiles(std::string &reason) {
#if defined(__linux__) && defined(__x86_64__)
  // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): asm/prctl.h's
  // values, which older headers lack. Granting twice is harmless.
  constexpr long kRequestPermission = 0x1023, kTileData = 18;
  if (syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0)
    return true;
  int error = errno;
  reason = std::string("the kernel does not grant this process AMX tile state "
                       "(arch_prctl ARCH_REQ_XCOMP_PERM: ") +
           std::strerror(error) +
           (error == EINVAL ? "; no AMX on this CPU, or a kernel older than 5.16)"
                            : ")");
  return false;
#else
  reason = "AMX tiles are only enabled on x86-64 Linux";
  return false;
#endif
}

} // namespace attnrt
