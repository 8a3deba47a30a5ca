//===- WeightFiles.cpp - the safetensors files of a model -----------------===//

#include "WeightFiles.h"

#include "GgufNames.h"

#include "Json.h"
#include "Support.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <sys/stat.h>

namespace attnrt {

static bool endsWith(const std::string &text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// `dir` + "/" + `name`, without doubling a trailing slash.
static std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// The folder part of `path` ("" for a bare file name).
static std::string parentDir(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// A name that stays inside the index's folder: no '/', not "." or "..",
/// not empty, no NUL (JSON strings may escape one).
static bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

bool WeightFiles::open(const std::string &path, std::string &error) {
  closeAll();
  files.clear();
  gguf.reset();
  ggufTensors.clear();
  ggufIndex.clear();
  ggufDelta.clear();
  entries.clear();
  byName.clear();
  openWarnings.clear();

  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    // A model folder: the single file wins, as in transformers.
    std::string single = joinPath(path, "model.safetensors");
    std::string index = joinPath(path, "model.safetensors.index.json");
    if (stat(single.c_str(), &st) == 0)
      return openFile(single, error);
    if (stat(index.c_str(), &st) == 0)
      return openIndex(index, error);
    error = "weights folder " + quote(path) +
            ": holds neither model.safetensors nor "
            "model.safetensors.index.json";
    return false;
  }
  if (endsWith(path, ".json"))
    return openIndex(path, error);
  if (endsWith(path, ".gguf"))
    return openGguf(path, error);
  return openFile(path, error);
}

bool WeightFiles::openGguf(const std::string &path, std::string &error) {
  gguf = std::make_unique<GgufFile>();
  if (!gguf->open(path, error))
    return false;
  setWhere = gguf->where();
  // The q/k rows the converter interleaved, and their head size (the
  // config's head_dim, as GgufConfig derives it).
  std::string_view arch;
  if (!gguf->getString("general.architecture", arch, error))
    return false;
  int64_t headDim = 0;
  if (ggufPermutesQueryKey(arch)) {
    std::string prefix = std::string(arch) + ".";
    uint64_t hidden, heads, keyLength = 0;
    if (!gguf->getUnsigned(prefix + "embedding_length", hidden, error) ||
        !gguf->getUnsigned(prefix + "attention.head_count", heads, error) ||
        (gguf->findKey(prefix + "attention.key_length") &&
         !gguf->getUnsigned(prefix + "attention.key_length", keyLength,
                            error)))
      return false;
    headDim = keyLength ? int64_t(keyLength)
                        : heads ? int64_t(hidden / heads) : 0;
  }
  for (size_t index = 0; index < gguf->tensors().size(); ++index) {
    const GgufTensorInfo &g = gguf->tensors()[index];
    // Llama 3's and Phi-3's rope scaling, which the config reads
    // (GgufConfig.cpp).
    if (g.name == "rope_freqs.weight" || g.name == "rope_factors_long.weight" ||
        g.name == "rope_factors_short.weight")
      continue;
    TensorInfo t;
    t.isGgml = true;
    t.ggml = g.type;
    t.dtype = g.type == GgmlType::F32    ? DType::F32
              : g.type == GgmlType::F16  ? DType::F16
              : g.type == GgmlType::BF16 ? DType::BF16
                                         : DType::U8;
    // A stacked expert tensor [experts, rows, columns]: one Hugging Face
    // matrix per expert, each a contiguous slab of whole rows.
    if (g.dims.size() == 3 && !hfExpertName(arch, g.name, 0).empty()) {
      uint64_t slab = (g.end - g.begin) / uint64_t(std::max<int64_t>(g.dims[2], 1));
      for (int64_t e = 0; e < g.dims[2]; ++e) {
        TensorInfo x = t;
        x.name = hfExpertName(arch, g.name, e);
        x.shape = {g.dims[1], g.dims[0]};
        x.elements = g.dims[0] * g.dims[1];
        x.begin = g.begin + uint64_t(e) * slab;
        x.end = x.begin + slab;
        ggufIndex.push_back(index);
        ggufDelta.push_back(uint64_t(e) * slab);
        ggufTensors.push_back(std::move(x));
      }
      continue;
    }
    ggufIndex.push_back(index);
    ggufDelta.push_back(0);
    std::string hf = hfTensorName(arch, g.name);
    // A tensor the table does not name keeps its GGUF name: the loader
    // warns that the model does not use it.
    t.name = hf.empty() ? g.name : hf;
    t.shape = g.shape();
    // GPT-2's Conv1D weights: [in, out] under their Hugging Face name.
    if (ggufTransposesMatrix(arch, g.name) && g.dims.size() == 2) {
      t.shape = {g.dims[0], g.dims[1]};
      t.transposed = true;
    }
    t.shiftedNorm = ggufShiftsNorm(arch, g.name);
    t.elements = g.elements;
    t.begin = g.begin;
    t.end = g.end;
    bool queryKey = endsWith(g.name, ".attn_q.weight") ||
                    endsWith(g.name, ".attn_k.weight");
    if (queryKey && headDim > 0) {
      if (g.dims.size() != 2 || headDim % 2 != 0 ||
          g.dims[1] % headDim != 0) {
        error = setWhere + "tensor " + quote(g.name) + " has shape " +
                formatShape(t.shape) + ", not whole heads of " +
                std::to_string(headDim) + " rows";
        return false;
      }
      t.interleavedHeadDim = headDim;
    }
    ggufTensors.push_back(std::move(t));
  }
  for (size_t i = 0; i < ggufTensors.size(); ++i) {
    entries.push_back({0, i});
    if (!byName.emplace(ggufTensors[i].name, i).second) {
      error = setWhere + "tensors " + quote(ggufTensors[i].name) +
              " appear twice under their Hugging Face name";
      return false;
    }
  }
  return true;
}

bool WeightFiles::openFile(const std::string &path, std::string &error) {
  setWhere = "weights file " + quote(path) + ": ";
  auto file = std::make_unique<SafetensorsFile>();
  if (!file->open(path, error))
    return false;
  for (size_t t = 0; t < file->tensors().size(); ++t)
    entries.push_back({0, t});
  files.push_back(std::move(file));
  for (size_t i = 0; i < entries.size(); ++i)
    byName.emplace(tensor(i).name, i);
  return true;
}

bool WeightFiles::openIndex(const std::string &path, std::string &error) {
  setWhere = "index " + quote(path) + ": ";
  MappedFile indexFile;
  std::string message;
  if (!indexFile.open(path, message)) {
    error = setWhere + message;
    return false;
  }
  if (indexFile.size() > maxIndexBytes) {
    error = setWhere + format("is %zu bytes, larger than the %llu-byte limit",
                              indexFile.size(),
                              static_cast<unsigned long long>(maxIndexBytes));
    return false;
  }
  Json root;
  std::string_view text(reinterpret_cast<const char *>(indexFile.data()),
                        indexFile.size());
  if (!parseJson(text, root, message)) {
    error = setWhere + "not valid JSON: " + message;
    return false;
  }
  indexFile.reset();
  if (!root.is_object()) {
    error = setWhere + format("is %s, not a JSON object", jsonKindName(root));
    return false;
  }
  const Json *weightMap = jsonFind(root, "weight_map");
  if (!weightMap) {
    error = setWhere + "has no \"weight_map\"";
    return false;
  }
  if (!weightMap->is_object()) {
    error = setWhere + format("\"weight_map\" is %s, not an object",
                              jsonKindName(*weightMap));
    return false;
  }

  // The shards in name order, each with the first tensor (in name order:
  // object members are sorted) that names it, for messages.
  std::map<std::string, std::string> shards;
  for (const auto &[name, shard] : weightMap->items()) {
    if (!shard.is_string()) {
      error = setWhere + "\"weight_map\" entry " + quote(name) + " is " +
              jsonKindName(shard) + ", not a shard file name";
      return false;
    }
    const std::string &shardName = shard.get_ref<const std::string &>();
    if (!isPlainFileName(shardName)) {
      error = setWhere + "tensor " + quote(name) + " names shard " +
              quote(shardName) +
              ", which is not a plain file name in the index's folder";
      return false;
    }
    shards.emplace(shardName, name);
  }
  std::vector<std::string> shardNames;
  // Views of the map's keys, which stay put.
  std::map<std::string_view, size_t> shardIndex;
  for (const auto &[shardName, namedBy] : shards) {
    shardIndex.emplace(std::string_view(shardName), shardNames.size());
    shardNames.push_back(shardName);
  }

  std::string dir = parentDir(path);
  for (size_t s = 0; s < shardNames.size(); ++s) {
    auto file = std::make_unique<SafetensorsFile>();
    std::string shardWhere = setWhere + "shard " + quote(shardNames[s]) +
                             " (named by tensor " +
                             quote(shards[shardNames[s]]) + "): ";
    if (!file->open(joinPath(dir, shardNames[s]), error, shardWhere))
      return false;
    files.push_back(std::move(file));
  }

  // Every tensor of every shard, to catch one stored twice.
  std::unordered_map<std::string_view, size_t> holder;
  for (size_t s = 0; s < files.size(); ++s) {
    for (const TensorInfo &t : files[s]->tensors()) {
      auto [it, added] = holder.emplace(t.name, s);
      if (!added) {
        error = setWhere + "tensor " + quote(t.name) + " is in both shard " +
                quote(shardNames[it->second]) + " and shard " +
                quote(shardNames[s]);
        return false;
      }
    }
  }

  std::vector<std::vector<bool>> named(files.size());
  for (size_t s = 0; s < files.size(); ++s)
    named[s].assign(files[s]->tensors().size(), false);
  for (const auto &[name, shard] : weightMap->items()) {
    size_t s =
        shardIndex.at(std::string_view(shard.get_ref<const std::string &>()));
    int64_t t = files[s]->find(name);
    if (t < 0) {
      error = setWhere + "tensor " + quote(name) + " is mapped to shard " +
              quote(shardNames[s]) + ", which does not hold it";
      return false;
    }
    named[s][static_cast<size_t>(t)] = true;
    entries.push_back({s, static_cast<size_t>(t)});
  }
  for (size_t s = 0; s < files.size(); ++s)
    for (size_t t = 0; t < named[s].size(); ++t)
      if (!named[s][t])
        openWarnings += setWhere + "tensor " +
                        quote(files[s]->tensors()[t].name) + " of shard " +
                        quote(shardNames[s]) +
                        " is not in the weight_map; ignored\n";
  for (size_t i = 0; i < entries.size(); ++i)
    byName.emplace(tensor(i).name, i);
  return true;
}

std::string WeightFiles::fileWhere(size_t file) const {
  if (gguf)
    return gguf->where();
  return "weights file " + quote(files[file]->path()) + ": ";
}

int64_t WeightFiles::find(std::string_view name) const {
  auto it = byName.find(name);
  return it == byName.end() ? -1 : static_cast<int64_t>(it->second);
}

void WeightFiles::close(size_t file) {
  if (gguf)
    gguf->unmap();
  else
    files[file]->unmap();
}

void WeightFiles::closeAll() {
  for (size_t f = 0; f < numFiles(); ++f)
    close(f);
}

} // namespace attnrt
