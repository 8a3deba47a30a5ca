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

ModelLayout mlir::attn::planModelLayout(const ModelConfig &config,
                                        int64_t blockSize) {
  ModelLayout layout;
  layout.weights = modelWeights(config);
  layout.usedAtRunTime.assign(layout.weights.size(), true);
  llvm::StringMap<int64_t> index;
  for (auto [i, weight] : llvm::enumerate(layout.weights))
    index[weight.name] = static_cast<int64_t>(i);

  // A packed buffer of the named weights, concatenated along the outputs;
  // returns its table entry. Its sources are then read only by packing.
  auto pack = [&](std::string name, llvm::ArrayRef<std::string> sources,
                  bool outIn) {
    PackedWeight packed;
    packed.name = std::move(name);
    packed.blockSize = blockSize;
    for (const std::string &source : sources) {
      int64_t weight = index.lookup(source);
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

  if (config.family == ModelFamily::Gpt2) {
    // wte is both the embedding table and the (tied) output projection: the
    // embedding reads its rows from the packed copy.
    int64_t wte = pack("wte", {"wte.weight"}, /*outIn=*/true);
    layout.globals = {wte, index.lookup("wpe.weight"),
                      index.lookup("ln_f.weight"), index.lookup("ln_f.bias")};
    for (int64_t i = 0; i < config.numLayers; ++i) {
      std::string p = "h." + std::to_string(i) + ".";
      auto raw = [&](const char *suffix) { return index.lookup(p + suffix); };
      auto packedConv1D = [&](const char *suffix) {
        return pack(p + suffix, {p + suffix + ".weight"}, /*outIn=*/false);
      };
      layout.layers.push_back(
          {raw("ln_1.weight"), raw("ln_1.bias"), packedConv1D("attn.c_attn"),
           raw("attn.c_attn.bias"), packedConv1D("attn.c_proj"),
           raw("attn.c_proj.bias"), raw("ln_2.weight"), raw("ln_2.bias"),
           packedConv1D("mlp.c_fc"), raw("mlp.c_fc.bias"),
           packedConv1D("mlp.c_proj"), raw("mlp.c_proj.bias")});
    }
    return layout;
  }

  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    auto raw = [&](const char *suffix) { return index.lookup(p + suffix); };
    auto packed = [&](const char *name, llvm::ArrayRef<const char *> suffixes) {
      std::vector<std::string> sources;
      for (const char *suffix : suffixes)
        sources.push_back(p + suffix);
      return pack(p + name, sources, /*outIn=*/true);
    };
    // One projection for q, k and v: the input is read once.
    layout.layers.push_back(
        {raw("input_layernorm.weight"),
         packed("self_attn.qkv_proj",
                {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                 "self_attn.v_proj.weight"}),
         packed("self_attn.o_proj", {"self_attn.o_proj.weight"}),
         raw("post_attention_layernorm.weight"),
         packed("mlp.gate_proj", {"mlp.gate_proj.weight"}),
         packed("mlp.up_proj", {"mlp.up_proj.weight"}),
         packed("mlp.down_proj", {"mlp.down_proj.weight"})});
  }
  int64_t embed = index.lookup("model.embed_tokens.weight");
  int64_t norm = index.lookup("model.norm.weight");
  if (config.tieEmbeddings)
    layout.globals = {pack("lm_head", {"model.embed_tokens.weight"}, true), norm};
  else
    layout.globals = {embed, norm,
                      pack("lm_head", {"lm_head.weight"}, /*outIn=*/true)};
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
