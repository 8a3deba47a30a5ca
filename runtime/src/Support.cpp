//===- Support.cpp - small helpers shared by the runtime sources ----------===//

#include "Support.h"

#include "attnrt/model_abi.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <array>
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

namespace {
enum CpuidRegister { EAX, EBX, ECX, EDX };
enum OsState { NONE, AVX, AVX512, AMX };
struct CpuFeature {
  const char *llvmName;
  uint32_t leaf, subleaf;
  CpuidRegister reg;
  int bit;
  OsState state;
};
#define ATTN_FEATURE_ROW(llvmName, leaf, subleaf, reg, bit, state)             \
  {llvmName, leaf, subleaf, reg, bit, state},
constexpr CpuFeature kCpuFeatures[] = {ATTN_MODEL_CPU_FEATURES(ATTN_FEATURE_ROW)};
#undef ATTN_FEATURE_ROW

const CpuFeature *findCpuFeature(const std::string &name) {
  for (const CpuFeature &feature : kCpuFeatures)
    if (name == feature.llvmName)
      return &feature;
  return nullptr;
}

#if defined(__x86_64__)
std::array<uint32_t, 4> cpuid(uint32_t leaf, uint32_t subleaf) {
  std::array<uint32_t, 4> r{};
  __asm__ volatile("cpuid"
                   : "=a"(r[EAX]), "=b"(r[EBX]), "=c"(r[ECX]), "=d"(r[EDX])
                   : "a"(leaf), "c"(subleaf));
  return r;
}

/// Whether the OS saves the registers of `state` across context switches
/// (XCR0), as LLVM's host detection checks before it reports a feature.
bool osSaves(OsState state) {
  if (state == NONE)
    return true;
  if (!((cpuid(1, 0)[ECX] >> 27) & 1)) // OSXSAVE
    return false;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  uint64_t xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  uint64_t need = state == AVX      ? 0x6
                  : state == AVX512 ? 0xe6
                                    : 0x60000; // AMX: XTILECFG, XTILEDATA
  return (xcr0 & need) == need;
}
#endif
} // namespace

bool isKnownCpuFeature(const std::string &name) {
  return findCpuFeature(name) != nullptr;
}

bool hostHasCpuFeature(const std::string &name) {
#if defined(__x86_64__)
  const CpuFeature *feature = findCpuFeature(name);
  if (!feature)
    return false;
  uint32_t maxLeaf = cpuid(feature->leaf & 0x80000000u, 0)[EAX];
  if (feature->leaf > maxLeaf)
    return false;
  if (feature->leaf == 7 && feature->subleaf > cpuid(7, 0)[EAX])
    return false;
  uint32_t value = cpuid(feature->leaf, feature->subleaf)[feature->reg];
  return ((value >> feature->bit) & 1) && osSaves(feature->state);
#else
  return false;
#endif
}

std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &required) {
  std::vector<std::string> missing;
  for (const std::string &name : required)
    if (!hostHasCpuFeature(name))
      missing.push_back(name);
  return missing;
}

std::string hostCpuBrand() {
  std::string brand;
#if defined(__x86_64__)
  if (cpuid(0x80000000u, 0)[EAX] >= 0x80000004u)
    for (uint32_t leaf = 0x80000002u; leaf <= 0x80000004u; ++leaf)
      for (uint32_t word : cpuid(leaf, 0))
        for (int byte = 0; byte < 4; ++byte)
          if (char c = static_cast<char>(word >> (8 * byte)))
            brand.push_back(c);
  while (!brand.empty() && brand.back() == ' ')
    brand.pop_back();
  brand.erase(0, brand.find_first_not_of(' ') == std::string::npos
                     ? brand.size()
                     : brand.find_first_not_of(' '));
#endif
  return brand;
}

} // namespace attnrt
