//===- ModelBuilder.h - a model description to attn IR ----------*- C++ -*-===//
//
// Builds the whole model in the attn dialect from a ModelConfig:
//
//   func.func private @attn_block_prefill / @attn_block_decode
//       one decoder layer (sequence length dynamic / 1), compiled once and
//       called per layer with that layer's weights and KV cache;
//   func.func @attn_prefill_impl / @attn_decode_impl
//       the entry points on memrefs: validate positions and token ids,
//       embed, run every layer, normalize, project to logits, and write the
//       KV cache in place.
//
// addModelCAbi then wraps the lowered entry points in the plain C ABI of
// runtime/include/attnrt/model_abi.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_MODELBUILDER_H
#define ATTN_COMPILER_MODELBUILDER_H

#include "attn/Compiler/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mlir {
class MLIRContext;
namespace attn {

/// Names of the generated functions.
constexpr llvm::StringLiteral kPrefillImpl = "attn_prefill_impl";
constexpr llvm::StringLiteral kDecodeImpl = "attn_decode_impl";

struct ModelBuildOptions {
  /// Positions the KV cache holds; positions 0 .. maxSeq-1 are valid.
  int64_t maxSeq = 0;
};

/// The attn-dialect module of `config` (see the file comment).
OwningOpRef<ModuleOp> buildModelModule(MLIRContext &context,
                                       const ModelConfig &config,
                                       const ModelBuildOptions &options);

/// Bytes of the KV cache buffer the runtime allocates:
/// layers x {k, v} x maxSeq x kv_heads*head_dim f32, layer-major.
int64_t kvCacheBytes(const ModelConfig &config, int64_t maxSeq);

/// The library manifest (JSON, schema in runtime/include/attnrt/model_abi.h).
std::string buildManifestJson(const ModelConfig &config, int64_t maxSeq);

/// Adds to `module` (fully lowered to the LLVM dialect) the exported C
/// functions attn_model_manifest, attn_model_prefill and attn_model_decode,
/// which unpack raw pointers into the memref descriptors the lowered entry
/// points take, and makes the entry points themselves internal.
LogicalResult addModelCAbi(ModuleOp module, const ModelConfig &config,
                           int64_t maxSeq);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_MODELBUILDER_H
