//===- DescriptionWeights.h - random checkpoints for model descriptions -*- C++ -*-===//
//
// A model description (docs/model-description.md) names its own weights, so
// no family's tensor plan fits it: this plans the tensors from the
// compiler's reading of the description (modelWeights) and fills them with
// ModelWriter's generator under its conventions, so that a hand-written
// decoder can be tried, tested and benchmarked before it has trained
// weights.
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

/// The tensors of `config`'s checkpoint, named and shaped as the compiled
/// model reads them: projections N(0, 1/fan_in); token embeddings N(0, 0.25)
/// when tied to the head, else N(0, 1), divided by the embedding scale;
/// learned positions N(0, 1); norm gains 1 + N(0, 0.1) (N(0, 0.1) with a
/// gain offset); biases N(0, 0.1), with `sharp` N(0, 0.5), never zero.
std::vector<TensorDesc> descriptionTensors(const mlir::attn::ModelConfig &config,
                                           bool sharp);

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
