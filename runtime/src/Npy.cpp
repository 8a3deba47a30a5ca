//===- Npy.cpp - float32 and int32 .npy files -----------------------------===//
//
// The NumPy format: "\x93NUMPY", major and minor version bytes, a
// little-endian header length (u16 in 1.0, u32 in 2.0/3.0), then a Python
// dict literal {'descr': '<f4' (or '<i4'), 'fortran_order': False, 'shape': (r, c), }
// padded with spaces and a final '\n' so the data starts at a multiple of 64.
//
//===----------------------------------------------------------------------===//

#include "attnrt/attnrt.h"

#include "Support.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace attnrt;

namespace {
struct FileCloser {
  void operator()(FILE *file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

/// A cursor over the header's dict literal; accepts exactly what numpy
/// writes (any key order, optional trailing commas, spaces).
class DictParser {
public:
  explicit DictParser(const std::string &text) : text(text) {}

  void skipSpaces() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n'))
      ++pos;
  }
  bool consume(char c) {
    skipSpaces();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool peek(char c) {
    skipSpaces();
    return pos < text.size() && text[pos] == c;
  }
  bool string(std::string &out) {
    skipSpaces();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char quoteChar = text[pos++];
    size_t end = text.find(quoteChar, pos);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  bool word(const char *w) {
    skipSpaces();
    size_t n = std::strlen(w);
    if (text.compare(pos, n, w) != 0)
      return false;
    pos += n;
    return true;
  }
  bool integer(int64_t &out) {
    skipSpaces();
    size_t start = pos;
    int64_t value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (__builtin_mul_overflow(value, 10, &value) ||
          __builtin_add_overflow(value, text[pos] - '0', &value))
        return false;
      ++pos;
    }
    // numpy writes Python ints; older versions appended 'L' on Python 2.
    if (pos < text.size() && text[pos] == 'L')
      ++pos;
    out = value;
    return pos > start;
  }
  bool atEnd() {
    skipSpaces();
    return pos == text.size();
  }

private:
  const std::string &text;
  size_t pos = 0;
};
} // namespace

static int npyFail(int code, const std::string &message, char *error,
                   size_t errorSize) {
  copyError(message, error, errorSize);
  return code;
}

/// A C-order array of `elementSize`-byte elements of numpy type `descr`
/// ('<f4', '<i4') as .npy; `function` names the caller in errors.
static int writeNpy(const char *function, const char *descr, size_t elementSize,
                    const char *path, const void *data, int32_t ndim, const int64_t *shape,
                    char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!path || ndim < 0 || ndim > 32 || (ndim > 0 && !shape))
      return npyFail(ATTNRT_ERROR_ARGUMENT,
                     std::string(function) + ": null path/shape or bad ndim", error,
                     error_size);
    std::vector<int64_t> dims(shape, shape + ndim);
    int64_t elements;
    if (!shapeElements(dims, elements) ||
        elements > INT64_MAX / static_cast<int64_t>(elementSize))
      return npyFail(ATTNRT_ERROR_ARGUMENT,
                     std::string(function) + ": invalid shape " + formatShape(dims),
                     error, error_size);
    if (elements > 0 && !data)
      return npyFail(ATTNRT_ERROR_ARGUMENT, std::string(function) + ": null data",
                     error, error_size);

    std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
    for (int32_t i = 0; i < ndim; ++i) {
      if (i)
        dict += ", ";
      dict += std::to_string(dims[i]);
    }
    if (ndim == 1)
      dict += ",";
    dict += "), }";
    // numpy's rule: magic (8) + u16 length (2) + dict + padding + '\n' is a
    // multiple of 64, with at least one pad byte.
    size_t unpadded = 10 + dict.size() + 1;
    dict.append(64 - unpadded % 64, ' ');
    dict += '\n';
    if (dict.size() > 65535)
      return npyFail(ATTNRT_ERROR_ARGUMENT, "npy header too long", error,
                     error_size);

    std::string where = "cannot write " + quote(path) + ": ";
    FilePtr file(std::fopen(path, "wb"));
    if (!file)
      return npyFail(ATTNRT_ERROR_IO, where + std::strerror(errno), error,
                     error_size);
    unsigned char prefix[10] = {0x93,
                                'N',
                                'U',
                                'M',
                                'P',
                                'Y',
                                1,
                                0,
                                static_cast<unsigned char>(dict.size() & 0xFF),
                                static_cast<unsigned char>(dict.size() >> 8)};
    bool ok =
        std::fwrite(prefix, 1, sizeof(prefix), file.get()) == sizeof(prefix) &&
        std::fwrite(dict.data(), 1, dict.size(), file.get()) == dict.size();
    // The host is little-endian (x86-64, AArch64), as '<f4' and '<i4' require.
    if (ok && elements > 0)
      ok = std::fwrite(data, elementSize, static_cast<size_t>(elements),
                       file.get()) == static_cast<size_t>(elements);
    int writeErrno = errno;
    int closed = std::fclose(file.release());
    if (!ok || closed != 0)
      return npyFail(ATTNRT_ERROR_IO,
                     where + std::strerror(ok ? errno : writeErrno), error,
                     error_size);
    return ATTNRT_OK;
  });
}

extern "C" {

int attnrt_npy_write_f32(const char *path, const float *data, int32_t ndim,
                         const int64_t *shape, char *error, size_t error_size) {
  return writeNpy("attnrt_npy_write_f32", "<f4", sizeof(float), path, data, ndim, shape, error,
                  error_size);
}

int attnrt_npy_write_i32(const char *path, const int32_t *data, int32_t ndim,
                         const int64_t *shape, char *error, size_t error_size) {
  return writeNpy("attnrt_npy_write_i32", "<i4", sizeof(int32_t), path, data, ndim, shape,
                  error, error_size);
}

int attnrt_npy_read_f32(const char *path, float **data, int64_t *shape,
                        int32_t max_ndim, int32_t *ndim, char *error,
                        size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!path || !data || !ndim || max_ndim < 0 || (max_ndim > 0 && !shape))
      return npyFail(ATTNRT_ERROR_ARGUMENT,
                     "attnrt_npy_read_f32: null argument", error, error_size);
    *data = nullptr;
    *ndim = 0;
    std::string where = quote(path) + ": ";
    FilePtr file(std::fopen(path, "rb"));
    if (!file)
      return npyFail(ATTNRT_ERROR_IO,
                     "cannot open " + where + std::strerror(errno), error,
                     error_size);
    unsigned char prefix[12];
    if (std::fread(prefix, 1, 8, file.get()) != 8 ||
        std::memcmp(prefix, "\x93NUMPY", 6) != 0)
      return npyFail(ATTNRT_ERROR_IO, where + "not a .npy file", error,
                     error_size);
    unsigned major = prefix[6];
    size_t lengthBytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
    if (lengthBytes == 0)
      return npyFail(ATTNRT_ERROR_IO,
                     where + format("unsupported .npy version %u", major),
                     error, error_size);
    if (std::fread(prefix + 8, 1, lengthBytes, file.get()) != lengthBytes)
      return npyFail(ATTNRT_ERROR_IO, where + "truncated header", error,
                     error_size);
    size_t headerLength = 0;
    for (size_t i = lengthBytes; i-- > 0;)
      headerLength = headerLength << 8 | prefix[8 + i];
    if (headerLength > (size_t(1) << 20))
      return npyFail(ATTNRT_ERROR_IO, where + "header too long", error,
                     error_size);
    std::string header(headerLength, '\0');
    if (std::fread(&header[0], 1, headerLength, file.get()) != headerLength)
      return npyFail(ATTNRT_ERROR_IO, where + "truncated header", error,
                     error_size);

    DictParser dict(header);
    std::string descr;
    bool fortran = false, haveDescr = false, haveOrder = false,
         haveShape = false;
    std::vector<int64_t> dims;
    bool ok = dict.consume('{');
    while (ok && !dict.consume('}')) {
      std::string key;
      ok = dict.string(key) && dict.consume(':');
      if (!ok)
        break;
      // Each key once: a repeated 'shape' once made the dimensions of both
      // add up (found by the .npy fuzzer), and Python would keep the last.
      if (key == "descr") {
        ok = !haveDescr && dict.string(descr);
        haveDescr = true;
      } else if (key == "fortran_order") {
        fortran = dict.word("True");
        ok = !haveOrder && (fortran || dict.word("False"));
        haveOrder = true;
      } else if (key == "shape") {
        ok = !haveShape && dict.consume('(');
        while (ok && !dict.consume(')')) {
          int64_t dim;
          ok = dict.integer(dim);
          dims.push_back(dim);
          if (ok && !dict.peek(')'))
            ok = dict.consume(',');
        }
        haveShape = true;
      } else {
        ok = false;
      }
      if (ok && !dict.peek('}'))
        ok = dict.consume(',');
    }
    if (!ok || !dict.atEnd() || !haveDescr || !haveOrder || !haveShape)
      return npyFail(ATTNRT_ERROR_IO, where + "malformed header", error,
                     error_size);
    if (descr != "<f4" || fortran)
      return npyFail(ATTNRT_ERROR_IO,
                     where + "holds " + quote(descr) +
                         (fortran ? " in Fortran order" : "") +
                         ", not C-order float32 ('<f4')",
                     error, error_size);
    if (dims.size() > static_cast<size_t>(max_ndim))
      return npyFail(ATTNRT_ERROR_IO,
                     where + format("has %zu dimensions, more than %d",
                                    dims.size(), max_ndim),
                     error, error_size);
    int64_t elements;
    if (!shapeElements(dims, elements) ||
        elements > INT64_MAX / static_cast<int64_t>(sizeof(float)))
      return npyFail(ATTNRT_ERROR_IO, where + "shape overflows", error,
                     error_size);

    // The data must be exactly elements floats: check the file size first
    // so a corrupt shape cannot make us allocate terabytes.
    long dataStart = std::ftell(file.get());
    if (dataStart < 0 || std::fseek(file.get(), 0, SEEK_END) != 0)
      return npyFail(ATTNRT_ERROR_IO, where + "cannot seek", error, error_size);
    long fileEnd = std::ftell(file.get());
    int64_t expected = elements * static_cast<int64_t>(sizeof(float));
    if (fileEnd < 0 || fileEnd - dataStart != expected)
      return npyFail(ATTNRT_ERROR_IO,
                     where + format("holds %lld data bytes, the shape needs "
                                    "%lld",
                                    static_cast<long long>(fileEnd - dataStart),
                                    static_cast<long long>(expected)),
                     error, error_size);
    std::fseek(file.get(), dataStart, SEEK_SET);
    auto *values = static_cast<float *>(
        std::malloc(expected > 0 ? static_cast<size_t>(expected) : 1));
    if (!values)
      return npyFail(ATTNRT_ERROR_MEMORY, where + "out of memory", error,
                     error_size);
    if (std::fread(values, sizeof(float), static_cast<size_t>(elements),
                   file.get()) != static_cast<size_t>(elements)) {
      std::free(values);
      return npyFail(ATTNRT_ERROR_IO, where + "read failed", error, error_size);
    }
    *data = values;
    *ndim = static_cast<int32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      shape[i] = dims[i];
    return ATTNRT_OK;
  });
}

void attnrt_free(void *pointer) { std::free(pointer); }

} // extern "C"
