//===- Pipelines.cpp - the attn lowering pipeline, stage by stage ---------===//

#include "attn/Pipelines/Pipelines.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Target/CpuTarget.h"
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

void AttnPipelineOptions::addToCommandLine(llvm::cl::OptionCategory &category) {
  // Each option is a cl::opt registered in this struct's own subcommand;
  // registered again, it is also a flag of the top level, parsed in place.
  llvm::cl::SubCommand &own = *this;
  for (auto &entry : own.OptionsMap)
    flags.push_back(entry.second);
  auto &topLevel = llvm::cl::getRegisteredOptions();
  for (llvm::cl::Option *flag : flags) {
    // libLLVM.so registers an undocumented --threads=<int> of its own, which
    // the tool hides with the rest of the backend's options: ours replaces it.
    auto clash = topLevel.find(flag->ArgStr);
    if (clash != topLevel.end() && clash->second != flag)
      clash->second->removeArgument();
    flag->removeArgument();
    flag->addSubCommand(llvm::cl::SubCommand::getTopLevel());
    flag->addCategory(category);
    flag->addArgument();
    // A boolean takes its value optionally; --no-fusion reads better than
    // --fusion=false, and is counted as given like it.
    if (flag->getValueExpectedFlag() != llvm::cl::ValueOptional)
      continue;
    llvm::StringRef name = negationNames.emplace_back(("no-" + flag->ArgStr).str());
    llvm::StringRef help = negationNames.emplace_back(
        ("--" + flag->ArgStr + "=false").str());
    negations.push_back(std::make_unique<llvm::cl::opt<bool>>(
        name, llvm::cl::desc(help), llvm::cl::cat(category),
        llvm::cl::cb<void, bool>([flag](bool negated) {
          if (negated)
            flag->addOccurrence(0, flag->ArgStr, "false");
        })));
  }
}

AttnPipelineOptions::~AttnPipelineOptions() {
  // The command line's parser keeps pointers to its options.
  for (auto &negation : negations)
    negation->removeArgument();
  for (llvm::cl::Option *flag : flags)
    flag->removeArgument();
}

llvm::Error mlir::attn::configureForTarget(AttnPipelineOptions &options,
                                           const CpuTarget &target) {
  auto given = [](const llvm::cl::Option &option) {
    return option.getNumOccurrences() > 0;
  };
  std::string cpu = target.isHost() ? "this CPU (" + target.cpu().str() + ")"
                                    : "--target=" + target.spec().str();
  if (!given(options.vectorWidth) || options.vectorWidth == 0)
    options.vectorWidth = target.vectorWidth();
  int64_t width = options.vectorWidth;
  if (width != 4 && width != 8 && width != 16)
    return llvm::createStringError("--vector-width must be 4, 8 or 16, got " +
                                   llvm::Twine(width));

  // The bf16 prefill kernels are 16-lane ones.
  if (!given(options.amx))
    options.amx = width == 16 && target.amxBf16();
  else if (options.amx && (width != 16 || !target.amxBf16()))
    return llvm::createStringError(
        width != 16 ? "--amx needs --vector-width 16, got " + llvm::Twine(width)
                    : "--amx needs AMX tiles with bf16 products, which " +
                          llvm::Twine(cpu) + " lacks");
  if (!given(options.bf16Dot))
    options.bf16Dot = width == 16 && !options.amx && target.fastBf16Dot();
  else if (options.bf16Dot && (width != 16 || !target.has("avx512bf16")))
    return llvm::createStringError(
        width != 16
            ? "--bf16-dot needs --vector-width 16, got " + llvm::Twine(width)
            : "--bf16-dot needs AVX-512 BF16, which " + llvm::Twine(cpu) +
                  " lacks");

  // IR for a width the target has no int8 dot product at (16 lanes on an
  // AVX2 machine) names the usual one; code for it is refused where a
  // quantized format needs it (compileModel).
  std::optional<llvm::StringRef> dot = target.int8Dot(width);
  if (!given(options.int8Dot)) {
    options.int8Dot = dot ? dot->str() : width == 16 ? "vpdpbusd" : "vpmaddubsw";
    return llvm::Error::success();
  }
  std::string asked = options.int8Dot;
  if (asked != "vpdpbusd" && asked != "vpmaddubsw")
    return llvm::createStringError("--int8-dot must be vpdpbusd or vpmaddubsw, got '" +
                                   asked + "'");
  // A VNNI target has the AVX2 / AVX-512BW sequence too, not the reverse.
  if (!dot || (asked == "vpdpbusd" && *dot != "vpdpbusd"))
    return llvm::createStringError("--int8-dot=" + asked + " at --vector-width " +
                                   llvm::Twine(width) + " needs " +
                                   (asked == "vpdpbusd" ? "VNNI" : width == 16 ? "AVX-512BW" : "AVX2") +
                                   ", which " + cpu + " lacks");
  return llvm::Error::success();
}

void mlir::attn::buildAttnToLinalgPipeline(OpPassManager &pm,
                                           const AttnPipelineOptions &options) {
  if (options.fusion) {
    FuseLinearEpiloguesPassOptions fusion;
    fusion.inputNorms = options.fuseNorms;
    pm.addPass(createFuseLinearEpiloguesPass(fusion));
  }
  // A qk-norm into its RoPE: always, it only removes a pass over q and k
  // (fuse-norms=0 keeps every norm its own op, for comparisons).
  if (options.fuseNorms)
    pm.addPass(createFuseRopeNormsPass());
  ConvertAttnToLinalgPassOptions lowering;
  lowering.queryBlock = options.queryBlock;
  lowering.kvBlock = options.kvBlock;
  lowering.attentionKernel = options.attentionKernel;
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
  // in place) loses that result; canonicalization first forwards a loop's
  // buffer that is carried unchanged (a batch's pool of caches) to the
  // return, where that is seen.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createPublicResultsToOutParamsPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createMemrefCopyToLinalgPass());
}

void mlir::attn::buildLowerToLoopsPipeline(OpPassManager &pm,
                                           const AttnPipelineOptions &options) {
  LowerGemmPassOptions gemm;
  gemm.vectorWidth = options.vectorWidth;
  gemm.tileRows =
      options.tileRows > 0 ? options.tileRows : defaultTileRows(options.vectorWidth);
  gemm.kUnroll = options.kUnroll;
  gemm.prefetchBytes = options.prefetchBytes;
  gemm.int8Dot = options.int8Dot;
  gemm.amx = options.amx;
  gemm.bf16Dot = options.bf16Dot;
  pm.addPass(createLowerGemmPass(gemm));
  LowerAttentionPassOptions attention;
  attention.vectorWidth = options.vectorWidth;
  attention.blockRows = options.queryBlock;
  attention.fastExp = options.fastMath;
  // prefetch-bytes=0 turns every software prefetch off, for comparisons.
  attention.prefetch = options.prefetchBytes > 0;
  pm.addPass(createLowerAttentionPass(attention));
  // A prefill's norms, RoPE and copies over its rows on every thread.
  if (options.threads) {
    ParallelizeRowsPassOptions rows;
    rows.fuse = options.fuseRowLoops;
    pm.addPass(createParallelizeRowsPass(rows));
  }
  // Their one-row ops, and decode's, as vector code; the rest to loops.
  if (options.vectorizeRows)
    pm.addPass(createVectorizeRowsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::buildLowerToLLVMPipeline(OpPassManager &pm,
                                          const AttnPipelineOptions &options) {
  // Polynomial exp/tanh/erf: vector code instead of one libm call per lane.
  if (options.fastMath)
    pm.addPass(createApproximateMathPass());
  // bf16 conversions the same on every CPU, with no runtime-library call.
  pm.addPass(createExpandBF16Pass());
  // The kernels' scf.parallel loops run on OpenMP's thread pool.
  if (options.threads)
    pm.addPass(createParallelToOpenMPPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Intrinsics where LLVM has them (exp, tanh, sin, cos, pow, sqrt), libm
  // for the rest (erf, when not approximated). Before the vector
  // conversion: libm's scalar calls on a vector's lanes are vector ops.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = true; // the AMX kernels' tile ops, where there are any
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  // Sequential scf.parallel loops keep their per-iteration stack scope.
  pm.addPass(createScopeParallelAllocasPass());
  // scf.for first: a memref.alloca_scope in a loop body lowers to several
  // blocks, which an scf.for cannot hold.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  // ub.poison: the vectorizer's undefined start for a vector it fills.
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::attn::buildAttnToLLVMPipeline(OpPassManager &pm,
                                         const AttnPipelineOptions &options) {
  buildAttnToLinalgPipeline(pm, options);
  buildBufferizePipeline(pm);
  buildLowerToLoopsPipeline(pm, options);
  buildLowerToLLVMPipeline(pm, options);
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
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-pipeline-loops",
      "Stage 3: attn.gemm and attn.flash_attention to vector kernels, other linalg ops to loops",
      buildLowerToLoopsPipeline);
  PassPipelineRegistration<AttnPipelineOptions>(
      "attn-pipeline-llvm", "Stage 4: everything to the LLVM dialect",
      buildLowerToLLVMPipeline);
}
