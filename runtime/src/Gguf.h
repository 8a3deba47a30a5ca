//===- Gguf.h - read-only GGUF file (llama.cpp's model format) --*- C++ -*-===//
//
// Maps a GGUF file (versions 2 and 3) and validates all of it before anyone
// reads a value or a tensor: after open() succeeds every metadata value and
// every tensor's bytes lie inside the mapping, no key or tensor name repeats,
// every tensor's type is a known ggml type whose block size divides its rows,
// its size does not overflow, its data is aligned and overlaps no other.
//
// Layout (all little-endian; strings are a u64 length and that many bytes):
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: string key, u32 value type, value (an array is a u32 element
//             type, a u64 count, the elements; arrays do not nest),
//   tensor infos: string name, u32 dimension count (1-4), u64 dimensions
//             (ne[0], the contiguous one, first), u32 ggml type, u64 offset
//             into the data region,
//   padding to `general.alignment` (u32, a power of two, default 32), then
//   the data region.
// ggml_type and gguf_type numbers are llama.cpp's (ggml.h, gguf.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_GGUF_H
#define ATTNRT_GGUF_H

#include "GgmlTypes.h"
#include "Safetensors.h" // MappedFile

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnrt {

/// A metadata value's type, numbered as gguf.h numbers them.
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

/// "u32", "string", "array of f32", ...
std::string ggufTypeName(GgufType type, GgufType elementType = GgufType::U8);

struct GgufKeyValue {
  std::string name;
  GgufType type;
  /// For arrays: the elements' type and count.
  GgufType elementType = GgufType::U8;
  uint64_t count = 0;
  /// Offset of the value (for arrays, of the first element) in the file.
  uint64_t offset = 0;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  /// ggml order: dims[0] is the contiguous dimension (a row's length).
  std::vector<int64_t> dims;
  int64_t elements = 0;
  /// Byte range in the data region.
  uint64_t begin = 0, end = 0;
  /// The shape as safetensors and PyTorch write it (slowest dimension
  /// first): dims reversed.
  std::vector<int64_t> shape() const {
    return std::vector<int64_t>(dims.rbegin(), dims.rend());
  }
};

class GgufFile {
public:
  static constexpr uint32_t defaultAlignment = 32;
  /// ggml's GGML_MAX_NAME: a tensor name is shorter than this.
  static constexpr size_t maxTensorName = 64;
  static constexpr uint32_t maxDims = 4;
  static constexpr uint64_t maxKeys = uint64_t(1) << 16;
  static constexpr uint64_t maxTensors = uint64_t(1) << 20;

  /// Opens and validates `path`. Errors are one line naming the file and,
  /// where there is one, the key or tensor: "GGUF file 'x': tensor 'y': ...".
  /// `populate`: read every page in now (for loading the weights); without,
  /// reading the metadata touches only the pages it is on.
  bool open(const std::string &path, std::string &error, bool populate = true);
  /// The same over bytes the caller keeps alive (tests, fuzzing); `path`
  /// only names them in messages.
  bool openBytes(const uint8_t *data, size_t size, const std::string &path,
                 std::string &error);

  const std::string &path() const { return filePath; }
  /// "GGUF file 'x': ", the start of every message about this file.
  std::string where() const;
  uint32_t version() const { return fileVersion; }
  uint64_t alignment() const { return dataAlignment; }

  /// Metadata in file order.
  const std::vector<GgufKeyValue> &metadata() const { return keyList; }
  const GgufKeyValue *findKey(std::string_view name) const;

  // Typed reads. Each fails, with a message naming the file and the key,
  // when the key is missing (unless a default is given by the caller's
  // `has` check) or holds another type. Integers accept any integer type
  // whose value fits; floats accept f32 and f64.
  bool getString(std::string_view key, std::string_view &value,
                 std::string &error) const;
  bool getUnsigned(std::string_view key, uint64_t &value,
                   std::string &error) const;
  bool getSigned(std::string_view key, int64_t &value,
                 std::string &error) const;
  bool getFloat(std::string_view key, double &value, std::string &error) const;
  bool getBool(std::string_view key, bool &value, std::string &error) const;
  bool getStringArray(std::string_view key,
                      std::vector<std::string_view> &values,
                      std::string &error) const;
  /// An array of any integer type, widened.
  bool getIntegerArray(std::string_view key, std::vector<int64_t> &values,
                       std::string &error) const;
  /// An array of f32 or f64.
  bool getFloatArray(std::string_view key, std::vector<double> &values,
                     std::string &error) const;

  /// Tensors in file order.
  const std::vector<GgufTensorInfo> &tensors() const { return tensorList; }
  /// Index into tensors(), or -1.
  int64_t find(std::string_view name) const;
  const uint8_t *tensorData(const GgufTensorInfo &tensor) const {
    return base + dataStart + tensor.begin;
  }
  /// Offset of the data region from the start of the file.
  uint64_t dataOffset() const { return dataStart; }

  void close();
  /// Unmaps the file but keeps the tensor and key lists: tensors(), find()
  /// and metadata() still answer; tensorData() and the typed reads must not
  /// be used.
  void unmap();

private:
  bool parse(std::string &error);
  const GgufKeyValue *typed(std::string_view key, std::string &error) const;
  std::string keyError(const GgufKeyValue &kv, const char *expected) const;

  std::string filePath;
  MappedFile file;
  const uint8_t *base = nullptr;
  size_t size = 0;
  uint32_t fileVersion = 0;
  uint64_t dataAlignment = defaultAlignment;
  uint64_t dataStart = 0;
  std::vector<GgufKeyValue> keyList;
  std::unordered_map<std::string_view, size_t> keysByName;
  std::vector<GgufTensorInfo> tensorList;
  std::unordered_map<std::string_view, size_t> tensorsByName;
};

} // namespace attnrt

#endif // ATTNRT_GGUF_H
