//===- FuzzUtil.h - helpers shared by the libFuzzer targets -----*- C++ -*-===//
//
// FUZZ_CHECK (a failed property aborts, which libFuzzer reports as a crash
// with the input saved), a memfd that holds the current input for APIs that
// take a path, and a reader that turns the input bytes into values.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_FUZZ_FUZZUTIL_H
#define ATTN_TEST_FUZZ_FUZZUTIL_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

/// A property of the code under test that must hold for every input.
#define FUZZ_CHECK(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__,         \
                   __LINE__, #cond);                                           \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fputc('\n', stderr);                                                \
      std::abort();                                                            \
    }                                                                          \
  } while (0)

namespace attn::fuzz {

/// An anonymous in-memory file reachable by path (/proc/self/fd/N), rewritten
/// for every input: the loaders under test take paths, and a memfd costs no
/// disk traffic.
class MemFile {
public:
  MemFile() {
    fd = memfd_create("attn-fuzz", MFD_CLOEXEC);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  ~MemFile() { close(fd); }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;

  /// Replaces the contents with `size` bytes of `data`.
  const std::string &write(const uint8_t *data, size_t size) {
    if (ftruncate(fd, 0) != 0) {
      std::perror("ftruncate");
      std::abort();
    }
    size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd, data + done, size - done,
                         static_cast<off_t>(done));
      if (n <= 0) {
        std::perror("pwrite");
        std::abort();
      }
      done += static_cast<size_t>(n);
    }
    return path;
  }

  const std::string &name() const { return path; }

private:
  int fd = -1;
  std::string path;
};

/// Consumes the input front to back; past the end every value is zero.
class ByteReader {
public:
  ByteReader(const uint8_t *data, size_t size) : data(data), size(size) {}

  bool empty() const { return pos >= size; }
  size_t remaining() const { return pos < size ? size - pos : 0; }

  uint8_t byte() { return pos < size ? data[pos++] : 0; }

  template <typename T> T value() {
    T v{};
    unsigned char bytes[sizeof(T)] = {};
    for (size_t i = 0; i < sizeof(T); ++i)
      bytes[i] = byte();
    std::memcpy(&v, bytes, sizeof(T));
    return v;
  }

  /// An integer in [lo, hi] from one or two bytes.
  int64_t range(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    uint64_t raw = span > 256 ? value<uint16_t>() : byte();
    return lo + static_cast<int64_t>(raw % span);
  }

  /// The rest of the input.
  std::string_view rest() {
    std::string_view tail(reinterpret_cast<const char *>(data) + pos,
                          remaining());
    pos = size;
    return tail;
  }

private:
  const uint8_t *data;
  size_t size;
  size_t pos = 0;
};

} // namespace attn::fuzz

#endif // ATTN_TEST_FUZZ_FUZZUTIL_H
