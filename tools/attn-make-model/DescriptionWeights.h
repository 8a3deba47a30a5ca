//===- DescriptionWeights.h - random checkpoints for model descriptions -*- C++ -*-===//
//
// The tensors of a checkpoint, planned from the compiler's reading of its
// config (modelWeights): a family's config.json (planTensors, declared in
// ModelWriter.h) or a hand-written model description
// (docs/model-description.md), so that which tensors a model has and how they
// are named is said once, by the description. The values come from
// ModelWriter's generator under its conventions.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_MAKEMODEL_DESCRIPTIONWEIGHTS_H
#define ATTN_TOOLS_MAKEMODEL_DESCRIPTIONWEIGHTS_H

#include "ModelWriter.h"

#include "attn/Compiler/ModelConfig.h"

#include <string>
#include <vector>

namespace attn {
namespace modelgen {

/// How large the random tensors are.
struct TensorScales {
  /// Queries and keys twice as large (scores of std ~4), biases N(0, 0.5).
  bool sharp = false;
  /// The token embeddings' std (with an embedding norm, the norm's scale).
  double embeddingStd = 1.0;
};

/// The tensors of `config`'s checkpoint, named and shaped as the compiled
/// model reads them: projections N(0, 1/fan_in), their query and key lines
/// doubled when sharp; token embeddings N(0, embeddingStd); learned
/// positions N(0, 1); norm gains 1 + N(0, 0.1) (Gemma's (1 + w) stores the
/// deviation; sandwich-norm models spread N(0, 0.3)); q/k norm gains
/// N(1, 0.3), doubled when sharp; biases N(0, 0.1) (sharp: N(0, 0.5)), never
/// zero.
std::vector<TensorDesc> descriptionTensors(const mlir::attn::ModelConfig &config,
                                           const TensorScales &scales);

/// Writes DIR/config.json (a copy of the description file at
/// `descriptionPath`) and DIR/model.safetensors for it, with `spec`'s seed
/// and dtype. Returns false and sets `error` to one line on failure,
/// including a description the compiler rejects.
bool writeDescriptionModel(const std::string &descriptionPath,
                           const ModelSpec &spec, const std::string &dir,
                           std::string &error);

} // namespace modelgen
} // namespace attn

#endif // ATTN_TOOLS_MAKEMODEL_DESCRIPTIONWEIGHTS_H
