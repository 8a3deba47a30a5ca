//===- ModelLayout.cpp - the weight table a compiled model reads ----------===//

#include "attn/Compiler/ModelLayout.h"

#include "llvm/ADT/StringMap.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::attn;

llvm::SmallVector<int64_t, 3> ModelLayout::shape(int64_t entry) const {
  if (isPacked(entry))
    return packedAt(entry).shape();
  const llvm::SmallVector<int64_t, 2> &dims = weights[entry].shape;
  return llvm::SmallVector<int64_t, 3>(dims.begin(), dims.end());
}

llvm::SmallVector<int64_t, 16> LayerEntries::list() const {
  llvm::SmallVector<int64_t, 16> entries;
  const_cast<LayerEntries *>(this)->forEachField([&](int64_t &entry) {
    if (entry >= 0)
      entries.push_back(entry);
  });
  return entries;
}

ModelLayout mlir::attn::planModelLayout(const ModelConfig &config,
                                        int64_t blockSize) {
  ModelLayout layout;
  layout.weights = modelWeights(config);
  layout.usedAtRunTime.assign(layout.weights.size(), true);
  llvm::StringMap<int64_t> index;
  for (auto [i, weight] : llvm::enumerate(layout.weights))
    index[weight.name] = static_cast<int64_t>(i);
  const WeightNames &names = config.names;
  auto weightOf = [&](const std::string &module) {
    return index.lookup(module + names.weightSuffix);
  };
  // A module's bias or gain bias, or -1 when the model has none.
  auto biasOf = [&](const std::string &module, bool present) -> int64_t {
    return present ? index.lookup(module + names.biasSuffix) : -1;
  };

  // A packed buffer of the modules' weights, concatenated along the
  // outputs; returns its table entry. Its sources are then read only by
  // packing.
  // `outIn` is the storage of the weights: the checkpoint's projection
  // layout, but always [vocab, hidden] for an embedding table.
  auto pack = [&](std::string name, llvm::ArrayRef<std::string> modules,
                  bool outIn) {
    PackedWeight packed;
    // Module prefixes end in '.': the buffer is named after the module.
    if (!name.empty() && name.back() == '.')
      name.pop_back();
    packed.name = std::move(name);
    packed.blockSize = blockSize;
    for (const std::string &module : modules) {
      int64_t weight = weightOf(module);
      const WeightSpec &spec = layout.weights[weight];
      int64_t rows = outIn ? spec.shape[0] : spec.shape[1];
      packed.inFeatures = outIn ? spec.shape[1] : spec.shape[0];
      packed.outFeatures += rows;
      packed.sources.push_back({weight, outIn, rows});
      layout.usedAtRunTime[weight] = false;
    }
    layout.packed.push_back(std::move(packed));
    return static_cast<int64_t>(layout.weights.size() + layout.packed.size() - 1);
  };

  bool normBias = config.norm.hasBias();
  bool outIn = config.linearOutIn;
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = names.layerPrefix(i);
    LayerEntries entries;
    entries.attentionNorm = weightOf(p + names.attentionNorm);
    entries.attentionNormBias = biasOf(p + names.attentionNorm, normBias);
    // One projection for q, k and v: the input is read once.
    if (config.attention.qkv == QkvStorage::Fused) {
      entries.qkv = pack(p + names.qkv, {p + names.qkv}, outIn);
      entries.qkvBias = biasOf(p + names.qkv, config.attention.qkvBias);
    } else {
      entries.qkv = pack(p + "qkv",
                         {p + names.query, p + names.key, p + names.value}, outIn);
    }
    entries.output = pack(p + names.output, {p + names.output}, outIn);
    entries.outputBias = biasOf(p + names.output, config.attention.outputBias);
    entries.mlpNorm = weightOf(p + names.mlpNorm);
    entries.mlpNormBias = biasOf(p + names.mlpNorm, normBias);
    if (config.mlp.kind == MlpKind::SwiGlu)
      entries.gate = pack(p + names.gate, {p + names.gate}, outIn);
    entries.up = pack(p + names.up, {p + names.up}, outIn);
    entries.upBias = biasOf(p + names.up, config.mlp.bias);
    entries.down = pack(p + names.down, {p + names.down}, outIn);
    entries.downBias = biasOf(p + names.down, config.mlp.bias);
    layout.layers.push_back(entries);
  }

  GlobalEntries &globals = layout.globals;
  if (config.tieEmbeddings) {
    // The token embedding is also the output projection: the embedding
    // reads its rows from the packed copy.
    globals.tokenEmbedding = pack("lm_head", {names.tokenEmbedding}, /*outIn=*/true);
    globals.head = globals.tokenEmbedding;
  } else {
    globals.tokenEmbedding = weightOf(names.tokenEmbedding);
  }
  if (config.positions.kind == PositionKind::Learned)
    globals.positionEmbedding = weightOf(names.positionEmbedding);
  globals.finalNorm = weightOf(names.finalNorm);
  globals.finalNormBias = biasOf(names.finalNorm, normBias);
  if (!config.tieEmbeddings)
    globals.head = pack("lm_head", {names.head}, /*outIn=*/true);
  return layout;
}

std::vector<int64_t> mlir::attn::packKinds(const ModelLayout &layout) {
  using Source = std::tuple<bool, int64_t, std::vector<int64_t>>;
  using Key = std::tuple<int64_t, int64_t, int64_t, std::vector<Source>>;
  std::map<Key, int64_t> kindOf;
  std::vector<int64_t> kinds;
  for (const PackedWeight &packed : layout.packed) {
    std::vector<Source> sources;
    for (const PackedWeight::Source &source : packed.sources) {
      const auto &shape = layout.weights[source.weight].shape;
      sources.emplace_back(source.outIn, source.rows,
                           std::vector<int64_t>(shape.begin(), shape.end()));
    }
    Key key{packed.inFeatures, packed.outFeatures, packed.blockSize,
            std::move(sources)};
    auto [it, inserted] =
        kindOf.try_emplace(std::move(key), static_cast<int64_t>(kindOf.size()));
    kinds.push_back(it->second);
  }
  return kinds;
}
