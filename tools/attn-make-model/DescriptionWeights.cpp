//===- DescriptionWeights.cpp - random checkpoints for model descriptions ===//

#include "DescriptionWeights.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <fstream>

using namespace attn::modelgen;
using mlir::attn::ModelConfig;
using mlir::attn::WeightRole;
using mlir::attn::WeightSpec;

namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::vector<TensorDesc>
attn::modelgen::descriptionTensors(const ModelConfig &config, bool sharp) {
  const mlir::attn::WeightNames &names = config.names;
  std::vector<TensorDesc> tensors;
  for (const WeightSpec &weight : mlir::attn::modelWeights(config)) {
    TensorDesc t;
    t.name = t.canonicalName = weight.name;
    t.shape.assign(weight.shape.begin(), weight.shape.end());
    bool bias = weight.shape.size() == 1 && endsWith(weight.name, names.biasSuffix);
    if (bias) {
      t.stddev = sharp ? 0.5 : 0.1;
      t.nonZero = true;
    } else if (weight.role == WeightRole::Norm) {
      t.mean = config.norm.gainOffset != 0 ? 0.0 : 1.0;
      t.stddev = 0.1;
    } else if (weight.name == names.tokenEmbedding + names.weightSuffix) {
      t.stddev = (config.tieEmbeddings ? 0.25 : 1.0) / config.embeddingScale;
    } else if (weight.role == WeightRole::Embedding) {
      t.stddev = 1.0; // learned positions
    } else {
      // [out, in] or [in, out]: the fan-in is the input width.
      int64_t fanIn = config.linearOutIn ? weight.shape.back() : weight.shape.front();
      t.stddev = 1.0 / std::sqrt(static_cast<double>(fanIn));
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

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
  return writeTensorFile(spec, descriptionTensors(*config, spec.sharp),
                         dir + "/model.safetensors", error);
}
