//===- ModelLayout.cpp - the weight table a compiled model reads ----------===//

#include "attn/Compiler/ModelLayout.h"

#include "llvm/ADT/StringMap.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::attn;

llvm::SmallVector<int64_t, 4> ModelLayout::shape(int64_t entry) const {
  if (isPacked(entry))
    return packedAt(entry).shape();
  const llvm::SmallVector<int64_t, 2> &dims = weights[entry].shape;
  return llvm::SmallVector<int64_t, 4>(dims.begin(), dims.end());
}

llvm::SmallVector<int64_t, 16> LayerEntries::list() const {
  llvm::SmallVector<int64_t, 16> entries;
  const_cast<LayerEntries *>(this)->forEachField([&](int64_t &entry) {
    if (entry >= 0)
      entries.push_back(entry);
  });
  return entries;
}

std::optional<WeightFormat> mlir::attn::parseWeightFormat(llvm::StringRef name) {
  if (name == "f32")
    return WeightFormat::F32;
  for (WeightFormat format :
       {WeightFormat::BF16, WeightFormat::Q8_0, WeightFormat::Q4_0})
    if (name == packedFormatName(format))
      return format;
  return std::nullopt;
}

ModelLayout mlir::attn::planModelLayout(const ModelConfig &config,
                                        int64_t blockSize, WeightFormat format) {
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

  // A packed buffer (or vector) of sources, concatenated along the output
  // features; returns its table entry. The sources' weights are then read
  // only by packing.
  auto packSources = [&](std::string name,
                         llvm::ArrayRef<PackedWeight::Source> sources,
                         bool vector) {
    PackedWeight packed;
    // Module prefixes end in '.': the buffer is named after the module.
    if (!name.empty() && name.back() == '.')
      name.pop_back();
    packed.name = std::move(name);
    packed.blockSize = blockSize;
    packed.vector = vector;
    for (const PackedWeight::Source &source : sources) {
      const WeightSpec &spec = layout.weights[source.weight];
      if (!vector)
        packed.inFeatures = source.outIn ? spec.shape[1] : spec.shape[0];
      packed.outFeatures += source.rows;
      packed.sources.push_back(source);
      layout.usedAtRunTime[source.weight] = false;
    }
    if (!vector) {
      packed.format = format;
      if (isQuantized(format) && packed.inFeatures % kQuantBlock != 0)
        packed.format = WeightFormat::BF16;
    }
    layout.packed.push_back(std::move(packed));
    return static_cast<int64_t>(layout.weights.size() + layout.packed.size() - 1);
  };
  // All output features of a module's weight (`outIn`: its storage, the
  // checkpoint's projection layout but always [vocab, hidden] for an
  // embedding table).
  auto whole = [&](const std::string &module, bool outIn) {
    int64_t weight = weightOf(module);
    const WeightSpec &spec = layout.weights[weight];
    return PackedWeight::Source{weight, outIn, outIn ? spec.shape[0] : spec.shape[1]};
  };
  auto pack = [&](std::string name, llvm::ArrayRef<std::string> modules,
                  bool outIn) {
    llvm::SmallVector<PackedWeight::Source, 3> sources;
    for (const std::string &module : modules)
      sources.push_back(whole(module, outIn));
    return packSources(std::move(name), sources, /*vector=*/false);
  };
  auto bias = [&](const std::string &module) {
    int64_t weight = index.lookup(module + names.biasSuffix);
    return PackedWeight::Source{weight, true, layout.weights[weight].shape[0]};
  };

  bool normBias = config.norm.hasBias();
  bool outIn = config.linearOutIn;
  int64_t f = config.intermediateSize;
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = names.layerPrefix(i);
    LayerEntries entries;
    entries.attentionNorm = weightOf(p + names.attentionNorm);
    entries.attentionNormBias = biasOf(p + names.attentionNorm, normBias);
    // One projection for q, k and v, [q | k | v]: the input is read once.
    bool qkvBias = config.attention.qkvBias;
    switch (config.attention.qkv) {
    case QkvStorage::Fused:
      entries.qkv = pack(p + names.qkv, {p + names.qkv}, outIn);
      entries.qkvBias = biasOf(p + names.qkv, qkvBias);
      break;
    case QkvStorage::FusedPerHead: {
      PackedWeight::Source weight = whole(p + names.qkv, outIn);
      weight.heads = config.numHeads;
      weight.groups = 3;
      weight.headDim = config.headDim;
      entries.qkv = packSources(p + names.qkv, {weight}, false);
      if (qkvBias) {
        PackedWeight::Source b = bias(p + names.qkv);
        b.heads = config.numHeads;
        b.groups = 3;
        b.headDim = config.headDim;
        entries.qkvBias = packSources(p + names.qkv + "bias", {b}, true);
      }
      break;
    }
    case QkvStorage::Separate:
      entries.qkv = pack(p + "qkv",
                         {p + names.query, p + names.key, p + names.value},
                         outIn);
      if (qkvBias)
        entries.qkvBias = packSources(
            p + "qkv.bias",
            {bias(p + names.query), bias(p + names.key), bias(p + names.value)},
            true);
      break;
    }
    entries.output = pack(p + names.output, {p + names.output}, outIn);
    entries.outputBias = biasOf(p + names.output, config.attention.outputBias);
    if (!(config.block.parallel && config.block.sharedNorm)) {
      entries.mlpNorm = weightOf(p + names.mlpNorm);
      entries.mlpNormBias = biasOf(p + names.mlpNorm, normBias);
    }
    bool mlpBias = config.mlp.bias;
    if (config.mlp.fusedGateUp) {
      // Rows gate | up of one weight (and bias).
      PackedWeight::Source gate = whole(p + names.gateUp, outIn);
      gate.rows = f;
      PackedWeight::Source up = gate;
      up.rowBegin = f;
      entries.gate = packSources(p + names.gateUp + "gate", {gate}, false);
      entries.up = packSources(p + names.gateUp + "up", {up}, false);
      if (mlpBias) {
        PackedWeight::Source gateBias = bias(p + names.gateUp);
        gateBias.rows = f;
        PackedWeight::Source upBias = gateBias;
        upBias.rowBegin = f;
        entries.gateBias =
            packSources(p + names.gateUp + "gate.bias", {gateBias}, true);
        entries.upBias = packSources(p + names.gateUp + "up.bias", {upBias}, true);
      }
    } else {
      if (config.mlp.gated()) {
        entries.gate = pack(p + names.gate, {p + names.gate}, outIn);
        entries.gateBias = biasOf(p + names.gate, mlpBias);
      }
      entries.up = pack(p + names.up, {p + names.up}, outIn);
      entries.upBias = biasOf(p + names.up, mlpBias);
    }
    entries.down = pack(p + names.down, {p + names.down}, outIn);
    entries.downBias = biasOf(p + names.down, mlpBias);
    layout.layers.push_back(entries);
  }

  GlobalEntries &globals = layout.globals;
  if (config.tieEmbeddings) {
    // The token embedding is also the output projection: the embedding
    // reads its rows from the packed copy.
    globals.tokenEmbedding =
        pack("lm_head", {names.tokenEmbedding}, /*outIn=*/true);
    globals.head = globals.tokenEmbedding;
  } else if (format != WeightFormat::F32) {
    // A separate table follows the format too (a fifth of an untied
    // LLaMA-110M's bytes): the embedding gathers from its packed copy.
    globals.tokenEmbedding =
        pack(names.tokenEmbedding, {names.tokenEmbedding}, /*outIn=*/true);
  } else {
    globals.tokenEmbedding = weightOf(names.tokenEmbedding);
  }
  if (config.positions.kind == PositionKind::Learned)
    globals.positionEmbedding = weightOf(names.positionEmbedding);
  if (config.embeddingNorm) {
    globals.embeddingNorm = weightOf(names.embeddingNorm);
    globals.embeddingNormBias = biasOf(names.embeddingNorm, normBias);
  }
  if (config.block.finalNorm) {
    globals.finalNorm = weightOf(names.finalNorm);
    globals.finalNormBias = biasOf(names.finalNorm, normBias);
  }
  if (!config.tieEmbeddings)
    globals.head = pack("lm_head", {names.head}, /*outIn=*/true);
  // GPT-J's lm_head has a bias even when its weight is tied.
  globals.headBias = biasOf(names.head, config.headBias);
  return layout;
}

std::vector<int64_t> mlir::attn::packKinds(const ModelLayout &layout) {
  using Source = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                            std::vector<int64_t>>;
  using Key = std::tuple<bool, int, int64_t, int64_t, int64_t, std::vector<Source>>;
  std::map<Key, int64_t> kindOf;
  std::vector<int64_t> kinds;
  for (const PackedWeight &packed : layout.packed) {
    std::vector<Source> sources;
    for (const PackedWeight::Source &source : packed.sources) {
      const auto &shape = layout.weights[source.weight].shape;
      sources.emplace_back(source.outIn, source.rows, source.rowBegin,
                           source.heads, source.groups, source.headDim,
                           std::vector<int64_t>(shape.begin(), shape.end()));
    }
    Key key{packed.vector, static_cast<int>(packed.format), packed.inFeatures,
            packed.outFeatures, packed.blockSize, std::move(sources)};
    auto [it, inserted] =
        kindOf.try_emplace(std::move(key), static_cast<int64_t>(kindOf.size()));
    kinds.push_back(it->second);
  }
  return kinds;
}
