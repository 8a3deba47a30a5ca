//===- Safetensors.cpp - read-only safetensors file -----------------------===//

#include "Safetensors.h"

#include "Json.h"
#include "Support.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnrt {

//===----------------------------------------------------------------------===//
// MappedFile
//===----------------------------------------------------------------------===//

bool readFileText(const std::string &path, bool required, std::string &text,
                  std::string &error) {
  text.clear();
  MappedFile file;
  std::string message;
  if (!file.open(path, message)) {
    if (!required && message.find("No such file") != std::string::npos)
      return true;
    error = path + ": " + message;
    return false;
  }
  text.assign(reinterpret_cast<const char *>(file.data()), file.size());
  return true;
}

bool MappedFile::open(const std::string &path, std::string &error,
                      bool populate) {
  reset();
  // O_NONBLOCK: opening a FIFO must fail below, not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = format("cannot open: %s", std::strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = format("cannot stat: %s", std::strerror(errno));
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "not a regular file";
    ::close(fd);
    return false;
  }
  if (st.st_size == 0) {
    ::close(fd);
    return true;
  }
  // MAP_POPULATE: the loader reads every weight right away (validation),
  // and populating the page tables in one call is far cheaper than taking
  // one fault per 4 KiB page.
  void *p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                 MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
  int mmapErrno = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    error = format("cannot map: %s", std::strerror(mmapErrno));
    return false;
  }
  base = static_cast<const uint8_t *>(p);
  length = static_cast<size_t>(st.st_size);
  return true;
}

void MappedFile::reset() {
  if (base)
    munmap(const_cast<uint8_t *>(base), length);
  base = nullptr;
  length = 0;
}

//===----------------------------------------------------------------------===//
// Dtypes
//===----------------------------------------------------------------------===//

namespace {
struct DTypeEntry {
  DType dtype;
  const char *name;
  size_t size;
};
} // namespace

// Byte-sized dtypes of the safetensors spec; the sub-byte ones (F4, F6) are
// rejected as unknown.
static const DTypeEntry dtypeTable[] = {
    {DType::Bool, "BOOL", 1},      {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},          {DType::F8E5M2, "F8_E5M2", 1},
    {DType::F8E4M3, "F8_E4M3", 1}, {DType::F8E8M0, "F8_E8M0", 1},
    {DType::I16, "I16", 2},        {DType::U16, "U16", 2},
    {DType::F16, "F16", 2},        {DType::BF16, "BF16", 2},
    {DType::I32, "I32", 4},        {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},        {DType::F64, "F64", 8},
    {DType::I64, "I64", 8},        {DType::U64, "U64", 8},
};

bool parseDType(std::string_view name, DType &dtype) {
  for (const DTypeEntry &entry : dtypeTable) {
    if (name == entry.name) {
      dtype = entry.dtype;
      return true;
    }
  }
  return false;
}

const char *dtypeName(DType dtype) {
  for (const DTypeEntry &entry : dtypeTable)
    if (entry.dtype == dtype)
      return entry.name;
  return "?";
}

size_t dtypeSize(DType dtype) {
  for (const DTypeEntry &entry : dtypeTable)
    if (entry.dtype == dtype)
      return entry.size;
  return 0;
}

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

bool SafetensorsFile::open(const std::string &path, std::string &error,
                           const std::string &where) {
  close();
  filePath = path;
  std::string prefix =
      where.empty() ? "weights file " + quote(path) + ": " : where;
  std::string message;
  if (!file.open(path, message)) {
    error = prefix + message;
    return false;
  }
  uint64_t size = file.size();
  if (size < 8) {
    error = prefix +
            format("is %llu bytes, too short for the 8-byte header length of "
                   "a safetensors file",
                   static_cast<unsigned long long>(size));
    close();
    return false;
  }
  uint64_t headerLength = 0;
  for (int i = 7; i >= 0; --i)
    headerLength = headerLength << 8 | file.data()[i];
  if (headerLength > maxHeaderBytes) {
    error = prefix + format("header length %llu is larger than the %llu-byte "
                            "limit (not a safetensors file?)",
                            static_cast<unsigned long long>(headerLength),
                            static_cast<unsigned long long>(maxHeaderBytes));
    close();
    return false;
  }
  if (headerLength > size - 8) {
    error = prefix + format("header length %llu exceeds the file size of %llu "
                            "bytes (truncated file?)",
                            static_cast<unsigned long long>(headerLength),
                            static_cast<unsigned long long>(size));
    close();
    return false;
  }
  dataStart = 8 + headerLength;
  dataSize = size - dataStart;
  dataRegion = file.data() + dataStart;
  std::string_view header(reinterpret_cast<const char *>(file.data()) + 8,
                          headerLength);
  if (!parseHeader(header, message)) {
    error = prefix + message;
    close();
    return false;
  }
  return true;
}

void SafetensorsFile::close() {
  byName.clear();
  tensorList.clear();
  unmap();
  dataStart = dataSize = 0;
}

void SafetensorsFile::unmap() {
  file.reset();
  dataRegion = nullptr;
}

int64_t SafetensorsFile::find(std::string_view name) const {
  auto it = byName.find(name);
  return it == byName.end() ? -1 : static_cast<int64_t>(it->second);
}

/// Reads an array of non-negative integers; false with a message otherwise.
static bool readIndexArray(const Json *value, const char *field,
                           std::vector<int64_t> &out, std::string &error) {
  if (!value) {
    error = format("missing \"%s\"", field);
    return false;
  }
  if (!value->is_array()) {
    error = format("\"%s\" is %s, not an array", field, jsonKindName(*value));
    return false;
  }
  out.clear();
  size_t i = 0;
  for (const Json &element : *value) {
    int64_t n;
    if (!jsonInteger(element, n) || n < 0) {
      error =
          format("\"%s\" element %zu is not a non-negative integer", field, i);
      return false;
    }
    out.push_back(n);
    ++i;
  }
  return true;
}

bool SafetensorsFile::parseHeader(std::string_view header, std::string &error) {
  Json root;
  std::string message;
  if (!parseJson(header, root, message)) {
    error = "header is not valid JSON: " + message;
    return false;
  }
  if (!root.is_object()) {
    error = format("header is %s, not a JSON object", jsonKindName(root));
    return false;
  }
  tensorList.reserve(root.size());
  std::vector<int64_t> offsets;
  for (const auto &[name, entry] : root.items()) {
    if (name == "__metadata__") {
      bool ok = entry.is_object();
      for (const Json &m : entry)
        ok = ok && m.is_string();
      if (!ok) {
        error = "\"__metadata__\" is not an object of strings";
        return false;
      }
      continue;
    }
    std::string where = "tensor " + quote(name) + ": ";
    if (!entry.is_object()) {
      error =
          where + format("entry is %s, not an object", jsonKindName(entry));
      return false;
    }
    TensorInfo tensor;
    tensor.name = name;

    const Json *dtype = jsonFind(entry, "dtype");
    if (!dtype || !dtype->is_string()) {
      error = where + (dtype ? format("\"dtype\" is %s, not a string",
                                      jsonKindName(*dtype))
                             : std::string("missing \"dtype\""));
      return false;
    }
    const std::string &dtypeText = dtype->get_ref<const std::string &>();
    if (!parseDType(dtypeText, tensor.dtype)) {
      error = where + "unknown dtype " + quote(dtypeText);
      return false;
    }

    if (!readIndexArray(jsonFind(entry, "shape"), "shape", tensor.shape,
                        message)) {
      error = where + message;
      return false;
    }
    int64_t bytes = 0;
    if (!shapeElements(tensor.shape, tensor.elements) ||
        __builtin_mul_overflow(tensor.elements,
                               static_cast<int64_t>(dtypeSize(tensor.dtype)),
                               &bytes)) {
      error = where + "shape " + formatShape(tensor.shape) +
              " has too many elements";
      return false;
    }

    if (!readIndexArray(jsonFind(entry, "data_offsets"), "data_offsets",
                        offsets, message)) {
      error = where + message;
      return false;
    }
    if (offsets.size() != 2) {
      error = where + format("\"data_offsets\" has %zu elements, not 2",
                             offsets.size());
      return false;
    }
    if (offsets[0] > offsets[1]) {
      error = where + "data_offsets " + formatShape(offsets) +
              " are not increasing";
      return false;
    }
    tensor.begin = static_cast<uint64_t>(offsets[0]);
    tensor.end = static_cast<uint64_t>(offsets[1]);
    if (tensor.end > dataSize) {
      error = where + "data_offsets " + formatShape(offsets) +
              format(" end past the %llu-byte data region (truncated file?)",
                     static_cast<unsigned long long>(dataSize));
      return false;
    }
    if (tensor.end - tensor.begin != static_cast<uint64_t>(bytes)) {
      error = where +
              format("data_offsets span %llu bytes but dtype %s and shape ",
                     static_cast<unsigned long long>(tensor.end - tensor.begin),
                     dtypeName(tensor.dtype)) +
              formatShape(tensor.shape) +
              format(" need %lld", static_cast<long long>(bytes));
      return false;
    }
    tensorList.push_back(std::move(tensor));
  }

  // Overlap: sort by start and compare neighbours; empty tensors take no
  // bytes and cannot overlap anything.
  std::vector<size_t> order;
  for (size_t i = 0; i < tensorList.size(); ++i)
    if (tensorList[i].end > tensorList[i].begin)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TensorInfo &x = tensorList[a], &y = tensorList[b];
    return x.begin != y.begin ? x.begin < y.begin : a < b;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo &prev = tensorList[order[i - 1]];
    const TensorInfo &next = tensorList[order[i]];
    if (next.begin < prev.end) {
      error = "tensors " + quote(prev.name) + " and " + quote(next.name) +
              format(" overlap (bytes [%llu, %llu) and [%llu, %llu) of the "
                     "data region)",
                     static_cast<unsigned long long>(prev.begin),
                     static_cast<unsigned long long>(prev.end),
                     static_cast<unsigned long long>(next.begin),
                     static_cast<unsigned long long>(next.end));
      return false;
    }
  }

  // The list is final: the views into its names stay valid.
  byName.reserve(tensorList.size());
  for (size_t i = 0; i < tensorList.size(); ++i)
    byName.emplace(tensorList[i].name, i);
  return true;
}

} // namespace attnrt
