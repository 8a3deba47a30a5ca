//===- Passes.td - attn CPU code generation passes -------------------------===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MemrefCopyToLinalgPass : Pass<"attn-memref-copy-to-linalg"> {
  let summary = "Rewrite memref.copy as linalg.copy";
  let description = [{
    Bufferization copies results into out-parameters and out-of-place
    buffers with `memref.copy`. Between strided memrefs (a KV cache prefix,
    a head's columns) MLIR lowers that op to a call into
    `libmlir_c_runner_utils`, which a compiled model must not depend on. As
    `linalg.copy` the copy becomes loops (or vectors) in the model itself.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def PublicResultsToOutParamsPass
    : Pass<"attn-public-results-to-out-params", "::mlir::ModuleOp"> {
  let summary = "Return public functions' buffers through caller-allocated "
                "out-parameters";
  let description = [{
    After bufferization, a public function's memref results become trailing
    out-parameters that its caller allocates (a static or dynamic shape
    alike), so no buffer ownership crosses the library boundary. Private
    functions (the per-layer functions of a model) keep returning buffers:
    their callers are compiled with them, and a caller cannot preallocate a
    result whose size the callee computes. Copies into the out-parameters are
    `linalg.copy`, which later stages vectorize.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ParallelizeRowsPass : Pass<"attn-parallelize-rows"> {
  let summary = "Run linalg ops over a dynamic number of rows as an scf.parallel over rows";
  let description = [{
    Each linalg op on memrefs whose first loop is parallel and has a dynamic
    extent (a prefill's tokens: norms, RoPE, KV cache appends, gathers) is
    tiled by one along that loop into an `scf.parallel` over rows, which
    `attn-parallel-to-openmp` runs on the thread team; convert-linalg-to-loops
    then lowers the one-row op inside. Ops over static extents (decode's
    single row) and ops already inside an `scf.parallel` are left alone.

    With `fuse`, neighbouring row loops over the same extent become one
    (a norm's four ops, RoPE's three: one fork and join of the thread team
    instead of several) when every buffer one writes and the other
    touches is accessed by both only as row iv of the same view, and
    nothing but allocations and pure ops lies between them.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "Fuse neighbouring row loops where that is safe">,
  ];
}

def VectorizeRowsPass : Pass<"attn-vectorize-rows"> {
  let summary = "Vectorize the linalg ops between the kernels (norms, RoPE, copies, activations)";
  let description = [{
    Each linalg op on memrefs with static loop ranges (after
    `attn-parallelize-rows`, a prefill's one-row ops; decode's ops as they
    are) whose iteration space holds at most `max-lanes` elements is
    vectorized whole with linalg's vectorizer and its vector ops lowered to
    one-dimensional loads, stores and arithmetic: vector code instead of
    the scalar loops convert-linalg-to-loops would make. A reduction over
    the row (RMSNorm's and LayerNorm's sums) becomes an explicit tree of
    lane-wise partial sums: a fixed order, so the result does not depend on
    the thread count. A contraction into several outputs whose inputs are
    read along the reduction, contiguously (an out_in weight's rows: a
    mixture of experts' router), is first tiled to one output at a time, a
    loop of such reductions. Ops the vectorizer cannot take (the embedding
    gather's indirect load), other contractions and larger ops stay for
    convert-linalg-to-loops.
  }];
  let options = [
    Option<"maxLanes", "max-lanes", "int64_t", /*default=*/"16384",
           "Largest iteration space (elements) vectorized whole">,
    Option<"reportLeft", "report-left", "bool", /*default=*/"false",
           "A remark on each linalg op left to scalar loops, saying why">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def LowerGemmPass : Pass<"attn-lower-gemm"> {
  let summary = "Lower attn.gemm on memrefs to register-tiled, threaded vector code";
  let description = [{
    Each bufferized `attn.gemm` becomes: a loop over chunks of input rows
    sized to stay in L2, an `scf.parallel` over blocks of output features
    (threads, through OpenMP), and per block register tiles of `tile-rows`
    rows by one weight block: the accumulators live in vector registers
    across an unrolled k loop of broadcast-FMAs over the contiguous packed
    weight, and the epilogue (row scale, bias, activation, gate, residual)
    runs on the accumulators before the only store. Rows left over, and
    decode's single row, use a one-row tile with independent accumulator
    chains, which also prefetches the weight `prefetch-bytes` ahead of its
    loads (into the next block at a block's end): a decode step streams every
    weight once, and one hardware-prefetched stream per thread reads 10-20%
    slower than the memory can deliver. A partial last block uses masked
    loads and stores. A bf16 weight is widened to f32 as it is loaded.

    A q8_0 or q4_0 weight (PackedWeight.h) is multiplied as llama.cpp does
    it: the input rows are first quantized to int8 per block of 32 (scale
    amax / 127, rounded to nearest even), then each block's products are
    AVX-512 VNNI int8 dot products (`vpdpbusd`, unsigned weight bytes times
    signed activations, the weights' offset subtracted once per block) summed
    in int32, and scaled into the f32 accumulators by the weight's and the
    activation's scales. `int8-dot` picks the instruction: `vpdpbusd`
    (AVX-512 VNNI at 16 lanes, AVX-VNNI or AVX512-VL at 8) or, on CPUs
    without VNNI, `vpmaddubsw` (AVX-512BW at 16 lanes, AVX2 at 8), whose
    pairs of products are summed in int16 and then in int32 by `vpmaddwd`:
    q4_0's unsigned nibbles times signed activations stay below 2^15 for a
    whole block, summed in int16; q8_0's signed weights meet the
    activations' magnitudes with the activations' signs moved onto them
    (`vpsignb`), which bounds a pair by 2 * 127 * 127 and needs no offset
    term. A block of the weight must be whole vectors of 8 or 16 lanes.

    With `amx`, a bf16 weight meets a prefill's rows in AMX tiles
    (`tdpbf16ps`, Sapphire Rapids and later): the input rows are rounded to
    bf16 once per gemm, each weight block is interleaved into the tiles'
    pairs of k rows once per chunk of rows, and groups of 32 rows (16 for a
    gate and up pair) accumulate in 16 x 16 f32 tiles across a fully
    unrolled k loop, then run the same epilogue from a stack copy. Decode's
    one row and a chunk's rows left over keep the f32 kernel. The process
    must be allowed to use the tiles (Linux: arch_prctl
    ARCH_REQ_XCOMP_PERM), which the runtime asks for when the manifest says
    the library needs it.

    With `bf16-dot` (and without AMX), a bf16 weight meets a prefill's rows
    through AVX-512 BF16's `vdpbf16ps` (Zen 4 and 5 run it at twice the
    FMA rate; Sapphire Rapids at half, where AMX serves instead): the input
    rows are rounded to bf16 once per gemm and stored as pairs (i32), each
    weight block is interleaved into pairs of k rows once per chunk of
    rows as for AMX, and the register tiles multiply a broadcast pair of a
    row by 16 pairs of the weight into f32 lanes. The products of bf16
    values are exact in f32; the instruction flushes denormals. Decode's
    one row and chunks of fewer than 8 rows keep the widening kernel.
  }];
  let dependentDialects = [
    "::mlir::amx::AMXDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "f32 lanes per vector (16 for AVX-512, 8 for AVX2)">,
    Option<"tileRows", "tile-rows", "int64_t", /*default=*/"8",
           "Rows of a register tile">,
    Option<"kUnroll", "k-unroll", "int64_t", /*default=*/"4",
           "Unrolling of the reduction loop">,
    Option<"l2Budget", "l2-budget", "int64_t", /*default=*/"393216",
           "Bytes of input rows kept in L2 per chunk">,
    Option<"prefetchBytes", "prefetch-bytes", "int64_t", /*default=*/"4096",
           "How far ahead one-row tiles prefetch the weight (0: not at all)">,
    Option<"int8Dot", "int8-dot", "std::string", /*default=*/"\"vpdpbusd\"",
           "The quantized kernels' int8 dot product: vpdpbusd (VNNI) or "
           "vpmaddubsw (AVX2, AVX-512BW)">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "bf16 prefill through AMX tiles (needs amx-tile and amx-bf16)">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "bf16 prefill through vdpbf16ps (needs avx512bf16; 16 lanes)">,
  ];
}

def LowerAttentionPass : Pass<"attn-lower-attention"> {
  let summary = "Lower attn.flash_attention on memrefs to a threaded "
                "FlashAttention-2 vector kernel";
  let description = [{
    Each bufferized `attn.flash_attention` becomes an `scf.parallel` (OpenMP
    threads) over (KV head, block of query positions). The rows of a block
    are all (position, query head) pairs that read its KV head, so grouped
    query heads share every key and value load. Per key block of two
    vectors of keys: scores keys-by-rows from register-tiled FMAs, an online
    softmax down the vector lanes (running max and sum per row, masked by
    the causal diagonal), and the probability-weighted values accumulated
    into a block of output rows that stays in L1. Keys past the causal
    diagonal of a block are never read. A block of fewer rows than a vector
    (decode) takes dot products along `head_dim` instead, in about
    `decode-tasks` tasks of (group of KV heads, split of the keys into
    chunks of at least `split-keys`; flash-decoding), whose partial maxima,
    sums and outputs a second parallel loop combines: a short cache is
    split by heads, a long one by keys, and a task visits all its heads per
    key block (prefetching the next), so that it reads whole KV rows. A `head_dim` that
    is not a multiple of `vector-width` uses the widest power of two lanes
    that divides it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "f32 lanes per vector (16 for AVX-512, 8 for AVX2)">,
    Option<"blockRows", "block-rows", "int64_t", /*default=*/"64",
           "(position, head) rows per block of queries">,
    Option<"splitKeys", "split-keys", "int64_t", /*default=*/"256",
           "Decode: fewest keys per split of the KV sequence">,
    Option<"decodeTasks", "decode-tasks", "int64_t", /*default=*/"16",
           "Decode: parallel tasks to aim for; KV heads are split when "
           "there are fewer">,
    Option<"fastExp", "fast-exp", "bool", /*default=*/"true",
           "Softmax exponentials by an inline polynomial for x <= 0 "
           "(otherwise math.exp)">,
    Option<"prefetch", "prefetch", "bool", /*default=*/"true",
           "Decode: prefetch the next key block's key and value rows">,
  ];
}

def ParallelToOpenMPPass : Pass<"attn-parallel-to-openmp", "::mlir::ModuleOp"> {
  let summary = "Run outermost scf.parallel loops on an OpenMP team, "
                "iterations shared round-robin";
  let description = [{
    Each outermost `scf.parallel` (without reductions) becomes an
    `omp.parallel` region in which thread `t` of `n` runs the linearized
    iterations `t, t + n, t + 2n, ...` (`omp_get_thread_num`,
    `omp_get_num_threads`), its body inside a `memref.alloca_scope`. Unlike
    `convert-scf-to-openmp`'s worksharing loops this makes no
    `__kmpc_for_static_init` call, which in Debian's libomp build formats a
    debug string (a malloc) on every loop; round-robin also balances work
    that grows along the loop, like causal attention blocks.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::omp::OpenMPDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def ScopeParallelAllocasPass : Pass<"attn-scope-parallel-allocas"> {
  let summary = "Free an scf.parallel body's stack buffers every iteration";
  let description = [{
    `scf.parallel` is an automatic allocation scope: a `memref.alloca` in
    its body lives for one iteration. Where such a loop becomes a sequential
    loop (`threads=0`, or a parallel loop nested in a thread's work),
    LLVM's `alloca` in a loop would grow the stack with every iteration;
    this pass saves the stack pointer at the top of each such body
    (`llvm.intr.stacksave`) and restores it at its end. It runs right
    before scf-to-cf, after anything that would hoist the allocas out again
    (canonicalization).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ApproximateMathPass : Pass<"attn-approximate-math"> {
  let summary = "Replace f32 exp, tanh and erf by polynomial approximations";
  let description = [{
    MLIR's polynomial approximations (math dialect, `populateMath
    PolynomialApproximationPatterns`) of `math.exp`, `math.tanh` and
    `math.erf` on f32 scalars and vectors: plain arithmetic that vectorizes,
    instead of calls into libm one element at a time. Their error is a few
    ulp (see docs/lowering.md); f64 math (RoPE angles) is left exact.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def ExpandBF16Pass : Pass<"attn-expand-bf16"> {
  let summary = "Convert between f32 and bf16 with integer arithmetic";
  let description = [{
    `arith.truncf` f32 -> bf16 (round to nearest even, NaN kept a quiet NaN)
    and `arith.extf` bf16 -> f32 as shifts and adds on the bits, MLIR's
    bf16 patterns of `arith-expand`. Without it LLVM calls `__truncsfbf2` on
    a CPU without AVX-512 BF16, which the libraries a model links do not
    define, and rounds denormals differently (to zero) on one with it; the
    expansion gives every CPU the same bits. The truncations run where
    weights are packed and where a bf16 KV cache is written, not in the
    kernels' inner loops.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
