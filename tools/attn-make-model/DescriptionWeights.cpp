//===- DescriptionWeights.cpp - the tensor plan, from the model description ===//
//
// Which tensors a checkpoint holds and how they are named is said once, by
// the compiler's model description (modelWeights): a family's config.json
// and a hand-written description alike are read by the compiler, and the
// tensors it would load are the ones written here. Only the file's own
// conventions stay with the writer: where transformers' save_pretrained puts
// the base model's names, buffers HF files carry that no model reads, and a
// multimodal checkpoint's layout.
//
//===----------------------------------------------------------------------===//

#include "DescriptionWeights.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

using namespace attn::modelgen;
using mlir::attn::ModelConfig;
using mlir::attn::QkvStorage;
using mlir::attn::WeightRole;
using mlir::attn::WeightSpec;

namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double invSqrt(int64_t fanIn) {
  return 1.0 / std::sqrt(static_cast<double>(fanIn));
}

/// Where transformers' save_pretrained puts the base model's tensors
/// (OPTForCausalLM.model, BloomForCausalLM.transformer): every name but the
/// output head's. The compiler accepts them with or without it. A gemma3
/// checkpoint's description names the text model without its "model.",
/// which planTensors puts back before moving it to the checkpoint's layout.
std::string savedPrefix(const ModelSpec &spec) {
  if (spec.multimodal)
    return "model.";
  switch (spec.family) {
  case Family::OPT:
    return "model.";
  case Family::Bloom:
    return "transformer.";
  default:
    return "";
  }
}

} // namespace

std::vector<TensorDesc>
attn::modelgen::descriptionTensors(const ModelConfig &config,
                                   const TensorScales &scales) {
  const mlir::attn::WeightNames &names = config.names;
  const std::string &w = names.weightSuffix, &b = names.biasSuffix;
  // --sharp: queries and keys twice as large, so scores have std ~4; as
  // q/k norms undo any projection scale, their gains are scaled instead.
  const double qk = scales.sharp ? 2.0 : 1.0;
  const double biasStd = scales.sharp ? 0.5 : 0.1;
  // Sandwich norms (Gemma 2 and 3) spread N(0, 0.3): a dropped or misplaced
  // one changes more than a scale.
  const double gainSpread = config.block.outputNorms ? 0.3 : 0.1;
  const int lineAxis = config.linearOutIn ? 0 : 1;
  const int64_t qf = config.queryFeatures(), kvf = config.kvFeatures(),
                hd = config.headDim;

  std::vector<TensorDesc> tensors;
  for (const WeightSpec &weight : mlir::attn::modelWeights(config)) {
    TensorDesc t;
    t.name = t.canonicalName = weight.name;
    t.shape.assign(weight.shape.begin(), weight.shape.end());
    const std::string layer =
        weight.layer >= 0 ? names.layerPrefix(weight.layer) : "";
    // Stacked experts' biases ([experts, out], gpt-oss) are biases too.
    const bool stackedBias = config.moe.stacked && endsWith(weight.name, "_bias");
    const bool isBias =
        (weight.shape.size() == 1 && endsWith(weight.name, b)) || stackedBias;
    // [out, in] or [in, out]: the fan-in is the input width; stacked
    // experts are [experts, in, out].
    const int64_t fanIn =
        weight.shape.size() == 2
            ? (config.linearOutIn ? weight.shape.back() : weight.shape.front())
        : weight.shape.size() == 3 ? weight.shape[1]
                                   : 1;
    if (config.embeddingNorm && weight.layer < 0 &&
        weight.name.rfind(names.embeddingNorm, 0) == 0) {
      // The residual stream starts at LayerNorm(embedding), whose scale is
      // the norm's (BLOOM): the embedding std scales the norm.
      const double s = scales.embeddingStd;
      t.mean = isBias ? 0.0 : s;
      t.stddev = (isBias ? biasStd : 0.1) * s;
      t.nonZero = isBias;
    } else if (isBias) {
      t.stddev = biasStd;
      t.nonZero = true;
    } else if (config.attention.sinks && weight.name == layer + names.sinks) {
      // Sinks of mean 1 and std 2: some heads give the sink most of their
      // weight, some almost none, so a dropped sink moves every row.
      t.mean = 1.0;
      t.stddev = 2.0;
    } else if (weight.name == names.tokenEmbedding + w) {
      t.stddev = config.embeddingNorm ? 1.0 : scales.embeddingStd;
    } else if (weight.role == WeightRole::Embedding) {
      t.stddev = 1.0; // learned positions
    } else if (config.attention.qkNorm &&
               (weight.name == layer + names.queryNorm + w ||
                weight.name == layer + names.keyNorm + w)) {
      // RoPE keeps each head's RMS, so a q/k norm applied after RoPE instead
      // of before differs only by how the gains vary across a head: spread
      // them wide.
      t.mean = qk - config.norm.gainOffset;
      t.stddev = 0.3 * qk;
    } else if (weight.role == WeightRole::Norm) {
      // Gemma's (1 + w) norms store the deviation w.
      t.mean = 1.0 - config.norm.gainOffset;
      t.stddev = gainSpread;
    } else if (weight.name == layer + names.query + w ||
               weight.name == layer + names.key + w) {
      t.stddev = qk * invSqrt(fanIn);
    } else if (weight.name == layer + names.qkv + w) {
      t.stddev = invSqrt(fanIn);
      if (scales.sharp) {
        // The fused lines (rows of [out, in], columns of [in, out]) that are
        // queries or keys.
        int64_t lines = weight.shape[static_cast<size_t>(lineAxis)];
        t.lineAxis = lineAxis;
        t.lineStd.resize(static_cast<size_t>(lines));
        for (int64_t i = 0; i < lines; ++i) {
          bool isQk = config.attention.qkv == QkvStorage::FusedPerHead
                          ? i % (3 * hd) < 2 * hd
                          : i < qf + kvf;
          t.lineStd[static_cast<size_t>(i)] = (isQk ? qk : 1.0) * t.stddev;
        }
      }
    } else {
      t.stddev = invSqrt(fanIn);
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

namespace attn {
namespace modelgen {

bool planTensors(const ModelSpec &spec, std::vector<TensorDesc> &tensors,
                 std::string &error) {
  if (std::string e = validateSpec(spec); !e.empty()) {
    error = e;
    return false;
  }
  llvm::Expected<ModelConfig> config =
      mlir::attn::parseModelConfig(configJson(spec), "config.json");
  if (!config) {
    error = "the compiler does not read the config this model would have: " +
            llvm::toString(config.takeError());
    return false;
  }
  std::vector<TensorDesc> plan =
      descriptionTensors(*config, {spec.sharp, spec.embeddingStd});
  const std::string base = savedPrefix(spec);
  const std::string &head = config->names.head;
  for (TensorDesc &t : plan)
    if (head.empty() || t.name.rfind(head, 0) != 0)
      t.name = t.canonicalName = base + t.name;

  // Buffers HF files carry that no model reads, placed where transformers'
  // state_dict has them (before `anchor`): the description says which
  // suffixes the compiler skips, and each written here must be one.
  auto buffer = [&](const std::string &name, std::vector<int64_t> shape,
                    TensorInit init, double mean,
                    const std::string &anchor) -> bool {
    const std::vector<std::string> &skipped = config->names.ignoredSuffixes;
    if (std::none_of(skipped.begin(), skipped.end(), [&](const std::string &s) {
          return endsWith(name, s);
        })) {
      error = "buffer '" + name + "' is not one the " +
              std::string(familyName(spec.family)) + " description skips";
      return false;
    }
    TensorDesc t;
    t.name = t.canonicalName = name;
    t.shape = std::move(shape);
    t.init = init;
    t.mean = mean;
    t.stddev = 0.0;
    auto at = std::find_if(plan.begin(), plan.end(),
                           [&](const TensorDesc &d) { return d.name == anchor; });
    plan.insert(at, std::move(t));
    return true;
  };
  if (spec.extraBuffers) {
    const mlir::attn::WeightNames &n = config->names;
    const int64_t p = spec.maxPositions, hd = config->headDim;
    for (int64_t i = 0; i < spec.layers; ++i) {
      std::string l = n.layerPrefix(i);
      std::string qkv = l + n.qkv + n.weightSuffix,
                  mlpNorm = l + n.mlpNorm + n.weightSuffix;
      bool ok = spec.family == Family::GPT2
                    ? buffer(l + "attn.bias", {1, 1, p, p},
                             TensorInit::CausalMask, 0.0, qkv) &&
                          buffer(l + "attn.masked_bias", {},
                                 TensorInit::Constant, -1e4, qkv)
                    : buffer(l + "self_attn.rotary_emb.inv_freq", {hd / 2},
                             TensorInit::InvFreq, 0.0, mlpNorm);
      if (!ok)
        return false;
    }
  }
  if (spec.multimodal) {
    // Gemma3ForConditionalGeneration's files: the text model under
    // language_model. (streams still seeded by the text names), or as
    // transformers >= 4.52 saves it, model.language_model.* with lm_head at
    // the top; and two tensors of the image part, which a text-only reader
    // skips.
    const bool current = spec.multimodalCurrentNames;
    for (TensorDesc &t : plan) {
      if (!current)
        t.name = "language_model." + t.canonicalName;
      else if (t.canonicalName.rfind("model.", 0) == 0)
        t.name = "model.language_model." + t.canonicalName.substr(6);
    }
    const std::string image = current ? "model." : "";
    TensorDesc norm, projector;
    norm.name = norm.canonicalName =
        image + "vision_tower.vision_model.post_layernorm.weight";
    norm.shape = {16};
    norm.mean = 1.0, norm.stddev = 0.1;
    projector.name = projector.canonicalName =
        image + "multi_modal_projector.mm_input_projection_weight";
    projector.shape = {16, spec.hidden};
    projector.stddev = 0.25;
    plan.push_back(std::move(norm));
    plan.push_back(std::move(projector));
  }
  if (spec.stackedExperts) {
    const mlir::attn::WeightNames &n = config->names;
    if (config->moe.numExperts == 0 || n.stackedExperts.empty()) {
      error = "stacked experts apply only to qwen3_moe, qwen2_moe and mixtral "
              "models";
      return false;
    }
    const int64_t experts = config->moe.numExperts, ffn = config->moe.expertFfn,
                  d = config->hiddenSize;
    for (int64_t i = 0; i < config->numLayers; ++i) {
      if (!config->isMoeLayer(i))
        continue;
      const std::string layer = base + n.layerPrefix(i);
      auto take = [&](int64_t e, const std::string &module) {
        auto it = std::find_if(plan.begin(), plan.end(), [&](const TensorDesc &t) {
          return t.name == layer + mlir::attn::expertPrefix(n, e) + module + n.weightSuffix;
        });
        TensorDesc part = *it;
        plan.erase(it);
        return part;
      };
      TensorDesc gateUp, down;
      gateUp.name = gateUp.canonicalName = layer + n.stackedExperts + "gate_up_proj";
      gateUp.shape = {experts, 2 * ffn, d};
      down.name = down.canonicalName = layer + n.stackedExperts + "down_proj";
      down.shape = {experts, d, ffn};
      auto at = std::find_if(plan.begin(), plan.end(), [&](const TensorDesc &t) {
        return t.name == layer + mlir::attn::expertPrefix(n, 0) + n.expertGate + n.weightSuffix;
      }) - plan.begin();
      for (int64_t e = 0; e < experts; ++e) {
        gateUp.parts.push_back(take(e, n.expertGate));
        gateUp.parts.push_back(take(e, n.expertUp));
        down.parts.push_back(take(e, n.expertDown));
      }
      plan.insert(plan.begin() + at, {gateUp, down});
      if (!n.stackedRouter.empty())
        for (TensorDesc &t : plan)
          if (t.name == layer + n.router + n.weightSuffix)
            t.name = layer + n.stackedRouter + n.weightSuffix;
    }
  }
  for (TensorDesc &t : plan)
    t.name = spec.prefix + t.name;

  std::set<std::string> names;
  for (const TensorDesc &t : plan)
    names.insert(t.name);
  for (const std::string &extra : spec.extraTensors) {
    if (extra.empty()) {
      error = "an extra tensor needs a non-empty name";
      return false;
    }
    if (!names.insert(extra).second) {
      error = "extra tensor '" + extra + "' is already in the model";
      return false;
    }
    TensorDesc t;
    t.name = t.canonicalName = extra;
    t.shape = {8};
    plan.push_back(std::move(t));
  }
  auto find = [&](const std::string &name) {
    return std::find_if(plan.begin(), plan.end(), [&](const TensorDesc &t) {
      return t.name == name || t.canonicalName == name;
    });
  };
  for (const std::string &omit : spec.omitTensors) {
    auto it = find(omit);
    if (it == plan.end()) {
      error = "cannot omit '" + omit + "': the model has no such tensor";
      return false;
    }
    plan.erase(it);
  }
  for (const ModelSpec::Poison &poison : spec.poison) {
    auto it = find(poison.tensor);
    if (it == plan.end()) {
      error = "cannot poison '" + poison.tensor +
              "': the model has no such tensor";
      return false;
    }
    if (poison.index < 0 || poison.index >= numElements(*it)) {
      error = "cannot poison element " + std::to_string(poison.index) +
              " of '" + poison.tensor + "': it has " +
              std::to_string(numElements(*it)) + " elements";
      return false;
    }
    it->overrides.push_back({poison.index, poison.value});
  }
  tensors = std::move(plan);
  return true;
}

} // namespace modelgen
} // namespace attn

bool attn::modelgen::writeDescriptionModel(const std::string &descriptionPath,
                                           const ModelSpec &spec,
                                           const std::string &dir,
                                           std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFile(descriptionPath, /*IsText=*/true);
  if (!text) {
    error = descriptionPath + ": cannot read: " + text.getError().message();
    return false;
  }
  llvm::Expected<ModelConfig> config =
      mlir::attn::parseModelConfig((*text)->getBuffer(), descriptionPath);
  if (!config) {
    error = llvm::toString(config.takeError());
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create '" + dir + "': " + ec.message();
    return false;
  }
  std::string configPath = dir + "/config.json";
  {
    std::ofstream out(configPath, std::ios::binary);
    out << (*text)->getBuffer().str();
    if (!out.flush()) {
      error = "cannot write '" + configPath + "'";
      return false;
    }
  }
  // Token embeddings N(0, 0.25) when tied to the head (else the input
  // token's own logit dominates every row), N(0, 1) untied, divided by the
  // embedding scale.
  TensorScales scales{spec.sharp,
                      (config->tieEmbeddings ? 0.25 : 1.0) /
                          config->embeddingScale};
  return writeTensorFile(spec, descriptionTensors(*config, scales),
                         dir + "/model.safetensors", error);
}
