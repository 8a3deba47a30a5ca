//===- ModelCompiler.cpp - config.json to a native model library ----------===//

#include "attn/Compiler/ModelCompiler.h"

#include "attn/Compiler/ModelBuilder.h"
#include "attn/InitAll.h"
#include "attn/Target/NativeCodegen.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <chrono>

using namespace mlir;
using namespace mlir::attn;

llvm::Expected<int64_t> mlir::attn::resolveMaxSeq(const ModelConfig &config,
                                                  int64_t requested) {
  if (requested < 0)
    return llvm::createStringError("--max-seq must be positive, got " +
                                   std::to_string(requested));
  // Current configs state 32768 to 131072 positions, and a KV cache that
  // size costs gigabytes per session: the default is a context that fits,
  // a longer one is the user's choice. When every layer slides a window,
  // the cache holds the window whatever the context: the model's own.
  if (requested == 0) {
    const std::vector<int64_t> &windows = config.attention.windows;
    bool everyLayerWindowed =
        !windows.empty() &&
        llvm::all_of(windows, [](int64_t window) { return window > 0; });
    return everyLayerWindowed ? config.maxPositions
                              : std::min(config.maxPositions, kDefaultMaxSeq);
  }
  // A learned position table ends at its size; RoPE has no table.
  if (config.positionsBounded && requested > config.maxPositions)
    return llvm::createStringError(
        "--max-seq " + std::to_string(requested) + " exceeds the " +
        std::to_string(config.maxPositions) + " learned positions of this " +
        config.architecture + " model (" + config.maxPositionsKey + ")");
  if (requested > (int64_t(1) << 20))
    return llvm::createStringError("--max-seq " + std::to_string(requested) +
                                   " is larger than the supported 1048576");
  return requested;
}

namespace {

/// Prints "  <stage> ... <seconds>" once the stage is done.
class StageTimer {
public:
  StageTimer(llvm::raw_ostream &os, llvm::StringRef name)
      : os(os), name(name.str()), start(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    os << llvm::format("attn-compile: %-28s %7.2f s\n", name.c_str(), seconds);
    os.flush();
  }

private:
  llvm::raw_ostream &os;
  std::string name;
  std::chrono::steady_clock::time_point start;
};

/// Writes text to `path` ("-" is stdout).
llvm::Error writeText(llvm::StringRef path,
                      llvm::function_ref<void(llvm::raw_ostream &)> print) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError("cannot write '" + path.str() +
                                   "': " + ec.message());
  print(out.os());
  out.keep();
  return llvm::Error::success();
}

LogicalResult runStage(MLIRContext &context, ModuleOp module,
                       const ModelCompileOptions &options,
                       llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(&context);
  if (options.configurePassManager &&
      failed(options.configurePassManager(pm)))
    return failure();
  build(pm);
  return pm.run(module);
}

} // namespace

llvm::Error mlir::attn::compileModel(const ModelConfig &config,
                                     const ModelCompileOptions &options,
                                     llvm::raw_ostream &progress) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerNativeCodegenTranslations(registry);
  MLIRContext context(registry);
  return compileModel(context, config, options, progress);
}

llvm::Error mlir::attn::compileModel(MLIRContext &context,
                                     const ModelConfig &config,
                                     const ModelCompileOptions &options,
                                     llvm::raw_ostream &progress) {
  llvm::Expected<int64_t> maxSeq = resolveMaxSeq(config, options.maxSeq);
  if (!maxSeq)
    return maxSeq.takeError();
  if (options.emit == EmitKind::Description)
    return writeText(options.output, [&](llvm::raw_ostream &os) {
      os << describeModel(config);
    });

  if (llvm::Error err = checkTensorParallel(config, options.tensorParallel))
    return err;
  if (options.tensorParallel > 1 && options.inspect)
    return llvm::createStringError(
        "--inspect and --tensor-parallel cannot be combined: inspect a model "
        "in one process");
  // The target's choices were made by configureForTarget (attn-compile, or
  // ModelCompileOptions' own defaults for the host).
  const AttnPipelineOptions &pipeline = options.pipeline;
  // The int8 dot product, for the layers' or only the head's blocks.
  bool headOnly = options.headFormat && isQuantized(*options.headFormat) &&
                  !isQuantized(options.weightFormat);
  WeightFormat quantized = headOnly ? *options.headFormat : options.weightFormat;
  if (isQuantized(quantized)) {
    std::string name = std::string(headOnly ? "--head-format " : "--weight-format ") +
                       weightFormatName(quantized);
    int64_t width = pipeline.vectorWidth;
    if (width != 16 && width != 8)
      return llvm::createStringError(
          name +
          " needs 8-lane (AVX2) or 16-lane (AVX-512) vectors for its int8 dot "
          "products, got --vector-width " + llvm::Twine(width));
    bool native = options.emit == EmitKind::Llvm || options.emit == EmitKind::Object ||
                  options.emit == EmitKind::Library;
    std::optional<llvm::StringRef> dot = options.target.int8Dot(width);
    if (native && !dot)
      return llvm::createStringError(
          name + " at --vector-width " + llvm::Twine(width) +
          " needs an int8 dot product (" + (width == 16 ? "AVX-512BW" : "AVX2") +
          "), which " +
          (options.target.isHost() ? "this CPU (" + hostCpuName() + ")"
                                   : "--target=" + options.target.spec().str()) +
          " lacks; use --weight-format bf16 or f32");
  }

  // A packed weight block is two vectors of the target: the register tile's
  // width.
  ModelBuildOptions build;
  build.maxSeq = *maxSeq;
  build.blockSize = 2 * options.pipeline.vectorWidth;
  build.weightFormat = options.weightFormat;
  build.headFormat = options.headFormat;
  build.kvFormat = options.kvFormat;
  build.inspect = options.inspect;
  build.tensorParallel = options.tensorParallel;
  build.amxTiles = pipeline.amx && options.weightFormat == WeightFormat::BF16;
  build.targetCpu = options.target.cpu().str();
  build.targetFeatures = options.target.requiredFeatures();
  OwningOpRef<ModuleOp> module;
  {
    StageTimer timer(progress, "build attn IR");
    module = buildModelModule(context, config, build);
    if (failed(verify(*module)))
      return llvm::createStringError("internal error: the generated attn IR "
                                     "does not verify");
  }
  auto printModule = [&](llvm::raw_ostream &os) { module->print(os); };
  if (options.emit == EmitKind::Attn)
    return writeText(options.output, printModule);

  {
    StageTimer timer(progress, "attn -> linalg");
    if (failed(runStage(context, *module, options, [&](OpPassManager &pm) {
          buildAttnToLinalgPipeline(pm, pipeline);
        })))
      return llvm::createStringError("lowering to linalg failed");
  }
  if (options.emit == EmitKind::Linalg)
    return writeText(options.output, printModule);

  {
    StageTimer timer(progress, "bufferize, lower to LLVM");
    if (failed(runStage(context, *module, options, [&](OpPassManager &pm) {
          buildBufferizePipeline(pm);
          buildLowerToLoopsPipeline(pm, pipeline);
          buildLowerToLLVMPipeline(pm, pipeline);
        })))
      return llvm::createStringError("lowering to the LLVM dialect failed");
    if (failed(addModelCAbi(*module, config, build)))
      return llvm::createStringError("adding the C ABI failed");
  }

  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      options.target.createTargetMachine();
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    StageTimer timer(progress, "translate, optimize (-O3)");
    llvm::Expected<std::unique_ptr<llvm::Module>> translated =
        translateToLLVMIR(*module, llvmContext, **machine);
    if (!translated)
      return translated.takeError();
    llvmModule = std::move(*translated);
    if (llvm::Error error = optimizeLLVMIR(*llvmModule, **machine))
      return error;
  }
  if (options.emit == EmitKind::Llvm)
    return writeText(options.output,
                     [&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); });

  std::string object = options.emit == EmitKind::Object
                           ? options.output
                           : options.output + ".o";
  {
    StageTimer timer(progress, "machine code");
    if (llvm::Error error = writeObjectFile(*llvmModule, **machine, object))
      return error;
  }
  if (options.emit == EmitKind::Object)
    return llvm::Error::success();

  StageTimer timer(progress, "link");
  llvm::Error linked =
      linkSharedLibrary({object}, options.output, modelLinkArgs());
  llvm::sys::fs::remove(object);
  return linked;
}

void mlir::attn::printModelSummary(const ModelConfig &config, int64_t maxSeq,
                                   llvm::raw_ostream &os, WeightFormat format,
                                   int64_t blockSize, KvFormat kvFormat,
                                   std::optional<WeightFormat> headFormat) {
  int64_t byRole[5] = {0, 0, 0, 0, 0};
  int64_t tokenEmbedding = 0, positionEmbedding = 0;
  for (const WeightSpec &weight : modelWeights(config)) {
    byRole[static_cast<int>(weight.role)] += weight.numElements();
    if (weight.role == WeightRole::Embedding) {
      if (tokenEmbedding == 0)
        tokenEmbedding = weight.numElements();
      else
        positionEmbedding = weight.numElements();
    }
  }
  int64_t total = 0;
  for (int64_t count : byRole)
    total += count;
  auto millions = [](int64_t count) { return count / 1e6; };
  auto share = [&](int64_t count) { return 100.0 * count / total; };
  int64_t layers = config.numLayers;

  os << llvm::format("model: %s, %lld layers, hidden %lld, %lld heads (%lld KV) "
                     "of %lld, MLP %lld, vocab %lld, context %lld\n",
                     config.familyName().str().c_str(), (long long)layers,
                     (long long)config.hiddenSize, (long long)config.numHeads,
                     (long long)config.numKvHeads, (long long)config.headDim,
                     (long long)config.intermediateSize,
                     (long long)config.vocabSize, (long long)maxSeq);
  os << "parameters:\n";
  os << llvm::format("  embeddings  %9.2fM  %5.1f%%   token %.2fM", millions(byRole[0]),
                     share(byRole[0]), millions(tokenEmbedding));
  if (positionEmbedding)
    os << llvm::format(", position %.2fM", millions(positionEmbedding));
  os << "\n";
  os << llvm::format("  attention   %9.2fM  %5.1f%%   %.2fM per layer\n",
                     millions(byRole[1]), share(byRole[1]),
                     millions(byRole[1] / layers));
  os << llvm::format("  MLP         %9.2fM  %5.1f%%   %.2fM per layer\n",
                     millions(byRole[2]), share(byRole[2]),
                     millions(byRole[2] / layers));
  os << llvm::format("  norms       %9.2fM  %5.1f%%\n", millions(byRole[3]),
                     share(byRole[3]));
  if (config.tieEmbeddings)
    os << "  output         (tied to the token embedding)\n";
  else
    os << llvm::format("  output      %9.2fM  %5.1f%%\n", millions(byRole[4]),
                       share(byRole[4]));
  os << llvm::format("  total       %9.2fM  (%.1f MB of f32)\n", millions(total),
                     total * 4 / 1e6);
  // What stays resident after packing: the packed buffers and the f32
  // weights the entry points read as stored.
  ModelLayout layout = planModelLayout(config, blockSize, format, 1, headFormat);
  int64_t resident = 0;
  for (const PackedWeight &packed : layout.packed)
    resident += packed.bytes();
  for (auto [index, weight] : llvm::enumerate(layout.weights))
    if (layout.usedAtRunTime[index])
      resident += weight.numElements() * 4;
  os << llvm::format("  resident    %.1f MB of weights with %s projections",
                     resident / 1e6, weightFormatName(format));
  if (headFormat && *headFormat != format)
    os << " (" << weightFormatName(*headFormat) << " output)";
  os << "\n";

  // A token runs top_k of each MoE layer's experts: the others' parameters
  // (and bytes) are neither multiplied nor read for it.
  const MoeSpec &moe = config.moe;
  int64_t moeLayers = 0, idleExpertBytes = 0;
  for (int64_t layer = 0; layer < layers; ++layer)
    moeLayers += config.isMoeLayer(layer);
  int64_t idle = config.idleExpertParameters();
  for (const PackedWeight &packed : layout.packed)
    if (packed.experts)
      idleExpertBytes +=
          packed.bytes() / packed.experts * (packed.experts - moe.topK);
  // Of an embedding table a decoded token reads one row, unless it is the
  // tied output projection too.
  int64_t tokenTable = -1, tableBytes = 0;
  for (auto [index, weight] : llvm::enumerate(layout.weights))
    if (weight.role == WeightRole::Embedding && tokenTable < 0)
      tokenTable = static_cast<int64_t>(index);
  auto readByRow = [&](int64_t index) {
    return layout.weights[index].role == WeightRole::Embedding &&
           !(config.tieEmbeddings && index == tokenTable);
  };
  for (const PackedWeight &packed : layout.packed)
    if (!packed.sources.empty() && readByRow(packed.sources.front().weight))
      tableBytes += packed.bytes();
  for (auto [index, weight] : llvm::enumerate(layout.weights))
    if (layout.usedAtRunTime[index] && readByRow(static_cast<int64_t>(index)))
      tableBytes += weight.numElements() * 4;
  if (moeLayers)
    os << llvm::format("  active      %9.2fM  per token: %lld of %lld experts "
                       "in %lld MoE layers; %.1f MB of weights read per "
                       "decoded token\n",
                       millions(total - idle), (long long)moe.topK,
                       (long long)moe.numExperts, (long long)moeLayers,
                       (resident - idleExpertBytes - tableBytes) / 1e6);

  // Every projection weight costs a multiply and an add per token; the
  // output projection reads the token embedding when tied.
  int64_t matmulWeights = byRole[1] + byRole[2] - idle +
                          (config.tieEmbeddings ? tokenEmbedding : byRole[4]);
  int64_t attentionPerKey = 4 * layers * config.numHeads * config.headDim;
  os << llvm::format("FLOPs per token: %.1f MFLOP in projections (2 x %.2fM "
                     "weights) + %lld per cached position in attention "
                     "(%.1f MFLOP at %lld positions)\n",
                     2.0 * matmulWeights / 1e6, millions(matmulWeights),
                     (long long)attentionPerKey,
                     attentionPerKey * (double)maxSeq / 1e6, (long long)maxSeq);
  int64_t elementBytes = kvElementBytes(kvFormat);
  int64_t kvPerToken = 2 * layers * config.kvFeatures() * elementBytes;
  os << llvm::format("KV cache: %lld bytes per token (2 x %lld layers x %lld "
                     "x %lld B, %s); %.1f MB for %lld positions",
                     (long long)kvPerToken, (long long)layers,
                     (long long)config.kvFeatures(), (long long)elementBytes,
                     kvFormatName(kvFormat),
                     kvCacheBytes(config, maxSeq, kvFormat) / 1e6, (long long)maxSeq);
  int64_t ringLayers = 0, window = 0;
  for (int64_t layer = 0; layer < layers; ++layer)
    if (kvCacheRows(config, layer, maxSeq) < maxSeq) {
      ++ringLayers;
      window = kvCacheRows(config, layer, maxSeq);
    }
  if (ringLayers)
    os << llvm::format(" (%lld of %lld layers keep only their sliding window "
                       "of %lld)",
                       (long long)ringLayers, (long long)layers, (long long)window);
  os << "\n";
}
