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

#include "llvm/Support/Error.h"

#include <deque>
#include <memory>

namespace mlir {
class OpPassManager;
namespace attn {
class CpuTarget;

/// Every knob of the lowering, declared once: attn-opt's pipelines take them
/// as an option string (--attn-to-llvm="vector-width=8 fusion=false") and
/// attn-compile as flags of its own (addToCommandLine), so a new knob is one
/// field here. The options that depend on the CPU are decided by
/// configureForTarget unless given; without it (attn-opt) their defaults
/// below hold, so IR tests read the same on every machine.
struct AttnPipelineOptions : public PassPipelineOptions<AttnPipelineOptions> {
  PassOptions::Option<int64_t> queryBlock{
      *this, "query-block", llvm::cl::desc("Query rows per attention block (in the kernel: "
                                "(position, head) rows per KV head)"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> kvBlock{
      *this, "kv-block", llvm::cl::desc("Keys per attention block"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("f32 lanes per vector: 16 for AVX-512, 8 for AVX2 "
                     "(attn-compile: the target's unless given)"),
      llvm::cl::init(16)};
  PassOptions::Option<int64_t> tileRows{
      *this, "tile-rows",
      llvm::cl::desc("Rows of a gemm register tile (0: by the vector width, "
                     "defaultTileRows)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> kUnroll{
      *this, "k-unroll", llvm::cl::desc("Unrolling of gemm reduction loops"),
      llvm::cl::init(4)};
  PassOptions::Option<int64_t> prefetchBytes{
      *this, "prefetch-bytes",
      llvm::cl::desc("How far ahead one-row gemm tiles prefetch the weight "
                     "(0: not at all, nor decode attention its next keys)"),
      llvm::cl::init(4096)};
  PassOptions::Option<std::string> int8Dot{
      *this, "int8-dot",
      llvm::cl::desc("The q8_0 / q4_0 kernels' int8 dot product: vpdpbusd "
                     "(VNNI) or vpmaddubsw (AVX2, AVX-512BW) (attn-compile: "
                     "the target's unless given)"),
      llvm::cl::init("vpdpbusd")};
  PassOptions::Option<bool> amx{
      *this, "amx",
      llvm::cl::desc("bf16 prefill gemms through AMX tiles (Sapphire Rapids "
                     "and later; the runtime asks Linux for them) "
                     "(attn-compile: where the target has them)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("bf16 prefill gemms through vdpbf16ps (AVX-512 BF16) "
                     "(attn-compile: where it runs at twice the FMA rate, Zen "
                     "4 and Zen 5, and AMX is not used)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> fusion{
      *this, "fusion",
      llvm::cl::desc("Fuse elementwise ops into projection epilogues"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseNorms{
      *this, "fuse-norms",
      llvm::cl::desc("With fusion: a norm into the projection it feeds, "
                     "applied as the kernel prepares its input rows"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> attentionKernel{
      *this, "attention-kernel",
      llvm::cl::desc("Attention through the vectorized flash-attention "
                     "kernel (otherwise linalg ops)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorizeRows{
      *this, "vectorize-rows",
      llvm::cl::desc("Vector code for the ops between the kernels (norms, "
                     "RoPE, copies); otherwise scalar loops"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseRowLoops{
      *this, "fuse-row-loops",
      llvm::cl::desc("One thread-team loop for neighbouring ops over a "
                     "prefill's rows (a norm's four, RoPE's three)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> threads{
      *this, "threads",
      llvm::cl::desc("Run kernel loops on OpenMP threads"), llvm::cl::init(true)};
  PassOptions::Option<bool> fastMath{
      *this, "fast-math",
      llvm::cl::desc("Polynomial approximations of f32 exp, tanh and erf"),
      llvm::cl::init(true)};

  /// Makes these options flags of the tool's own command line, in
  /// `category` (--vector-width=8, --fusion=false), each boolean also as
  /// --no-<name>. Call once, before parsing the command line.
  void addToCommandLine(llvm::cl::OptionCategory &category);

  AttnPipelineOptions() = default;
  /// Takes back the flags addToCommandLine gave the command line.
  ~AttnPipelineOptions();

private:
  llvm::SmallVector<llvm::cl::Option *> flags;
  std::deque<std::string> negationNames;
  std::vector<std::unique_ptr<llvm::cl::opt<bool>>> negations;
};

/// Decides from `target` each option that depends on the CPU and was not
/// given (on a command line or in an option string; a value assigned in C++
/// counts as not given): the vector width, the int8 dot product, AMX tiles
/// and vdpbf16ps. A given choice the target cannot run (AMX on a CPU
/// without tiles) is an error naming both. The one place these choices are
/// made: attn-compile, the compile cache's libraries (through attn-compile),
/// the compiler's own defaults (ModelCompileOptions), tests and benchmarks.
llvm::Error configureForTarget(AttnPipelineOptions &options,
                               const CpuTarget &target);

/// Rows of a gemm register tile for `vectorWidth` f32 lanes: 8 x 2 vectors
/// of accumulators in AVX-512's 32 registers, 4 x 2 in AVX2's 16 (LLaMA-110M
/// f32 prefill on a Zen 1 EPYC, 2 threads, 5 rounds: 4 / 6 / 8 rows gave
/// 321 / 285 / 252 tok/s; 8 rows spill there).
inline int64_t defaultTileRows(int64_t vectorWidth) { return vectorWidth >= 16 ? 8 : 4; }

/// attn ops -> linalg/tensor/scf/arith/math on tensors, canonicalized.
void buildAttnToLinalgPipeline(OpPassManager &pm,
                               const AttnPipelineOptions &options);

/// Tensors -> memrefs (one-shot, across function boundaries). Public
/// functions return through out-parameters the caller allocates; private
/// ones drop results that alias an argument (an updated KV cache) and return
/// the rest. Temporaries are freed.
void buildBufferizePipeline(OpPassManager &pm);

/// attn.gemm -> register-tiled vector kernels in scf.parallel loops; other
/// linalg ops on memrefs -> scf loops.
void buildLowerToLoopsPipeline(OpPassManager &pm,
                               const AttnPipelineOptions &options);

/// scf/vector/arith/math/memref/func -> the LLVM dialect (scf.parallel
/// through OpenMP), ready for translation.
void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const AttnPipelineOptions &options);

/// Every stage above, in order.
void buildAttnToLLVMPipeline(OpPassManager &pm,
                             const AttnPipelineOptions &options);

/// Registers attn-to-llvm and the attn-pipeline-* stages.
void registerAttnPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTN_PIPELINES_PIPELINES_H
