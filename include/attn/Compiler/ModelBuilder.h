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
//       KV cache in place;
//   func.func @attn_decode_batch_impl (calling @attn_block_batch)
//       one decode step of n sequences whose caches are slots of one pool:
//       the projections over the n rows at once, attention per row;
//   func.func @attn_pack_impl
//       fills the packed projection weights from the checkpoint's (run once
//       by the runtime at load time; see ModelLayout.h);
//   func.func @attn_inspect_impl / @attn_unembed_impl (on request)
//       a prompt with its attention weights, residual stream and final norm
//       as outputs too (calling @attn_block_inspect per layer); the final
//       norm and output head of given hidden states (the logit lens).
//
// addModelCAbi then wraps the lowered entry points in the plain C ABI of
// runtime/include/attnrt/model_abi.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_MODELBUILDER_H
#define ATTN_COMPILER_MODELBUILDER_H

#include "attn/Compiler/ModelConfig.h"
#include "attn/Compiler/ModelLayout.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
namespace attn {

/// Names of the generated functions.
constexpr llvm::StringLiteral kPrefillImpl = "attn_prefill_impl";
constexpr llvm::StringLiteral kDecodeImpl = "attn_decode_impl";
/// One decode step of several sequences, each a slot of a pool of caches.
constexpr llvm::StringLiteral kDecodeBatchImpl = "attn_decode_batch_impl";
/// With ModelBuildOptions::inspect: a prompt from position 0 that also
/// writes every layer's attention weights, the residual stream and the final
/// norm; and the final norm and output head of any hidden states.
constexpr llvm::StringLiteral kInspectImpl = "attn_inspect_impl";
constexpr llvm::StringLiteral kUnembedImpl = "attn_unembed_impl";
/// attn_pack_impl_<kind> fills one packed buffer of that kind (packKinds).
constexpr llvm::StringLiteral kPackImpl = "attn_pack_impl";

/// How the KV cache stores keys and values: f32, or rounded to bf16 / f16
/// (half the bytes; attention widens them to f32 as it reads them).
enum class KvFormat { F32, BF16, F16 };

/// "f32", "bf16", "f16"; and back (nullopt for another name).
const char *kvFormatName(KvFormat format);
std::optional<KvFormat> parseKvFormat(llvm::StringRef name);
/// Bytes of one cached element.
inline int64_t kvElementBytes(KvFormat format) {
  return format == KvFormat::F32 ? 4 : 2;
}
/// The element type compiled code stores cached keys and values in.
Type kvElementType(MLIRContext *context, KvFormat format);

struct ModelBuildOptions {
  /// Positions the KV cache holds; positions 0 .. maxSeq-1 are valid.
  int64_t maxSeq = 0;
  /// Output features per packed weight block (two vectors of the target).
  int64_t blockSize = 32;
  /// How the packed projection matrices are stored.
  WeightFormat weightFormat = WeightFormat::F32;
  /// The output projection's format when it differs (planModelLayout).
  std::optional<WeightFormat> headFormat;
  /// How the KV cache stores keys and values.
  KvFormat kvFormat = KvFormat::F32;
  /// Also build the inspection entry points (kInspectImpl, kUnembedImpl),
  /// which materialize every attention matrix: the fast path is unchanged.
  bool inspect = false;
  /// Ranks of a tensor-parallel split (attn-compile --tensor-parallel N):
  /// the library is one rank's (its heads, KV heads, MLP columns and
  /// vocabulary slice), the rank a runtime value. 1: the whole model.
  int64_t tensorParallel = 1;
  /// The gemms may run on AMX tiles (attn-lower-gemm amx with bf16
  /// weights): the manifest says so, and the runtime asks Linux for them.
  bool amxTiles = false;
  /// The CPU the code is compiled for and the features it may use
  /// (CpuTarget::requiredFeatures), recorded in the manifest so the runtime
  /// can refuse it on a CPU without them. Empty: not recorded.
  std::string targetCpu;
  std::vector<std::string> targetFeatures;
};

/// The attn-dialect module of `config` (see the file comment).
OwningOpRef<ModuleOp> buildModelModule(MLIRContext &context,
                                       const ModelConfig &config,
                                       const ModelBuildOptions &options);

/// Rows of layer `layer`'s key (and value) cache: maxSeq, or its sliding
/// window when that is shorter (the cache is then a ring of window rows).
int64_t kvCacheRows(const ModelConfig &config, int64_t layer, int64_t maxSeq);

/// Bytes of the KV cache buffer the runtime allocates: per layer {k, v} x
/// kvCacheRows x kv_heads*head_dim elements of `format`, layer-major.
int64_t kvCacheBytes(const ModelConfig &config, int64_t maxSeq, KvFormat format);

/// HF's ALiBi slopes (BLOOM's build_alibi_tensor) for `heads` heads: with n
/// the largest power of two <= heads, 2^(-8(h+1)/n) for h < n, then the odd
/// powers 2^(-4(2m+1)/n) for the rest, as f32.
llvm::SmallVector<float> alibiSlopes(int64_t heads);

/// The library manifest (JSON, schema in runtime/include/attnrt/model_abi.h).
std::string buildManifestJson(const ModelConfig &config,
                              const ModelBuildOptions &options);

/// Adds to `module` (fully lowered to the LLVM dialect) the exported C
/// functions attn_model_manifest, attn_model_pack, attn_model_prefill,
/// attn_model_decode and attn_model_set_num_threads, which unpack the
/// weight table into the memref descriptors the lowered functions take, and
/// makes everything else internal.
LogicalResult addModelCAbi(ModuleOp module, const ModelConfig &config,
                           const ModelBuildOptions &options);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_MODELBUILDER_H
