//===- GgufWriter.h - write GGUF files (tests, attn-make-model) -*- C++ -*-===//
//
// Builds a GGUF version 3 file in memory the way llama.cpp's gguf writer
// lays it out: header, metadata in the order it was set, tensor infos,
// padding to the alignment, then each tensor's bytes padded to the
// alignment in tensor order. GgufFile reads back exactly what this writes;
// tests start from it and corrupt single fields to check the reader.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_GGUFWRITER_H
#define ATTNRT_GGUFWRITER_H

#include "Gguf.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

class GgufWriter {
public:
  void setU32(std::string_view key, uint32_t value);
  void setI32(std::string_view key, int32_t value);
  void setU64(std::string_view key, uint64_t value);
  void setF32(std::string_view key, float value);
  void setBool(std::string_view key, bool value);
  void setString(std::string_view key, std::string_view value);
  void setStringArray(std::string_view key,
                      const std::vector<std::string> &values);
  void setI32Array(std::string_view key, const std::vector<int32_t> &values);
  void setF32Array(std::string_view key, const std::vector<float> &values);
  /// Any value, already encoded (type, then the value's bytes as GGUF
  /// stores them after the type): for tests of unusual types.
  void setRaw(std::string_view key, GgufType type, std::string encoded);

  /// `dims` in ggml order (the contiguous dimension first); `data` must be
  /// the tensor's exact size for `type`.
  void addTensor(std::string_view name, GgmlType type,
                 const std::vector<int64_t> &dims, std::string data);

  /// Offset in bytes() of a tensor info's first field (its name length), so
  /// tests can corrupt one field.
  uint64_t tensorInfoOffset(size_t tensor) const;

  /// The whole file. The alignment is general.alignment if set as u32, else
  /// 32.
  std::string bytes(uint32_t version = 3) const;
  bool write(const std::string &path, std::string &error,
             uint32_t version = 3) const;

private:
  struct Key {
    std::string name;
    GgufType type;
    std::string encoded;
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::string data;
  };
  void set(std::string_view key, GgufType type, std::string encoded);
  uint64_t alignment() const;

  std::vector<Key> keys;
  std::vector<Tensor> tensorList;
};

} // namespace attnrt

#endif // ATTNRT_GGUFWRITER_H
