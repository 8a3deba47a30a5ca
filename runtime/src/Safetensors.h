//===- Safetensors.h - read-only safetensors file --------------*- C++ -*-===//
//
// Maps a safetensors file and validates its header completely before anyone
// looks at a tensor: after open() succeeds every tensor's bytes lie inside the
// mapping, sizes agree with dtype x shape, and no two tensors overlap.
//
// Format: u64 little-endian header length N, N bytes of JSON, then the data
// region. The JSON maps tensor names to {"dtype", "shape", "data_offsets"}
// (offsets relative to the data region), plus an optional "__metadata__"
// object of strings.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_SAFETENSORS_H
#define ATTNRT_SAFETENSORS_H

#include "GgmlTypes.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnrt {

/// A read-only private mapping of a whole regular file.
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile() { reset(); }

  /// Maps `path`; an empty file succeeds with size() == 0 and no mapping.
  /// On failure returns false with a message (without the path). With
  /// `populate` every page is read in now (a loader reads them all anyway);
  /// without, only the pages touched are read.
  bool open(const std::string &path, std::string &error, bool populate = true);
  void reset();

  const uint8_t *data() const { return base; }
  size_t size() const { return length; }

private:
  const uint8_t *base = nullptr;
  size_t length = 0;
};

/// The whole of a file as text. With `required` false a missing file reads
/// as "" (the optional files of a model folder); errors name the path.
bool readFileText(const std::string &path, bool required, std::string &text,
                  std::string &error);

enum class DType : uint8_t {
  Bool,
  U8,
  I8,
  F8E5M2,
  F8E4M3,
  F8E8M0,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
};

/// Parses a safetensors dtype name ("F32", "BF16", ...).
bool parseDType(std::string_view name, DType &dtype);
const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  /// Byte range in the data region.
  uint64_t begin = 0, end = 0;
  /// A GGUF tensor (WeightFiles): its bytes are `ggml` blocks, read
  /// through dequantizeGgmlRow (`dtype` says F32/F16/BF16 when they are
  /// plain, U8 otherwise).
  bool isGgml = false;
  GgmlType ggml = GgmlType::F32;
  /// The head size of q/k rows llama.cpp's converter interleaved
  /// (ggufPermutedRow), to undo on load; 0 for every other tensor.
  int64_t interleavedHeadDim = 0;
  /// A matrix the converter transposed (ggufTransposesMatrix): `shape` is
  /// Hugging Face's, the file holds its transpose.
  bool transposed = false;
  /// A Gemma norm weight the converter stored as 1 + w (ggufShiftsNorm):
  /// 1 is subtracted on load, giving the Hugging Face weight.
  bool shiftedNorm = false;
};

class SafetensorsFile {
public:
  /// Largest header accepted: real checkpoints stay far below this.
  static constexpr uint64_t maxHeaderBytes = uint64_t(100) << 20;

  /// Opens and validates `path`. Errors name the file and, where there is
  /// one, the tensor: "weights file 'x': tensor 'y': ...". A non-empty
  /// `where` replaces the "weights file 'x': " that starts every message
  /// (a shard names its index too).
  bool open(const std::string &path, std::string &error,
            const std::string &where = "");

  const std::string &path() const { return filePath; }
  /// Tensors sorted by name (the header is a JSON object: its members have
  /// no order).
  const std::vector<TensorInfo> &tensors() const { return tensorList; }
  /// Index into tensors(), or -1.
  int64_t find(std::string_view name) const;
  /// The bytes of a tensor (inside the mapping).
  const uint8_t *tensorData(const TensorInfo &tensor) const {
    return dataRegion + tensor.begin;
  }
  /// Offset of the data region from the start of the file.
  uint64_t dataOffset() const { return dataStart; }
  /// Unmaps the file; tensorData() must not be used afterwards.
  void close();
  /// Unmaps the file but keeps its tensor list: tensors() and find() still
  /// answer, tensorData() must not be used.
  void unmap();

private:
  bool parseHeader(std::string_view header, std::string &error);

  std::string filePath;
  MappedFile file;
  const uint8_t *dataRegion = nullptr;
  uint64_t dataStart = 0, dataSize = 0;
  std::vector<TensorInfo> tensorList;
  std::unordered_map<std::string_view, size_t> byName;
};

} // namespace attnrt

#endif // ATTNRT_SAFETENSORS_H
