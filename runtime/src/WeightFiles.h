//===- WeightFiles.h - the weight files of a model -------------*- C++ -*-===//
//
// The weights of a model as one set of tensors, whatever form they come in:
// a GGUF file (its tensors under their Hugging Face names, GgufNames.h, and
// HF's shapes), a single .safetensors file, a Hugging Face shard index
// (model.safetensors.index.json: {"metadata": {...}, "weight_map":
// {"tensor name": "model-00001-of-00002.safetensors", ...}}), or a folder
// holding either. Every file is opened and validated by SafetensorsFile; the
// index is checked against the shards before any tensor is used: every shard
// it names exists and holds the tensors it is named for, no tensor is in two
// shards, and shard names are plain file names in the index's folder.
//
// Tensors are addressed by an index into the whole set; each one belongs to
// one file, which can be closed on its own once nothing reads it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_WEIGHTFILES_H
#define ATTNRT_WEIGHTFILES_H

#include "Gguf.h"
#include "Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnrt {

class WeightFiles {
public:
  /// Largest index file accepted (real ones are a few hundred KiB).
  static constexpr uint64_t maxIndexBytes = uint64_t(64) << 20;

  /// Opens `path`: a directory (its model.safetensors, else its
  /// model.safetensors.index.json), a shard index (a name ending in ".json"),
  /// a GGUF file (a name ending in ".gguf"), or a safetensors file. Errors
  /// are one line naming the file.
  bool open(const std::string &path, std::string &error);

  /// The set in messages, with a trailing ": ": "weights file 'x': " for a
  /// single file, "index 'x': " for shards.
  const std::string &where() const { return setWhere; }
  /// "weights file 'shard': ": messages about one file's tensors.
  std::string fileWhere(size_t file) const;

  size_t numFiles() const { return gguf ? 1 : files.size(); }
  size_t numTensors() const { return entries.size(); }
  const TensorInfo &tensor(size_t i) const {
    return gguf ? ggufTensors[i]
                : files[entries[i].file]->tensors()[entries[i].tensor];
  }
  size_t fileOf(size_t i) const { return entries[i].file; }
  /// Index into the set, or -1. Shard tensors the index does not name are
  /// not part of the set.
  int64_t find(std::string_view name) const;
  /// The bytes of tensor `i` (inside its file's mapping, which must be
  /// open).
  const uint8_t *tensorData(size_t i) const {
    return gguf ? gguf->tensorData(gguf->tensors()[ggufIndex[i]]) + ggufDelta[i]
                : files[entries[i].file]->tensorData(tensor(i));
  }
  /// Offset of tensor `i`'s bytes from the start of its file.
  uint64_t fileOffset(size_t i) const {
    return (gguf ? gguf->dataOffset() : files[entries[i].file]->dataOffset()) +
           tensor(i).begin;
  }
  /// Warnings of the open (shard tensors the index does not name), one per
  /// line, each ending with '\n'.
  const std::string &warnings() const { return openWarnings; }

  /// Unmaps one file; its tensors' data must not be used afterwards.
  void close(size_t file);
  void closeAll();

private:
  bool openFile(const std::string &path, std::string &error);
  bool openIndex(const std::string &path, std::string &error);
  bool openGguf(const std::string &path, std::string &error);

  struct Entry {
    size_t file;
    size_t tensor; // Into that file's tensors().
  };
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  /// A GGUF file instead, and its tensors as the model names them.
  std::unique_ptr<GgufFile> gguf;
  std::vector<TensorInfo> ggufTensors;
  /// Where each of ggufTensors is in the file's list (rope_freqs.weight is
  /// not a weight: it is left out), and its byte offset in that tensor (an
  /// expert's slab of a stacked tensor).
  std::vector<size_t> ggufIndex;
  std::vector<uint64_t> ggufDelta;
  std::vector<Entry> entries;
  std::unordered_map<std::string_view, size_t> byName;
  std::string setWhere;
  std::string openWarnings;
};

} // namespace attnrt

#endif // ATTNRT_WEIGHTFILES_H
