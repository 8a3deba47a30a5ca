//===- Npy.cpp - float32 .npy files ---------------------------------------===//

#include "Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace attn {
namespace ref {

namespace {

const char kMagic[] = "\x93NUMPY";
const size_t kMagicSize = 6;

struct FileCloser {
  void operator()(std::FILE *f) const {
    if (f)
      std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

bool hostIsLittleEndian() {
  uint32_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void byteSwap(std::vector<float> &data) {
  for (float &v : data) {
    unsigned char b[4];
    std::memcpy(b, &v, 4);
    std::swap(b[0], b[3]);
    std::swap(b[1], b[2]);
    std::memcpy(&v, b, 4);
  }
}

/// The value text after 'key': in a header dict, or empty.
std::string dictValue(const std::string &header, const std::string &key) {
  for (const char *quote : {"'", "\""}) {
    std::string pattern = std::string(quote) + key + quote;
    size_t at = header.find(pattern);
    if (at == std::string::npos)
      continue;
    size_t colon = header.find(':', at + pattern.size());
    if (colon == std::string::npos)
      return "";
    size_t start = header.find_first_not_of(" ", colon + 1);
    if (start == std::string::npos)
      return "";
    if (header[start] == '(') {
      size_t end = header.find(')', start);
      return end == std::string::npos ? ""
                                      : header.substr(start, end - start + 1);
    }
    if (header[start] == '\'' || header[start] == '"') {
      size_t end = header.find(header[start], start + 1);
      return end == std::string::npos
                 ? ""
                 : header.substr(start + 1, end - start - 1);
    }
    size_t end = header.find_first_of(",}", start);
    std::string v = header.substr(start, end - start);
    while (!v.empty() && v.back() == ' ')
      v.pop_back();
    return v;
  }
  return "";
}

} // namespace

bool writeNpy(const std::string &path, const std::vector<float> &data,
              const std::vector<int64_t> &shape, std::string &error) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count < 0 || static_cast<size_t>(count) != data.size()) {
    error = path + ": " + std::to_string(data.size()) +
            " values do not match the shape";
    return false;
  }
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    dims += ",";
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic(6) + version(2) + length(2) + header, padded with spaces and a
  // final newline to a multiple of 64.
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535) {
    error = path + ": shape too long for a version 1.0 header";
    return false;
  }

  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  unsigned char preamble[10];
  std::memcpy(preamble, kMagic, kMagicSize);
  preamble[6] = 1;
  preamble[7] = 0;
  preamble[8] = static_cast<unsigned char>(header.size() & 0xFF);
  preamble[9] = static_cast<unsigned char>(header.size() >> 8);
  bool ok =
      std::fwrite(preamble, 1, 10, f.get()) == 10 &&
      std::fwrite(header.data(), 1, header.size(), f.get()) == header.size();
  if (ok) {
    if (hostIsLittleEndian()) {
      ok = std::fwrite(data.data(), sizeof(float), data.size(), f.get()) ==
           data.size();
    } else {
      std::vector<float> swapped(data);
      byteSwap(swapped);
      ok = std::fwrite(swapped.data(), sizeof(float), swapped.size(),
                       f.get()) == swapped.size();
    }
  }
  if (!ok || std::fclose(f.release()) != 0) {
    error = path + ": write failed: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool readNpy(const std::string &path, std::vector<float> &data,
             std::vector<int64_t> &shape, std::string &error) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  unsigned char preamble[8];
  if (std::fread(preamble, 1, 8, f.get()) != 8 ||
      std::memcmp(preamble, kMagic, kMagicSize) != 0) {
    error = path + ": not a .npy file (bad magic)";
    return false;
  }
  int major = preamble[6];
  size_t headerSize = 0;
  unsigned char len[4] = {0, 0, 0, 0};
  if (major == 1) {
    if (std::fread(len, 1, 2, f.get()) != 2) {
      error = path + ": truncated header";
      return false;
    }
    headerSize = len[0] | (len[1] << 8);
  } else if (major == 2 || major == 3) {
    if (std::fread(len, 1, 4, f.get()) != 4) {
      error = path + ": truncated header";
      return false;
    }
    headerSize = static_cast<size_t>(len[0]) | (len[1] << 8) | (len[2] << 16) |
                 (static_cast<size_t>(len[3]) << 24);
    if (headerSize > (1u << 24)) {
      error = path + ": implausible header size";
      return false;
    }
  } else {
    error = path + ": unsupported .npy version " + std::to_string(major);
    return false;
  }
  std::string header(headerSize, '\0');
  if (std::fread(&header[0], 1, headerSize, f.get()) != headerSize) {
    error = path + ": truncated header";
    return false;
  }
  // Each key once: numpy never writes one twice, and which copy would win
  // is not worth guessing.
  for (const char *key : {"descr", "fortran_order", "shape"}) {
    size_t count = 0;
    for (const char *quote : {"'", "\""}) {
      std::string pattern = std::string(quote) + key + quote;
      for (size_t at = header.find(pattern); at != std::string::npos;
           at = header.find(pattern, at + 1))
        ++count;
    }
    if (count > 1) {
      error = path + ": duplicate key '" + key + "' in the header";
      return false;
    }
  }
  std::string descr = dictValue(header, "descr");
  if (descr != "<f4") {
    error = path + ": dtype '" + descr + "' is not little-endian float32 '<f4'";
    return false;
  }
  if (dictValue(header, "fortran_order") != "False") {
    error = path + ": Fortran-order arrays are not supported";
    return false;
  }
  std::string dims = dictValue(header, "shape");
  if (dims.size() < 2 || dims.front() != '(' || dims.back() != ')') {
    error = path + ": cannot read the shape in the header";
    return false;
  }
  std::vector<int64_t> parsed;
  int64_t count = 1;
  size_t pos = 1;
  while (pos < dims.size() - 1) {
    size_t start = dims.find_first_not_of(" ,", pos);
    if (start == std::string::npos || start >= dims.size() - 1)
      break;
    char *end = nullptr;
    long long v = std::strtoll(dims.c_str() + start, &end, 10);
    size_t stop = static_cast<size_t>(end - dims.c_str());
    if (stop == start || v < 0 || v > (int64_t(1) << 40)) {
      error = path + ": bad shape " + dims;
      return false;
    }
    parsed.push_back(v);
    // Checked before multiplying: count and v are each at most 2^40.
    if (v != 0 && count > (int64_t(1) << 40) / v) {
      error = path + ": shape too large " + dims;
      return false;
    }
    count *= v;
    pos = stop;
  }
  // The data must be exactly `count` floats: compare with the bytes the file
  // holds before allocating, so a corrupt shape cannot ask for terabytes.
  long dataStart = std::ftell(f.get());
  if (dataStart < 0 || std::fseek(f.get(), 0, SEEK_END) != 0) {
    error = path + ": cannot seek";
    return false;
  }
  long fileEnd = std::ftell(f.get());
  if (fileEnd < 0 || std::fseek(f.get(), dataStart, SEEK_SET) != 0) {
    error = path + ": cannot seek";
    return false;
  }
  int64_t available = static_cast<int64_t>(fileEnd) - dataStart;
  if (available < count * static_cast<int64_t>(sizeof(float))) {
    error = path + ": truncated data: expected " + std::to_string(count) +
            " float32 values for shape " + dims;
    return false;
  }
  if (available > count * static_cast<int64_t>(sizeof(float))) {
    error = path + ": trailing bytes after " + std::to_string(count) +
            " values of shape " + dims;
    return false;
  }
  std::vector<float> values(static_cast<size_t>(count));
  if (std::fread(values.data(), sizeof(float), values.size(), f.get()) !=
      values.size()) {
    error = path + ": truncated data: expected " + std::to_string(count) +
            " float32 values for shape " + dims;
    return false;
  }
  if (!hostIsLittleEndian())
    byteSwap(values);
  data = std::move(values);
  shape = std::move(parsed);
  return true;
}

} // namespace ref
} // namespace attn
