//===- attn-compile.cpp - a model description to a native library ---------===//
//
//   attn-compile MODEL_DIR|config.json|description.json -o libmodel.so
//                [--emit=description|attn|linalg|llvm|obj]
//                [--max-seq N] [--summary] [--target=CPU]
//                [the pipeline's options: --vector-width=8, --no-fusion, ...]
//                [MLIR pass manager flags]
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/ModelCompiler.h"
#include "attn/InitAll.h"
#include "attn/Support/Version.h"
#include "attn/Target/NativeCodegen.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace cl = llvm::cl;

static cl::OptionCategory category("attn-compile options");

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<model folder, config.json or model description>"),
                                  cl::cat(category));
static cl::opt<std::string> output("o", cl::desc("Output file"),
                                   cl::value_desc("path"), cl::cat(category));
static cl::opt<attn::EmitKind> emit(
    "emit", cl::desc("What to write (default: the shared library)"),
    cl::init(attn::EmitKind::Library),
    cl::values(clEnumValN(attn::EmitKind::Description, "description",
                          "the model description (JSON) that compiles to it"),
               clEnumValN(attn::EmitKind::Attn, "attn", "the model in the attn dialect"),
               clEnumValN(attn::EmitKind::Linalg, "linalg", "after lowering to linalg"),
               clEnumValN(attn::EmitKind::Llvm, "llvm", "optimized LLVM IR"),
               clEnumValN(attn::EmitKind::Object, "obj", "an object file"),
               clEnumValN(attn::EmitKind::Library, "so", "the shared library")),
    cl::cat(category));
static cl::opt<std::string> weightFormat(
    "weight-format",
    cl::desc("How projection weights are stored: f32 (default; a GGUF "
             "file's default follows its tensor types), bf16 (half "
             "the bytes), or llama.cpp's q8_0 / q4_0 blocks of 32 (8.5 and 4.5 "
             "bits per weight; int8 kernels for AVX2 and AVX-512, VNNI where "
             "the CPU has it); the runtime converts the "
             "checkpoint's weights as it packs them"),
    cl::init("f32"), cl::cat(category));
static cl::opt<std::string> headFormat(
    "head-format",
    cl::desc("How the output projection (and a tied token embedding) is "
             "stored, when not as --weight-format says (llama.cpp's "
             "--output-tensor-type: its Q4_0 files keep the output in Q6_K; "
             "a GGUF file's default follows its output tensor's type): f32, "
             "bf16, q8_0 or q4_0"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> kvFormat(
    "kv-format",
    cl::desc("How the KV cache stores keys and values: f32 (default), or bf16 "
             "/ f16 (half the bytes a long context's decode reads; rounded to "
             "nearest as they are appended, widened to f32 as attention reads "
             "them)"),
    cl::init("f32"), cl::cat(category));
static cl::opt<bool> inspect(
    "inspect",
    cl::desc("Also export attn_model_inspect and attn_model_unembed: a prompt's "
             "attention weights, residual stream and final norm, and the logit "
             "lens (attn-inspect; the prefill and decode code is unchanged)"),
    cl::cat(category));
static cl::opt<int64_t> tensorParallel(
    "tensor-parallel",
    cl::desc("Emit one rank's library of an N-way tensor-parallel split "
             "(default 1): its share of the attention heads and KV heads, the "
             "MLP columns and the vocabulary, with all-reduces where the "
             "slices meet; every rank runs the same library (docs/scale-out.md)"),
    cl::init(1), cl::cat(category));
static cl::opt<int64_t> maxSeq(
    "max-seq",
    cl::desc("Positions of the KV cache (default: the config's, at most "
             "4096)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> summary(
    "summary", cl::desc("Print the parameter split, FLOPs and KV bytes per token"),
    cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress lines"),
                           cl::cat(category));
static cl::opt<std::string> target(
    "target",
    cl::desc("The CPU the library is for, as -march names it, with feature "
             "edits: native (default), x86-64-v3, x86-64-v4, znver4, "
             "sapphirerapids, x86-64-v3,+avxvnni, ... The runtime refuses a "
             "library whose instructions the host lacks"),
    cl::value_desc("cpu[,+feature,-feature]"), cl::init("native"),
    cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-compile") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerPassManagerCLOptions();
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  registerDefaultTimingManagerCLOptions();
  // The lowering's knobs are the pipeline's own options (Pipelines.h), as
  // flags of ours.
  attn::AttnPipelineOptions pipeline;
  pipeline.addToCommandLine(category);
  // --help lists our options and MLIR's debugging flags (--mlir-timing,
  // --mlir-print-ir-after, ...), not the hundreds of backend options that
  // libLLVM.so registers in the general category.
  cl::HideUnrelatedOptions(category);
  for (auto &entry : cl::getRegisteredOptions())
    if (entry.first.starts_with("mlir-"))
      entry.second->setHiddenFlag(cl::NotHidden);
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << attnVersionText("attn-compile"); });
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-compile: compile a Hugging Face model (config.json) or a model "
      "description to a native library\n");

  llvm::Expected<attn::ModelConfig> config = attn::loadModelConfig(input);
  if (!config)
    return fail(llvm::toString(config.takeError()));
  // What of the checkpoint the model leaves out (a vision tower), always
  // said, also with --quiet.
  for (const std::string &note : config->notes)
    llvm::WithColor::note(llvm::errs(), "attn-compile") << note << "\n";
  llvm::Expected<int64_t> positions = attn::resolveMaxSeq(*config, maxSeq);
  if (!positions)
    return fail(llvm::toString(positions.takeError()));

  // A GGUF file runs in the formats its tensors call for unless told.
  if (!weightFormat.getNumOccurrences() && !config->sourceWeightFormat.empty()) {
    weightFormat = config->sourceWeightFormat;
    if (!headFormat.getNumOccurrences())
      headFormat = config->sourceHeadFormat;
  }
  std::optional<attn::WeightFormat> format = attn::parseWeightFormat(weightFormat);
  if (!format)
    return fail("--weight-format must be f32, bf16, q8_0 or q4_0, got '" + weightFormat + "'");
  std::optional<attn::WeightFormat> outputFormat;
  if (!headFormat.empty()) {
    outputFormat = attn::parseWeightFormat(headFormat);
    if (!outputFormat)
      return fail("--head-format must be f32, bf16, q8_0 or q4_0, got '" +
                  headFormat + "'");
    if (*outputFormat == *format)
      outputFormat.reset();
  }
  std::optional<attn::KvFormat> cacheFormat = attn::parseKvFormat(kvFormat);
  if (!cacheFormat)
    return fail("--kv-format must be f32, bf16 or f16, got '" + kvFormat + "'");
  llvm::Expected<attn::CpuTarget> cpu = attn::CpuTarget::parse(target);
  if (!cpu)
    return fail(llvm::toString(cpu.takeError()));
  if (llvm::Error error = attn::configureForTarget(pipeline, *cpu))
    return fail(llvm::toString(std::move(error)));
  int64_t lanes = pipeline.vectorWidth;
  if (summary)
    attn::printModelSummary(*config, *positions, llvm::outs(), *format, 2 * lanes,
                            *cacheFormat, outputFormat);
  if (output.empty()) {
    if (summary)
      return 0;
    return fail("no output file: pass -o <path> (or --summary alone)");
  }
  if (pipeline.queryBlock <= 0 || pipeline.kvBlock <= 0 || pipeline.tileRows < 0)
    return fail("--query-block and --kv-block must be positive and --tile-rows "
                "not negative");
  if (pipeline.prefetchBytes < 0)
    return fail("--prefetch-bytes must not be negative");

  DialectRegistry registry;
  attn::registerAllDialects(registry);
  attn::registerNativeCodegenTranslations(registry);
  MLIRContext context(registry);

  attn::ModelCompileOptions options;
  options.maxSeq = *positions;
  options.emit = emit;
  options.weightFormat = *format;
  options.headFormat = outputFormat;
  options.kvFormat = *cacheFormat;
  options.inspect = inspect;
  options.tensorParallel = tensorParallel;
  options.output = output;
  options.target = *cpu;
  options.pipeline.copyOptionValuesFrom(pipeline);
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();
  auto configure = [&](PassManager &pm) -> LogicalResult {
    pm.enableTiming(rootTiming);
    return applyPassManagerCLOptions(pm);
  };
  options.configurePassManager = configure;

  llvm::raw_ostream &progress = quiet ? llvm::nulls() : llvm::errs();
  if (llvm::Error error = attn::compileModel(context, *config, options, progress))
    return fail(llvm::toString(std::move(error)));
  return 0;
}
