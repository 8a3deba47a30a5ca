//===- ModelCompiler.h - config.json to a native model library --*- C++ -*-===//
//
// The driver behind attn-compile: build the attn IR of a model, run the
// attn-to-llvm stages with a progress line per stage, add the C ABI, and
// emit the stage the user asked for (attn, linalg, llvm, obj, or the shared
// library).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_MODELCOMPILER_H
#define ATTN_COMPILER_MODELCOMPILER_H

#include "attn/Compiler/ModelBuilder.h"
#include "attn/Compiler/ModelConfig.h"
#include "attn/Compiler/ModelLayout.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Target/CpuTarget.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
class MLIRContext;
class PassManager;
namespace attn {

/// What attn-compile writes.
enum class EmitKind {
  Description, ///< the model description file (docs/model-description.md)
  Attn,    ///< the model in the attn dialect (MLIR text)
  Linalg,  ///< after attn-pipeline-linalg (MLIR text)
  Llvm,    ///< optimized LLVM IR text
  Object,  ///< an object file for the host
  Library, ///< the shared library the runtime loads (default)
};

/// The KV cache positions when none are asked for, unless the config has
/// fewer.
constexpr int64_t kDefaultMaxSeq = 4096;

struct ModelCompileOptions {
  /// The host's choices of vector width, int8 dot product, AMX and
  /// vdpbf16ps; assign to `pipeline` to override them, or configure it for
  /// another `target` (configureForTarget).
  ModelCompileOptions() { llvm::cantFail(configureForTarget(pipeline, target)); }

  /// Positions of the KV cache; 0 takes min(the config's (n_positions /
  /// max_position_embeddings), kDefaultMaxSeq).
  int64_t maxSeq = 0;
  EmitKind emit = EmitKind::Library;
  /// How the packed projection matrices are stored (the runtime converts
  /// the checkpoint's weights when it packs them).
  WeightFormat weightFormat = WeightFormat::F32;
  /// The output projection's (and a tied token embedding's) format, when
  /// not weightFormat: llama.cpp's --output-tensor-type.
  std::optional<WeightFormat> headFormat;
  /// How the KV cache stores keys and values.
  KvFormat kvFormat = KvFormat::F32;
  /// Also export the inspection entry points (attn_model_inspect,
  /// attn_model_unembed).
  bool inspect = false;
  /// One rank's library of an N-way tensor-parallel split
  /// (ModelBuildOptions::tensorParallel); 1: the whole model.
  int64_t tensorParallel = 1;
  /// Output path; "-" writes text forms to stdout.
  std::string output;
  /// The CPU the machine code is for: the TargetMachine and the manifest's
  /// features follow it, and `pipeline` must be configured for it.
  CpuTarget target = CpuTarget::host();
  AttnPipelineOptions pipeline;
  /// Lets the caller apply MLIR's pass manager flags (timing, IR printing).
  llvm::function_ref<LogicalResult(PassManager &)> configurePassManager;
};

/// The KV cache length `options` asks for (0: the default above), checked
/// against `config`.
llvm::Expected<int64_t> resolveMaxSeq(const ModelConfig &config,
                                      int64_t requested);

/// Compiles `config`; writes one progress line per stage to `progress`.
llvm::Error compileModel(MLIRContext &context, const ModelConfig &config,
                         const ModelCompileOptions &options,
                         llvm::raw_ostream &progress);

/// compileModel in a context of its own, with every dialect and the native
/// code generation registered (what tests and benchmarks need).
llvm::Error compileModel(const ModelConfig &config,
                         const ModelCompileOptions &options,
                         llvm::raw_ostream &progress);

/// The parameter summary of `config` (--summary): embeddings / attention /
/// MLP / norms / output with shares, the bytes the runtime keeps resident
/// with the weights packed in blocks of `blockSize` as `format` says, FLOPs
/// per token and KV-cache bytes per token in `kvFormat`.
void printModelSummary(const ModelConfig &config, int64_t maxSeq,
                       llvm::raw_ostream &os,
                       WeightFormat format = WeightFormat::F32,
                       int64_t blockSize = 32, KvFormat kvFormat = KvFormat::F32,
                       std::optional<WeightFormat> headFormat = std::nullopt);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_MODELCOMPILER_H
