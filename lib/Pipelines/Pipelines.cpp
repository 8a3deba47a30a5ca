//===- Pipelines.cpp - the attn lowering pipeline, stage by stage ---------===//

#include "attn/Pipelines/Pipelines.h"

#include "attn/Conversion/Passes.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::buildAttnToLinalgPipeline(OpPassManager &pm,
                                           const AttnPipelineOptions &options) {
  ConvertAttnToLinalgPassOptions lowering;
  lowering.queryBlock = options.queryBlock;
  lowering.kvBlock = options.kvBlock;
  pm.addPass(createConvertAttnToLinalgPass(lowering));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::attn::buildBufferizePipeline(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // The attention loop yields a new running max while it still reads the
  // old one; let such loop results live in fresh buffers.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // A private function returning a buffer it was given (a KV cache updated
  // in place) loses that result.
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createPublicResultsToOutParamsPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createMemrefCopyToLinalgPass());
}

void mlir::attn::buildLowerToLoopsPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::buildLowerToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Intrinsics where LLVM has them (exp, tanh, sin, cos, pow, sqrt), libm
  // for the rest (erf).
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::buildAttnToLLVMPipeline(OpPassManager &pm,
                                         const AttnPipelineOptions &options) {
  buildAttnToLinalgPipeline(pm, options);
  buildBufferizePipeline(pm);
  buildLowerToLoopsPipeline(pm);
  buildLowerToLLVMPipeline(pm);
}

void mlir::attn::registerAttnPipelines() {
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-to-llvm",
      "Lower attn IR to the LLVM dialect: every attn-pipeline-* stage in order",
      buildAttnToLLVMPipeline);
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-pipeline-linalg", "Stage 1: attn ops to linalg on tensors",
      buildAttnToLinalgPipeline);
  PassPipelineRegistration<>(
      "attn-pipeline-bufferize",
      "Stage 2: tensors to memrefs; results to out-parameters; frees",
      buildBufferizePipeline);
  PassPipelineRegistration<>("attn-pipeline-loops",
                             "Stage 3: linalg on memrefs to scf loops",
                             buildLowerToLoopsPipeline);
  PassPipelineRegistration<>("attn-pipeline-llvm",
                             "Stage 4: everything to the LLVM dialect",
                             buildLowerToLLVMPipeline);
}
