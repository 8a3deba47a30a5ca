//===- ModelConfig.h - Hugging Face model descriptions ----------*- C++ -*-===//
//
// Reads a Hugging Face style config.json (GPT-2 and LLaMA families) into one
// family-neutral description, rejecting unknown families, unsupported options
// and inconsistent values with an error that names the key. Also knows how
// each family's checkpoints name their tensors.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_MODELCONFIG_H
#define ATTN_COMPILER_MODELCONFIG_H

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
namespace attn {

enum class ModelFamily { Gpt2, Llama };

/// The dimensions and options of a decoder-only transformer.
struct ModelConfig {
  ModelFamily family = ModelFamily::Gpt2;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t intermediateSize = 0;
  /// Positions the model was built for (n_positions, max_position_embeddings).
  int64_t maxPositions = 0;
  /// LayerNorm (GPT-2) or RMSNorm (LLaMA) epsilon.
  double normEpsilon = 0;
  /// GPT-2's MLP activation.
  GeluApproximation gelu = GeluApproximation::Tanh;
  /// LLaMA's RoPE base.
  double ropeTheta = 10000.0;
  /// Whether the output projection reuses the token embedding.
  bool tieEmbeddings = true;

  llvm::StringRef familyName() const {
    return family == ModelFamily::Gpt2 ? "gpt2" : "llama";
  }
  /// Features of all query heads (differs from hiddenSize when head_dim is set).
  int64_t queryFeatures() const { return numHeads * headDim; }
  int64_t kvFeatures() const { return numKvHeads * headDim; }
};

/// Parses config.json text; `fileName` prefixes error messages.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json,
                                             llvm::StringRef fileName);

/// Reads `path`: a config.json, or a folder that contains one.
llvm::Expected<ModelConfig> loadModelConfig(llvm::StringRef path);

/// What a weight tensor is, for the parameter summary.
enum class WeightRole { Embedding, Attention, Mlp, Norm, Output };

/// One tensor the compiled model reads, named as Hugging Face checkpoints
/// name it.
struct WeightSpec {
  std::string name;
  llvm::SmallVector<int64_t, 2> shape;
  WeightRole role;
  /// Transformer layer, or -1 for embeddings, final norm and output.
  int64_t layer = -1;

  int64_t numElements() const;
};

/// Every weight of `config`, in the order the compiled entry points take
/// them: embeddings, then each layer's, then the final norm and the output
/// projection (when not tied).
std::vector<WeightSpec> modelWeights(const ModelConfig &config);

/// Prefixes a checkpoint may put before the names above
/// (GPT-2's "transformer.").
std::vector<std::string> weightNamePrefixes(const ModelConfig &config);

/// Name suffixes of buffers checkpoints carry that are not weights (GPT-2's
/// causal-mask buffers, LLaMA's rotary inv_freq, a tied lm_head copy).
std::vector<std::string> ignoredTensorSuffixes(const ModelConfig &config);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_MODELCONFIG_H
