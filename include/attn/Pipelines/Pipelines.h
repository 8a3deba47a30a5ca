//===- Pipelines.h - the attn lowering pipeline, stage by stage -*- C++ -*-===//
//
// attn-to-llvm = attn-pipeline-linalg + attn-pipeline-bufferize +
//                attn-pipeline-loops + attn-pipeline-llvm.
// Each stage is registered on its own so attn-opt and attn-compile --emit can
// stop after any of them.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_PIPELINES_PIPELINES_H
#define ATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace attn {

struct AttnPipelineOptions : public PassPipelineOptions<AttnPipelineOptions> {
  PassOptions::Option<int64_t> queryBlock{
      *this, "query-block", llvm::cl::desc("Query rows per attention block"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> kvBlock{
      *this, "kv-block", llvm::cl::desc("Keys per attention block"),
      llvm::cl::init(64)};
};

/// attn ops -> linalg/tensor/scf/arith/math on tensors, canonicalized.
void buildAttnToLinalgPipeline(OpPassManager &pm,
                               const AttnPipelineOptions &options);

/// Tensors -> memrefs (one-shot, across function boundaries). Public
/// functions return through out-parameters the caller allocates; private
/// ones drop results that alias an argument (an updated KV cache) and return
/// the rest. Temporaries are freed.
void buildBufferizePipeline(OpPassManager &pm);

/// linalg on memrefs -> scf loops.
void buildLowerToLoopsPipeline(OpPassManager &pm);

/// scf/arith/math/memref/func -> the LLVM dialect, ready for translation.
void buildLowerToLLVMPipeline(OpPassManager &pm);

/// Every stage above, in order.
void buildAttnToLLVMPipeline(OpPassManager &pm,
                             const AttnPipelineOptions &options);

/// Registers attn-to-llvm and the attn-pipeline-* stages.
void registerAttnPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTN_PIPELINES_PIPELINES_H
