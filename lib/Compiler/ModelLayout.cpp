//===- ModelLayout.cpp - the weight table a compiled model reads ----------===//

#include "attn/Compiler/ModelLayout.h"

#include "llvm/ADT/StringMap.h"

#include <array>
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

/// How a matrix of `inFeatures` inputs is stored when `format` is asked
/// for: bf16 when a quantized format's blocks do not divide its rows.
static WeightFormat matrixFormat(WeightFormat format, int64_t inFeatures) {
  return isQuantized(format) && inFeatures % kQuantBlock != 0
             ? WeightFormat::BF16
             : format;
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

llvm::Error mlir::attn::checkTensorParallel(const ModelConfig &config,
                                            int64_t ranks) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--tensor-parallel " + llvm::Twine(ranks) + ": " + why);
  };
  if (ranks < 1)
    return fail("the number of ranks must be positive");
  if (ranks == 1)
    return llvm::Error::success();
  auto divides = [&](int64_t count, llvm::StringRef what) -> llvm::Error {
    if (count % ranks == 0)
      return llvm::Error::success();
    return fail(llvm::Twine(ranks) + " ranks do not divide the " + what + " (" +
                llvm::Twine(count) + ")");
  };
  if (llvm::Error err = divides(config.numHeads, "attention heads"))
    return err;
  if (llvm::Error err = divides(config.numKvHeads, "key/value heads"))
    return err;
  if (llvm::Error err = divides(config.intermediateSize, "MLP width (intermediate size)"))
    return err;
  if (config.positions.kind == PositionKind::Alibi)
    return fail("ALiBi's per-head slopes (" + config.architecture +
                ") are not split across ranks yet");
  // A mixture of experts splits every expert's MLP width (and the shared
  // expert's) as a dense MLP's; the router is whole on every rank.
  if (config.moe.numExperts > 0) {
    if (llvm::Error err = divides(config.moe.expertFfn, "experts' MLP width"))
      return err;
    if (llvm::Error err = divides(config.moe.sharedFfn, "shared expert's MLP width"))
      return err;
  }
  return llvm::Error::success();
}

ModelConfig mlir::attn::rankLocalConfig(const ModelConfig &config, int64_t ranks) {
  ModelConfig local = config;
  local.numHeads /= ranks;
  local.numKvHeads /= ranks;
  local.intermediateSize /= ranks;
  local.moe.expertFfn /= ranks;
  local.moe.sharedFfn /= ranks;
  return local;
}

ModelLayout mlir::attn::planModelLayout(const ModelConfig &config,
                                        int64_t blockSize, WeightFormat format,
                                        int64_t ranks,
                                        std::optional<WeightFormat> headFormat) {
  ModelLayout layout;
  layout.ranks = ranks;
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
      // A stacked tensor's expert slice: the dimensions after the first.
      size_t at = source.expert >= 0 ? 1 : 0;
      if (!vector)
        packed.inFeatures = source.columns ? source.columns
                            : source.outIn ? spec.shape[at + 1]
                                           : spec.shape[at];
      packed.outFeatures += source.rows;
      packed.sources.push_back(source);
      layout.usedAtRunTime[source.weight] = false;
    }
    if (!vector)
      packed.format = matrixFormat(format, packed.inFeatures);
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
  // One rank's slice (ranks > 1): output rows [r * rows, (r + 1) * rows)
  // of a source, starting at `rowBegin`, or its input features
  // [r * columns, (r + 1) * columns); without a split the source is whole.
  const bool split = ranks > 1;
  auto rowSlice = [&](PackedWeight::Source source, int64_t rowBegin, int64_t rows) {
    source.rowBegin = rowBegin;
    source.rows = split ? rows / ranks : rows;
    if (split)
      source.rankRows = source.rows;
    return source;
  };
  auto columnSlice = [&](PackedWeight::Source source, int64_t columns) {
    if (split)
      source.columns = source.rankColumns = columns / ranks;
    return source;
  };
  // A row-parallel projection's bias: added once, by rank 0.
  auto onceBias = [&](const std::string &module, bool present) -> int64_t {
    if (!present || !split)
      return biasOf(module, present);
    PackedWeight::Source b = bias(module);
    b.firstRankOnly = true;
    return packSources(module + names.biasSuffix, {b}, true);
  };
  int64_t hd = config.headDim;
  int64_t qf = config.queryFeatures(), kvf = config.kvFeatures();
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = names.layerPrefix(i);
    LayerEntries entries;
    entries.attentionNorm = weightOf(p + names.attentionNorm);
    entries.attentionNormBias = biasOf(p + names.attentionNorm, normBias);
    // One projection for q, k and v, [q | k | v]: the input is read once.
    bool qkvBias = config.attention.qkvBias;
    // A rank's q, k and v rows of sources {q, k, v} that are stored one
    // after another from rows 0, qf and qf + kvf (one fused weight) or at
    // row 0 of each (three).
    auto qkvSlices = [&](std::array<PackedWeight::Source, 3> parts, bool fused) {
      int64_t begins[3] = {0, fused ? qf : 0, fused ? qf + kvf : 0};
      int64_t rows[3] = {qf, kvf, kvf};
      llvm::SmallVector<PackedWeight::Source, 3> sliced;
      for (int i = 0; i < 3; ++i)
        sliced.push_back(rowSlice(parts[i], begins[i], rows[i]));
      return sliced;
    };
    switch (config.attention.qkv) {
    case QkvStorage::Fused: {
      if (!split) {
        entries.qkv = pack(p + names.qkv, {p + names.qkv}, outIn);
        entries.qkvBias = biasOf(p + names.qkv, qkvBias);
        break;
      }
      PackedWeight::Source w = whole(p + names.qkv, outIn);
      entries.qkv = packSources(p + names.qkv, qkvSlices({w, w, w}, true), false);
      if (qkvBias) {
        PackedWeight::Source b = bias(p + names.qkv);
        entries.qkvBias =
            packSources(p + names.qkv + "bias", qkvSlices({b, b, b}, true), true);
      }
      break;
    }
    case QkvStorage::FusedPerHead: {
      // Rows [heads][q, k, v][head_dim]: a rank's heads are contiguous.
      auto perHead = [&](PackedWeight::Source source) {
        source.heads = config.numHeads / ranks;
        source.groups = 3;
        source.headDim = hd;
        source.rows = 3 * source.heads * hd;
        if (split)
          source.rankRows = source.rows;
        return source;
      };
      entries.qkv = packSources(p + names.qkv, {perHead(whole(p + names.qkv, outIn))}, false);
      if (qkvBias)
        entries.qkvBias =
            packSources(p + names.qkv + "bias", {perHead(bias(p + names.qkv))}, true);
      break;
    }
    case QkvStorage::Separate:
      entries.qkv = packSources(p + "qkv",
                                qkvSlices({whole(p + names.query, outIn),
                                           whole(p + names.key, outIn),
                                           whole(p + names.value, outIn)},
                                          false),
                                false);
      if (qkvBias)
        entries.qkvBias = packSources(
            p + "qkv.bias",
            qkvSlices({bias(p + names.query), bias(p + names.key), bias(p + names.value)},
                      false),
            true);
      break;
    }
    if (config.attention.qkNorm) {
      // Per head_dim: every rank's heads share them whole.
      entries.queryNorm = weightOf(p + names.queryNorm);
      entries.keyNorm = weightOf(p + names.keyNorm);
    }
    if (config.attention.sinks) {
      // One logit per head: a rank's heads' slice.
      int64_t weight = index.lookup(p + names.sinks);
      entries.sinks =
          split ? packSources(p + names.sinks,
                              {rowSlice({weight, true, config.numHeads}, 0, config.numHeads)},
                              true)
                : weight;
    }
    entries.output = packSources(
        p + names.output, {columnSlice(whole(p + names.output, outIn), qf)}, false);
    entries.outputBias = onceBias(p + names.output, config.attention.outputBias);
    if (!(config.block.parallel && config.block.sharedNorm)) {
      entries.mlpNorm = weightOf(p + names.mlpNorm);
      entries.mlpNormBias = biasOf(p + names.mlpNorm, normBias);
    }
    if (config.block.outputNorms) {
      // Of the whole sublayer output: after the row-parallel all-reduce.
      entries.attentionOutputNorm = weightOf(p + names.attentionOutputNorm);
      entries.attentionOutputNormBias = biasOf(p + names.attentionOutputNorm, normBias);
      entries.mlpOutputNorm = weightOf(p + names.mlpOutputNorm);
      entries.mlpOutputNormBias = biasOf(p + names.mlpOutputNorm, normBias);
    }
    if (config.isMoeLayer(i)) {
      // The router stays the checkpoint's f32 [experts, hidden]; each
      // expert projection is packed as a dense one, the experts stacked.
      const MoeSpec &moe = config.moe;
      entries.router = weightOf(p + names.router);
      entries.routerBias = biasOf(p + names.router, moe.routerBias);
      if (moe.sharedFfn > 0) {
        // The shared expert is a dense MLP: the gate, up and down entries.
        // Split, it is split as one.
        std::string gate = p + names.sharedExpert + names.expertGate,
                    up = p + names.sharedExpert + names.expertUp,
                    down = p + names.sharedExpert + names.expertDown;
        int64_t sf = moe.sharedFfn;
        entries.gate = packSources(gate, {rowSlice(whole(gate, outIn), 0, sf)}, false);
        entries.up = packSources(up, {rowSlice(whole(up, outIn), 0, sf)}, false);
        entries.down = packSources(down, {columnSlice(whole(down, outIn), sf)}, false);
        if (moe.sharedGate) // f32, as the router
          entries.sharedExpertGate = weightOf(p + names.sharedExpertGate);
      }
      if (moe.stacked) {
        // gpt-oss: gate and up are the even and odd columns of one
        // [experts, hidden, 2 ffn] tensor (x @ W), read per expert as a
        // per-head layout of ffn heads of 2 features; its biases alike.
        std::string gateUp = p + names.expert + names.expertGateUp,
                    downName = p + names.expert + names.expertDown;
        // Expert e's source of `tensor` as `part` shapes it (its rows, and
        // one rank's slice when split).
        auto stackedExperts = [&](const std::string &name, const std::string &tensor,
                                  bool vector, auto part) {
          llvm::SmallVector<PackedWeight::Source, 3> sources;
          for (int64_t e = 0; e < moe.numExperts; ++e) {
            PackedWeight::Source source{index.lookup(tensor), /*outIn=*/false, 0};
            source.expert = e;
            sources.push_back(part(source));
          }
          int64_t entry = packSources(name, sources, vector);
          PackedWeight &packed = layout.packed.back();
          packed.experts = moe.numExperts;
          packed.outFeatures = sources.front().rows;
          return entry;
        };
        int64_t ffn = moe.expertFfn, d = config.hiddenSize;
        // The gate (first 0) or up (first 1) halves of the interleaved
        // pairs; a rank's ffn / ranks pairs are contiguous.
        auto interleaved = [&](int64_t first) {
          return [=](PackedWeight::Source source) {
            source.rowBegin = first;
            source.rows = source.heads = ffn / ranks;
            source.groups = 2;
            source.headDim = 1;
            if (split)
              source.rankRows = 2 * source.rows;
            return source;
          };
        };
        auto down = [&](PackedWeight::Source source) {
          source.rows = d;
          return columnSlice(source, ffn);
        };
        std::string experts = p + names.expert;
        entries.expertGate = stackedExperts(experts + "gate_proj", gateUp, false, interleaved(0));
        entries.expertUp = stackedExperts(experts + "up_proj", gateUp, false, interleaved(1));
        entries.expertDown = stackedExperts(experts + "down_proj", downName, false, down);
        if (moe.expertBias) {
          entries.expertGateBias =
              stackedExperts(experts + "gate_proj_bias", gateUp + "_bias", true, interleaved(0));
          entries.expertUpBias =
              stackedExperts(experts + "up_proj_bias", gateUp + "_bias", true, interleaved(1));
          // Added to the down projection's partial sums: by rank 0 only.
          entries.expertDownBias =
              split ? stackedExperts(experts + "down_proj_bias", downName + "_bias", true,
                                     [&](PackedWeight::Source source) {
                                       source.rows = d;
                                       source.firstRankOnly = true;
                                       return source;
                                     })
                    : index.lookup(downName + "_bias");
        }
        layout.layers.push_back(entries);
        continue;
      }
      // Split, a rank holds every expert's slice of the MLP width.
      auto experts = [&](const std::string &module, bool columnParallel) {
        llvm::SmallVector<PackedWeight::Source, 3> sources;
        for (int64_t e = 0; e < moe.numExperts; ++e) {
          PackedWeight::Source source = whole(p + expertPrefix(names, e) + module, outIn);
          sources.push_back(columnParallel ? rowSlice(source, 0, moe.expertFfn)
                                           : columnSlice(source, moe.expertFfn));
        }
        // Named as transformers v5 names its stacked tensors:
        // mlp.experts.gate_proj.
        std::string stacked = names.expert;
        if (size_t at = stacked.find("{}."); at != std::string::npos)
          stacked.erase(at, 3);
        int64_t entry = packSources(p + stacked + module, sources, false);
        PackedWeight &packed = layout.packed.back();
        packed.experts = moe.numExperts;
        packed.outFeatures = sources.front().rows;
        return entry;
      };
      entries.expertGate = experts(names.expertGate, true);
      entries.expertUp = experts(names.expertUp, true);
      entries.expertDown = experts(names.expertDown, false);
      layout.layers.push_back(entries);
      continue;
    }
    bool mlpBias = config.mlp.bias;
    // A column-parallel MLP projection (rows [rowBegin, rowBegin + f) of
    // `module`) and its bias, whole without a split.
    auto mlpProjection = [&](const std::string &module, const std::string &name,
                             int64_t rowBegin, int64_t &weight, int64_t &biasEntry) {
      weight = packSources(name, {rowSlice(whole(module, outIn), rowBegin, f)}, false);
      if (!mlpBias)
        return;
      if (!split && rowBegin == 0 && name == module)
        biasEntry = biasOf(module, true);
      else
        biasEntry = packSources(name + "." + names.biasSuffix,
                                {rowSlice(bias(module), rowBegin, f)}, true);
    };
    if (config.mlp.fusedGateUp) {
      // Rows gate | up of one weight (and bias).
      mlpProjection(p + names.gateUp, p + names.gateUp + "gate", 0, entries.gate,
                    entries.gateBias);
      mlpProjection(p + names.gateUp, p + names.gateUp + "up", f, entries.up,
                    entries.upBias);
    } else {
      if (config.mlp.gated())
        mlpProjection(p + names.gate, p + names.gate, 0, entries.gate, entries.gateBias);
      mlpProjection(p + names.up, p + names.up, 0, entries.up, entries.upBias);
    }
    entries.down =
        packSources(p + names.down, {columnSlice(whole(p + names.down, outIn), f)}, false);
    entries.downBias = onceBias(p + names.down, mlpBias);
    layout.layers.push_back(entries);
  }

  GlobalEntries &globals = layout.globals;
  // A [vocab, hidden] table, or a rank's rows of it (the last rank's
  // padded with zeros).
  auto vocabulary = [&](PackedWeight::Source source) {
    if (split) {
      source.validRows = source.rows;
      source.rows = source.rankRows = vocabularySlice(config, ranks);
    }
    return source;
  };
  if (config.tieEmbeddings) {
    // The token embedding is also the output projection: the embedding
    // reads its rows from the packed copy.
    globals.tokenEmbedding =
        packSources("lm_head", {vocabulary(whole(names.tokenEmbedding, /*outIn=*/true))}, false);
    globals.head = globals.tokenEmbedding;
  } else if (format != WeightFormat::F32 || split) {
    // A separate table follows the format too (a fifth of an untied
    // LLaMA-110M's bytes), and is split: the embedding gathers from its
    // packed copy.
    globals.tokenEmbedding =
        packSources(names.tokenEmbedding, {vocabulary(whole(names.tokenEmbedding, /*outIn=*/true))}, false);
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
    globals.head = packSources("lm_head", {vocabulary(whole(names.head, /*outIn=*/true))}, false);
  // GPT-J's lm_head has a bias even when its weight is tied.
  if (config.headBias && split) {
    globals.headBias =
        packSources(names.head + names.biasSuffix, {vocabulary(bias(names.head))}, true);
  } else {
    globals.headBias = biasOf(names.head, config.headBias);
  }
  if (headFormat) {
    PackedWeight &head = layout.packed[globals.head - layout.weights.size()];
    head.format = matrixFormat(*headFormat, head.inFeatures);
  }
  return layout;
}

std::vector<int64_t> mlir::attn::packKinds(const ModelLayout &layout) {
  using Source = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                            std::vector<int64_t>, std::vector<int64_t>>;
  using Key = std::tuple<bool, int, int64_t, int64_t, int64_t, int64_t,
                         std::vector<Source>>;
  std::map<Key, int64_t> kindOf;
  std::vector<int64_t> kinds;
  for (const PackedWeight &packed : layout.packed) {
    std::vector<Source> sources;
    for (const PackedWeight::Source &source : packed.sources) {
      const auto &shape = layout.weights[source.weight].shape;
      sources.emplace_back(source.outIn, source.rows, source.rowBegin,
                           source.heads, source.groups, source.headDim,
                           std::vector<int64_t>{source.rankRows, source.rankColumns,
                                                source.columns, source.validRows,
                                                source.firstRankOnly, source.expert},
                           std::vector<int64_t>(shape.begin(), shape.end()));
    }
    Key key{packed.vector, static_cast<int>(packed.format), packed.inFeatures,
            packed.outFeatures, packed.blockSize, packed.experts, std::move(sources)};
    auto [it, inserted] =
        kindOf.try_emplace(std::move(key), static_cast<int64_t>(kindOf.size()));
    kinds.push_back(it->second);
  }
  return kinds;
}
