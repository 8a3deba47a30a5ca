//===- OpsE2ETest.cpp - every attn op, compiled and run, vs the reference -===//
//
// Each test compiles attn IR with a dynamic sequence dimension once, through
// the full attn-to-llvm pipeline and the native back end, then calls it at
// several lengths (1, 3, 17, 129, ...) and compares with the naive double-
// precision reference in test/reference.
//
// Tolerances (fp32): per op, max |actual - expected| <= 1e-5 * max |expected|;
// whole decoder blocks (BlocksE2ETest.cpp) use 1e-4. Inputs are drawn large enough to matter:
// activations with std 1 (more for activations' tails), weights with std
// 1/sqrt(fan_in), so attention is far from uniform and a wrong head mapping,
// mask or rotation moves the output by much more than the tolerance.
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/CompiledModule.h"
#include "attn/Compiler/ModelConfig.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"
#include "attn/Target/CpuTarget.h"
#include "attn/Target/NativeCodegen.h"
#include "Quantize.h"
#include "Reference.h"

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace mlir::attn;
namespace ref = attn::ref;

namespace {

constexpr double kOpTolerance = 1e-5;
const std::vector<int64_t> kSeqLengths = {1, 3, 17, 129};

std::unique_ptr<CompiledModule> compileOrDie(const std::string &source,
                                             CompileOptions options = {}) {
  std::string error;
  std::unique_ptr<CompiledModule> module =
      CompiledModule::compile(source, options, error);
  EXPECT_TRUE(module) << "compilation failed:\n" << error << "\n" << source;
  return module;
}

std::vector<float> random(size_t n, float stddev, uint64_t seed) {
  return ref::randomTensor(n, stddev, seed);
}

/// Weights with std 1/sqrt(fanIn): the scale of trained layers.
std::vector<float> weights(size_t n, int64_t fanIn, uint64_t seed) {
  return ref::randomTensor(n, 1.0f / std::sqrt(static_cast<float>(fanIn)),
                           seed);
}

#define EXPECT_CLOSE(actual, expected, tolerance)                              \
  EXPECT_LE(ref::maxRelError(actual, expected), tolerance)

//===----------------------------------------------------------------------===//
// Embedding and linear
//===----------------------------------------------------------------------===//

TEST(Embedding, GathersRowsAndClampsBadIds) {
  const int64_t vocab = 50, dim = 17;
  auto module = compileOrDie(llvm::formatv(R"mlir(
    func.func @embed(%table: tensor<{0}x{1}xf32>, %ids: tensor<?xi32>) -> tensor<?x{1}xf32> {
      %0 = attn.embedding %table[%ids] : tensor<{0}x{1}xf32>, tensor<?xi32> -> tensor<?x{1}xf32>
      return %0 : tensor<?x{1}xf32>
    })mlir", vocab, dim).str());
  ASSERT_TRUE(module);
  std::vector<float> table = random(vocab * dim, 1.0f, 1);
  for (int64_t n : kSeqLengths) {
    std::vector<int32_t> ids(n);
    for (int64_t s = 0; s < n; ++s)
      ids[s] = static_cast<int32_t>((s * 7 + 3) % vocab);
    ids[0] = n > 1 ? vocab - 1 : 0;
    if (n > 2) {
      ids[1] = -5;   // clamped to 0
      ids[2] = 1000; // clamped to vocab - 1
    }
    Buffer2D tableBuf(table, {vocab, dim});
    Buffer<int32_t, 1> idBuf(ids, {n});
    Buffer2D out(std::vector<float>(n * dim), {n, dim});
    ASSERT_TRUE(module->call("embed", tableBuf.memref(), idBuf.memref(), out.memref()));
    std::vector<int64_t> ids64(ids.begin(), ids.end());
    EXPECT_EQ(ref::maxAbsError(out.values(), ref::embedding(table, vocab, dim, ids64)), 0.0)
        << "n=" << n;
  }
}

// Gemma and XGLM scale token embeddings by sqrt(width), in f32.
TEST(Embedding, ScaleMultipliesTheRows) {
  const int64_t vocab = 50, dim = 48;
  const float scale = std::sqrt(48.0f);
  auto module = compileOrDie(llvm::formatv(R"mlir(
    func.func @embed(%table: tensor<{0}x{1}xf32>, %ids: tensor<?xi32>) -> tensor<?x{1}xf32> {
      %0 = attn.embedding %table[%ids] scale({2:e}) : tensor<{0}x{1}xf32>, tensor<?xi32> -> tensor<?x{1}xf32>
      return %0 : tensor<?x{1}xf32>
    })mlir", vocab, dim, static_cast<double>(scale)).str());
  ASSERT_TRUE(module);
  std::vector<float> table = random(vocab * dim, 1.0f, 2);
  std::vector<int32_t> ids = {3, 49, 0, 17, 3};
  Buffer2D tableBuf(table, {vocab, dim});
  Buffer<int32_t, 1> idBuf(ids, {5});
  Buffer2D out(std::vector<float>(5 * dim), {5, dim});
  ASSERT_TRUE(module->call("embed", tableBuf.memref(), idBuf.memref(), out.memref()));
  std::vector<float> expected =
      ref::embedding(table, vocab, dim, std::vector<int64_t>(ids.begin(), ids.end()));
  for (float &value : expected)
    value *= scale;
  EXPECT_EQ(ref::maxAbsError(out.values(), expected), 0.0);
}

struct LinearCase {
  int64_t in, out;
  bool outIn, bias;
};

TEST(Linear, BothLayoutsWithAndWithoutBias) {
  const std::vector<LinearCase> cases = {
      {32, 48, true, true}, {64, 80, false, false}, {80, 128, true, false}, {768, 96, false, true}};
  std::string source;
  for (auto [index, c] : llvm::enumerate(cases)) {
    std::string weightType = c.outIn ? llvm::formatv("tensor<{0}x{1}xf32>", c.out, c.in).str()
                                     : llvm::formatv("tensor<{0}x{1}xf32>", c.in, c.out).str();
    std::string biasArg = c.bias ? llvm::formatv(", %b: tensor<{0}xf32>", c.out).str() : "";
    std::string biasUse = c.bias ? ", %b" : "";
    std::string biasType = c.bias ? llvm::formatv(", tensor<{0}xf32>", c.out).str() : "";
    source += llvm::formatv(R"mlir(
      func.func @linear{0}(%x: tensor<?x{1}xf32>, %w: {3}{4}) -> tensor<?x{2}xf32> {
        %0 = attn.linear %x, %w{5} layout({6}) : tensor<?x{1}xf32>, {3}{7} -> tensor<?x{2}xf32>
        return %0 : tensor<?x{2}xf32>
      })mlir", index, c.in, c.out, weightType, biasArg, biasUse,
                            c.outIn ? "out_in" : "in_out", biasType).str();
  }
  auto module = compileOrDie(source);
  ASSERT_TRUE(module);
  for (auto [index, c] : llvm::enumerate(cases)) {
    std::vector<float> w = weights(c.in * c.out, c.in, 10 + index);
    std::vector<float> b = random(c.out, 1.0f, 20 + index);
    for (int64_t m : kSeqLengths) {
      std::vector<float> x = random(m * c.in, 1.0f, 30 + m);
      Buffer2D xBuf(x, {m, c.in});
      Buffer2D wBuf(w, c.outIn ? std::array<int64_t, 2>{c.out, c.in}
                               : std::array<int64_t, 2>{c.in, c.out});
      Buffer1D bBuf(b, {c.out});
      Buffer2D out(std::vector<float>(m * c.out), {m, c.out});
      std::string name = "linear" + std::to_string(index);
      if (c.bias)
        ASSERT_TRUE(module->call(name, xBuf.memref(), wBuf.memref(), bBuf.memref(), out.memref()));
      else
        ASSERT_TRUE(module->call(name, xBuf.memref(), wBuf.memref(), out.memref()));
      std::vector<float> expected =
          ref::linear(x, m, c.in, w, c.out,
                      c.outIn ? ref::WeightLayout::OutIn : ref::WeightLayout::InOut,
                      c.bias ? b.data() : nullptr);
      EXPECT_CLOSE(out.values(), expected, kOpTolerance) << name << " m=" << m;
    }
  }
}

/// [N, K] (nn.Linear) packed into [ceil(N/nr), K, nr], zero-padded.
std::vector<float> packOutIn(const std::vector<float> &w, int64_t n, int64_t k,
                             int64_t nr) {
  int64_t blocks = (n + nr - 1) / nr;
  std::vector<float> packed(blocks * k * nr, 0.0f);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < k; ++col)
      packed[((row / nr) * k + col) * nr + row % nr] = w[row * k + col];
  return packed;
}

struct PackedCase {
  int64_t in, out, blockSize;
  bool bias;
  /// What consumes the projection: "residual", "silu", "gelu_tanh",
  /// "gelu_erf", "relu", or "swiglu" / "geglu_tanh" / "geglu_erf" (a second
  /// projection gated by the first).
  const char *consumer;
  /// The norm before the projection: "" (none), "rms", "rms_offset"
  /// (Gemma's 1 + w) or "layer"; fused into the gemm's input with fusion.
  const char *norm = "";

  bool gated() const {
    return llvm::StringRef(consumer) == "swiglu" ||
           llvm::StringRef(consumer).starts_with("geglu");
  }
};

const std::vector<PackedCase> kPackedCases = {
    {64, 80, 32, true, "silu"},        {768, 96, 32, false, "residual"},
    {37, 2304, 32, true, "residual"},  {128, 48, 16, false, "gelu_tanh"},
    {64, 100, 32, true, "gelu_erf"},   {96, 172, 32, false, "swiglu"},
    {64, 90, 32, true, "relu"},        {96, 172, 32, false, "geglu_tanh"},
    {48, 40, 16, false, "geglu_erf"},
    // Normalized inputs: the quantizing kernels normalize as they quantize,
    // the float ones first copy normalized rows (37: a scalar tail).
    {64, 80, 32, true, "silu", "layer"},
    {96, 172, 32, false, "swiglu", "rms"},
    {768, 96, 32, false, "residual", "rms_offset"},
    {37, 48, 16, true, "residual", "layer"}};

std::vector<float> relu(const std::vector<float> &x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = std::max(x[i], 0.0f);
  return out;
}

/// x * y elementwise.
std::vector<float> product(const std::vector<float> &x, const std::vector<float> &y) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = x[i] * y[i];
  return out;
}

/// The bf16 nearest to `value` (ties to even), as its bits: the scalar
/// reference of the format (finite inputs).
uint16_t bf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16Value(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(bf16Bits(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(bf16Bits(1.0f + 0x1.0p-8f), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to 1 + 2^-6.
  EXPECT_EQ(bf16Bits(1.0f + 3 * 0x1.0p-8f), 0x3F82);
  EXPECT_EQ(bf16Bits(1.0f + 0x1.0p-8f + 0x1.0p-20f), 0x3F81);
  EXPECT_EQ(bf16Bits(-2.5f), 0xC020);
  EXPECT_EQ(bf16Value(bf16Bits(0.1f)), 0.10009765625f);
}

ref::QuantFormat quantFormat(PackedFormat format) {
  return format == PackedFormat::Q8_0 ? ref::QuantFormat::Q8_0 : ref::QuantFormat::Q4_0;
}

/// The packed weight's MLIR type.
std::string packedType(const PackedCase &c, PackedFormat format) {
  int64_t blocks = (c.out + c.blockSize - 1) / c.blockSize;
  if (isQuantized(format))
    return llvm::formatv("tensor<{0}x{1}x{2}x{3}xi8>", blocks, c.in / 32, c.blockSize,
                         format == PackedFormat::Q8_0 ? 34 : 18)
        .str();
  return llvm::formatv("tensor<{0}x{1}x{2}x{3}>", blocks, c.in, c.blockSize,
                       packedFormatName(format))
      .str();
}

std::string packedFunction(size_t index, const PackedCase &c, PackedFormat format) {
  std::string x = llvm::formatv("tensor<?x{0}xf32>", c.in).str();
  std::string y = llvm::formatv("tensor<?x{0}xf32>", c.out).str();
  std::string w = packedType(c, format);
  std::string b = llvm::formatv("tensor<{0}xf32>", c.out).str();
  std::string consumer = c.consumer;
  std::string args = "%x: " + x + ", %w: " + w;
  if (c.bias)
    args += ", %b: " + b;
  if (consumer == "residual")
    args += ", %r: " + y;
  if (c.gated())
    args += ", %w2: " + w;
  std::string norm = c.norm, g = llvm::formatv("tensor<{0}xf32>", c.in).str();
  std::string body;
  if (!norm.empty())
    args += ", %g: " + g;
  if (norm == "layer") {
    args += ", %beta: " + g;
    body = "%n = attn.layer_norm %x, %g, %beta epsilon(1.0e-05) : " + x + ", " + g + "\n";
  } else if (!norm.empty()) {
    body = "%n = attn.rms_norm %x, %g epsilon(1.0e-05)" +
           std::string(norm == "rms_offset" ? " gain_offset(1.0)" : "") + " : " + x +
           ", " + g + "\n";
  }
  // The projections read the normalized rows.
  std::string in = norm.empty() ? "%x" : "%n";
  body +=
      "%0 = attn.linear " + in + ", %w" + std::string(c.bias ? ", %b" : "") +
      " layout(packed) : " + x + ", " + w + (c.bias ? ", " + b : "") + " -> " + y + "\n";
  if (consumer == "residual")
    body += "%1 = attn.residual_add %0, %r : " + y;
  else if (consumer == "silu")
    body += "%1 = attn.silu %0 : " + y;
  else if (consumer == "gelu_tanh")
    body += "%1 = attn.gelu %0 tanh : " + y;
  else if (consumer == "gelu_erf")
    body += "%1 = attn.gelu %0 erf : " + y;
  else if (consumer == "relu")
    body += "%1 = attn.relu %0 : " + y;
  else {
    std::string gate = consumer == "swiglu"       ? "attn.swiglu %0, %u"
                       : consumer == "geglu_tanh" ? "attn.geglu %0, %u tanh"
                                                  : "attn.geglu %0, %u erf";
    body += "%u = attn.linear " + in + ", %w2 layout(packed) : " + x + ", " + w + " -> " + y +
            "\n%1 = " + gate + " : " + y;
  }
  return llvm::formatv(R"mlir(
    func.func @packed{0}({1}) -> {2} {
      {3}
      return %1 : {2}
    })mlir", index, args, y, body).str();
}

/// Calls `name` with pointer arguments (memref descriptors), 2 to 8 of them.
bool callWithPointers(const CompiledModule &module, const std::string &name,
                      const std::vector<void *> &a) {
  switch (a.size()) {
  case 2: return module.call(name, a[0], a[1]);
  case 3: return module.call(name, a[0], a[1], a[2]);
  case 4: return module.call(name, a[0], a[1], a[2], a[3]);
  case 5: return module.call(name, a[0], a[1], a[2], a[3], a[4]);
  case 6: return module.call(name, a[0], a[1], a[2], a[3], a[4], a[5]);
  case 7: return module.call(name, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  case 8: return module.call(name, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  default: return false;
  }
}

/// How far a quantized projection of normalized rows may lie from the
/// reference (relative to its largest output): a few inputs a step of
/// their block's scale away, never a wrong norm (errors of order 1).
constexpr double kQuantizedNormTolerance = 2e-3;

class PackedGemm : public ::testing::TestWithParam<std::tuple<bool, PackedFormat>> {};

// The CPU kernel (attn.gemm through attn-lower-gemm), with the consumers
// fused into its epilogue (fusion on) or run as separate ops: full and
// partial weight blocks, reduction lengths that do and do not divide the
// unrolling, 8-row register tiles plus leftover rows; f32 weights, and bf16
// weights against the reference on the same bf16-rounded values; q8_0 and
// q4_0 weights (the cases whose inputs are blocks of 32) against the
// reference on the weights rounded through the format and the input rows
// quantized to int8 per block, as the VNNI kernel multiplies them.
//
// With bf16Dot (vdpbf16ps), the rows of a chunk of 8 or more whose K is
// whole vectors meet the weight as bf16 pairs: the reference rounds those
// input rows to bf16 too; fewer rows (decode) keep the widening kernel.
//
// `width` and `int8Dot` pick another row of the microkernel table than the
// host's own (0 and "": the host's).
void checkPackedGemm(bool fusion, PackedFormat format, bool bf16Dot, int64_t width = 0,
                     const std::string &int8Dot = "") {
  const bool quantized = isQuantized(format);
  auto applies = [&](const PackedCase &c) { return !quantized || c.in % 32 == 0; };
  std::string source;
  for (auto [index, c] : llvm::enumerate(kPackedCases))
    if (applies(c))
      source += packedFunction(index, c, format);
  CompileOptions options;
  options.configure = [&](AttnPipelineOptions &pipeline) {
    pipeline.fusion = fusion;
    pipeline.bf16Dot = bf16Dot;
    if (width)
      pipeline.vectorWidth = width;
    if (!int8Dot.empty())
      pipeline.int8Dot = int8Dot;
  };
  auto module = compileOrDie(source, options);
  ASSERT_TRUE(module);
  for (auto [index, c] : llvm::enumerate(kPackedCases)) {
    if (!applies(c))
      continue;
    int64_t blocks = (c.out + c.blockSize - 1) / c.blockSize;
    std::string consumer = c.consumer;
    std::vector<float> w = weights(c.out * c.in, c.in, 700 + index);
    std::vector<float> w2 = weights(c.out * c.in, c.in, 740 + index);
    std::vector<float> unrounded = w;
    std::vector<uint16_t> wBits(w.size()), w2Bits(w2.size());
    std::vector<uint8_t> wQuant, w2Quant;
    if (format == PackedFormat::BF16) {
      for (size_t i = 0; i < w.size(); ++i) {
        w[i] = bf16Value(wBits[i] = bf16Bits(w[i]));
        w2[i] = bf16Value(w2Bits[i] = bf16Bits(w2[i]));
      }
    } else if (quantized) {
      wQuant = ref::packQuantized(w, c.out, c.in, c.blockSize, quantFormat(format));
      w2Quant = ref::packQuantized(w2, c.out, c.in, c.blockSize, quantFormat(format));
      ref::roundThroughFormat(w, c.in, /*outIn=*/true, quantFormat(format));
      ref::roundThroughFormat(w2, c.in, /*outIn=*/true, quantFormat(format));
    }
    auto packBits = [&](const std::vector<uint16_t> &bits) {
      std::vector<float> asFloat(bits.begin(), bits.end());
      std::vector<float> packed = packOutIn(asFloat, c.out, c.in, c.blockSize);
      return std::vector<uint16_t>(packed.begin(), packed.end());
    };
    std::vector<float> b = random(c.out, 1.0f, 710 + index);
    std::string norm = c.norm;
    // A gain around 1 and a shift that matter (never zero).
    std::vector<float> gamma = random(c.in, 0.5f, 750 + index);
    std::vector<float> beta = random(c.in, 0.5f, 760 + index);
    if (norm != "rms_offset")
      for (float &v : gamma)
        v += 1.0f;
    for (int64_t m : {1, 3, 8, 17, 129}) {
      std::vector<float> x = random(m * c.in, 1.0f, 720 + m);
      // Rows off centre and of several scales, so a norm's mean, its
      // variance about it and each row's own statistics all matter.
      if (!norm.empty())
        for (int64_t row = 0; row < m; ++row)
          for (int64_t k = 0; k < c.in; ++k)
            x[row * c.in + k] = x[row * c.in + k] * (1.0f + row % 5) + 0.5f * (row % 3);
      std::vector<float> r = random(m * c.out, 1.0f, 730 + m);
      Buffer2D xBuf(x, {m, c.in}), rBuf(r, {m, c.out});
      Buffer3D wBuf(packOutIn(w, c.out, c.in, c.blockSize), {blocks, c.in, c.blockSize});
      Buffer3D w2Buf(packOutIn(w2, c.out, c.in, c.blockSize), {blocks, c.in, c.blockSize});
      Buffer<uint16_t, 3> wBf16(packBits(wBits), {blocks, c.in, c.blockSize});
      Buffer<uint16_t, 3> w2Bf16(packBits(w2Bits), {blocks, c.in, c.blockSize});
      int64_t slabBytes = format == PackedFormat::Q8_0 ? 34 : 18;
      Buffer<uint8_t, 4> wQ(wQuant, {blocks, c.in / 32, c.blockSize, slabBytes});
      Buffer<uint8_t, 4> w2Q(w2Quant, {blocks, c.in / 32, c.blockSize, slabBytes});
      void *wArg = quantized                     ? static_cast<void *>(wQ.memref())
                   : format == PackedFormat::BF16 ? static_cast<void *>(wBf16.memref())
                                                : wBuf.memref();
      void *w2Arg = quantized                     ? static_cast<void *>(w2Q.memref())
                    : format == PackedFormat::BF16 ? static_cast<void *>(w2Bf16.memref())
                                                 : w2Buf.memref();
      Buffer1D bBuf(b, {c.out}), gBuf(gamma, {c.in}), betaBuf(beta, {c.in});
      Buffer2D out(std::vector<float>(m * c.out), {m, c.out});
      std::string name = "packed" + std::to_string(index);
      // The arguments in packedFunction's order.
      std::vector<void *> args = {xBuf.memref(), wArg};
      if (c.bias)
        args.push_back(bBuf.memref());
      if (consumer == "residual")
        args.push_back(rBuf.memref());
      if (c.gated())
        args.push_back(w2Arg);
      if (!norm.empty())
        args.push_back(gBuf.memref());
      if (norm == "layer")
        args.push_back(betaBuf.memref());
      args.push_back(out.memref());
      ASSERT_TRUE(callWithPointers(*module, name, args)) << name;
      // The rounding is what the test sees: against the f32 weights the
      // bf16 or quantized product is off by far more than the tolerance.
      if (format != PackedFormat::F32 && consumer == "residual") {
        std::vector<float> exact = ref::residualAdd(
            ref::linear(x, m, c.in, unrounded, c.out, ref::WeightLayout::OutIn,
                        c.bias ? b.data() : nullptr),
            r);
        EXPECT_GT(ref::maxRelError(out.values(), exact), 10 * kOpTolerance) << name;
      }
      // The norm in the reference's double precision, rounded to f32 as
      // the kernel's input is.
      std::vector<float> normalized = x;
      const double eps = static_cast<double>(1.0e-5f);
      if (norm == "layer") {
        normalized = ref::layerNorm(x, m, c.in, gamma, beta, eps);
      } else if (!norm.empty()) {
        std::vector<float> gain = gamma;
        if (norm == "rms_offset")
          for (float &v : gain)
            v += 1.0f;
        normalized = ref::rmsNorm(x, m, c.in, gain, eps);
      }
      std::vector<float> input =
          quantized ? ref::quantizeActivationRows(normalized, m, c.in) : normalized;
      if (bf16Dot && m >= 8 && c.in % 16 == 0)
        for (float &v : input)
          v = bf16Value(bf16Bits(v));
      std::vector<float> y = ref::linear(input, m, c.in, w, c.out, ref::WeightLayout::OutIn,
                                         c.bias ? b.data() : nullptr);
      std::vector<float> expected;
      if (consumer == "residual")
        expected = ref::residualAdd(y, r);
      else if (consumer == "silu")
        expected = ref::silu(y);
      else if (consumer == "gelu_tanh")
        expected = ref::gelu(y, ref::GeluApproximation::Tanh);
      else if (consumer == "gelu_erf")
        expected = ref::gelu(y, ref::GeluApproximation::Erf);
      else if (consumer == "relu")
        expected = relu(y);
      else {
        std::vector<float> up = ref::linear(input, m, c.in, w2, c.out, ref::WeightLayout::OutIn);
        if (consumer == "swiglu")
          expected = ref::swiglu(y, up);
        else
          expected = product(ref::gelu(y, consumer == "geglu_tanh" ? ref::GeluApproximation::Tanh
                                                                    : ref::GeluApproximation::Erf),
                             up);
      }
      // Quantizing a normalized row can round an element the other way
      // than the reference does when the two norms differ in their last
      // bit (a value at a half step of its block's scale): one step of
      // d = amax / 127 in one input. The float path checks the norm's
      // arithmetic itself to kOpTolerance.
      // Rounding normalized rows to bf16 has the same edge, a bf16 step
      // (2^-8 of an input) where the reference's norm rounds the other way:
      // 9.5e-5 seen on the 768-input rms_offset case.
      double tolerance = quantized && !norm.empty() ? kQuantizedNormTolerance
                         : bf16Dot && !norm.empty() ? 5e-4
                                                    : kOpTolerance;
      EXPECT_CLOSE(out.values(), expected, tolerance)
          << name << " (" << consumer << (norm.empty() ? "" : ", " + norm + " norm")
          << ") m=" << m;
    }
  }
}

TEST_P(PackedGemm, MatchesReference) {
  auto [fusion, format] = GetParam();
  if (isQuantized(format) && !hostHasInt8Dot())
    GTEST_SKIP() << "the q8_0 / q4_0 kernels need AVX2 or AVX-512BW";
  checkPackedGemm(fusion, format, /*bf16Dot=*/false);
}

// vdpbf16ps (Zen 4 and 5 take it for bf16 prefill) against the reference on
// bf16 weights and inputs: a pair of k rows interleaved the wrong way
// round, or the reference without the input rounding, fails it.
TEST(PackedGemmBf16Dot, MatchesTheReferenceOnRoundedInputs) {
  if (!mlir::attn::CpuTarget::host().has("avx512bf16") || hostVectorWidth() != 16)
    GTEST_SKIP() << "this CPU (" << hostCpuName() << ") has no AVX-512 BF16";
  for (bool fusion : {true, false}) {
    SCOPED_TRACE(fusion ? "fused" : "unfused");
    checkPackedGemm(fusion, PackedFormat::BF16, /*bf16Dot=*/true);
  }
}

/// A row of attn-lower-gemm's microkernel table (lib/Transforms/Gemm): the
/// weight format, the vector width and, for q8_0 / q4_0, the int8 dot.
struct GemmMicrokernel {
  PackedFormat format;
  int64_t width;
  std::string int8Dot;
};

void PrintTo(const GemmMicrokernel &k, std::ostream *os) {
  *os << packedFormatName(k.format) << "_" << k.width << "_lanes"
      << (k.int8Dot.empty() ? "" : "_" + k.int8Dot);
}

class PackedGemmMicrokernels : public ::testing::TestWithParam<GemmMicrokernel> {};

// Every row of the microkernel table this CPU can run, not only the one it
// picks (PackedGemm's): AVX2's 8 lanes on an AVX-512 machine, vpmaddubsw
// (the int8 kernel of AVX2 and Skylake-X CPUs) where VNNI is there, and
// AVX-VNNI's 256-bit vpdpbusd. A sign applied the wrong way round in
// vpmaddubsw's signed-weight form fails q8_0's case here, and nowhere else
// on a VNNI machine.
TEST_P(PackedGemmMicrokernels, MatchesReference) {
  const GemmMicrokernel &k = GetParam();
  const CpuTarget &host = CpuTarget::host();
  bool runs = k.width == 8 ? host.has("avx2") && host.has("fma")
                           : host.has("avx512f") && host.has("avx512bw");
  if (k.int8Dot == "vpdpbusd")
    runs = runs && host.int8Dot(k.width) == llvm::StringRef("vpdpbusd");
  if (!runs)
    GTEST_SKIP() << "this CPU (" << hostCpuName() << ") cannot run it";
  bool hostsOwn = k.width == host.vectorWidth() &&
                  (k.int8Dot.empty() || host.int8Dot(k.width) == llvm::StringRef(k.int8Dot));
  if (hostsOwn)
    GTEST_SKIP() << "this CPU's own kernel: PackedGemm tests it";
  checkPackedGemm(/*fusion=*/true, k.format, /*bf16Dot=*/false, k.width, k.int8Dot);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PackedGemmMicrokernels,
    ::testing::Values(GemmMicrokernel{PackedFormat::F32, 8, ""},
                      GemmMicrokernel{PackedFormat::BF16, 8, ""},
                      GemmMicrokernel{PackedFormat::Q8_0, 8, "vpmaddubsw"},
                      GemmMicrokernel{PackedFormat::Q4_0, 8, "vpmaddubsw"},
                      GemmMicrokernel{PackedFormat::Q8_0, 8, "vpdpbusd"},
                      GemmMicrokernel{PackedFormat::Q4_0, 8, "vpdpbusd"},
                      GemmMicrokernel{PackedFormat::Q8_0, 16, "vpmaddubsw"},
                      GemmMicrokernel{PackedFormat::Q4_0, 16, "vpmaddubsw"},
                      GemmMicrokernel{PackedFormat::Q8_0, 16, "vpdpbusd"},
                      GemmMicrokernel{PackedFormat::Q4_0, 16, "vpdpbusd"}),
    [](const auto &info) {
      const GemmMicrokernel &k = info.param;
      return std::string(packedFormatName(k.format)) + "_" + std::to_string(k.width) +
             (k.int8Dot.empty() ? "" : "_" + k.int8Dot);
    });

INSTANTIATE_TEST_SUITE_P(Weights, PackedGemm,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(PackedFormat::F32, PackedFormat::BF16,
                                                              PackedFormat::Q8_0, PackedFormat::Q4_0)),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param) ? "fused_" : "unfused_") +
                                  packedFormatName(std::get<1>(info.param));
                         });

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

TEST(Norms, LayerNormAndRmsNorm) {
  const std::vector<int64_t> dims = {32, 80, 768};
  std::string source;
  for (int64_t d : dims)
    source += llvm::formatv(R"mlir(
      func.func @ln{0}(%x: tensor<?x{0}xf32>, %g: tensor<{0}xf32>, %b: tensor<{0}xf32>) -> tensor<?x{0}xf32> {
        %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<?x{0}xf32>, tensor<{0}xf32>
        return %0 : tensor<?x{0}xf32>
      }
      func.func @rms{0}(%x: tensor<?x{0}xf32>, %g: tensor<{0}xf32>) -> tensor<?x{0}xf32> {
        %0 = attn.rms_norm %x, %g epsilon(1.0e-06) : tensor<?x{0}xf32>, tensor<{0}xf32>
        return %0 : tensor<?x{0}xf32>
      }
      func.func @gemma{0}(%x: tensor<?x{0}xf32>, %g: tensor<{0}xf32>) -> tensor<?x{0}xf32> {
        %0 = attn.rms_norm %x, %g epsilon(1.0e-06) gain_offset(1.0) : tensor<?x{0}xf32>, tensor<{0}xf32>
        return %0 : tensor<?x{0}xf32>
      })mlir", d).str();
  auto module = compileOrDie(source);
  ASSERT_TRUE(module);
  // The ops carry epsilon as f32; the reference gets the same value.
  const double lnEps = static_cast<double>(1.0e-5f), rmsEps = static_cast<double>(1.0e-6f);
  for (int64_t d : dims) {
    std::vector<float> g = random(d, 1.0f, 40 + d), b = random(d, 1.0f, 50 + d);
    for (int64_t rows : kSeqLengths) {
      // An offset mean and a large spread: the two-pass variance matters.
      std::vector<float> x = random(rows * d, 3.0f, 60 + rows);
      for (float &value : x)
        value += 5.0f;
      Buffer2D xBuf(x, {rows, d});
      Buffer1D gBuf(g, {d}), bBuf(b, {d});
      Buffer2D ln(std::vector<float>(rows * d), {rows, d});
      Buffer2D rms(std::vector<float>(rows * d), {rows, d});
      Buffer2D gemma(std::vector<float>(rows * d), {rows, d});
      ASSERT_TRUE(module->call("ln" + std::to_string(d), xBuf.memref(), gBuf.memref(), bBuf.memref(), ln.memref()));
      ASSERT_TRUE(module->call("rms" + std::to_string(d), xBuf.memref(), gBuf.memref(), rms.memref()));
      ASSERT_TRUE(module->call("gemma" + std::to_string(d), xBuf.memref(), gBuf.memref(), gemma.memref()));
      EXPECT_CLOSE(ln.values(), ref::layerNorm(x, rows, d, g, b, lnEps), kOpTolerance)
          << "layer_norm d=" << d << " rows=" << rows;
      EXPECT_CLOSE(rms.values(), ref::rmsNorm(x, rows, d, g, rmsEps), kOpTolerance)
          << "rms_norm d=" << d << " rows=" << rows;
      // Gemma's gain is 1 + w, added in f32 as the model does.
      std::vector<float> onePlusG = g;
      for (float &value : onePlusG)
        value += 1.0f;
      EXPECT_CLOSE(gemma.values(), ref::rmsNorm(x, rows, d, onePlusG, rmsEps), kOpTolerance)
          << "rms_norm gain_offset d=" << d << " rows=" << rows;
    }
  }
}

TEST(Norms, LayerNormOverTheInnermostDimOfRank3) {
  auto module = compileOrDie(R"mlir(
    func.func @ln3(%x: tensor<2x3x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x3x64xf32> {
      %0 = attn.layer_norm %x, %g, %b epsilon(1.0e-05) : tensor<2x3x64xf32>, tensor<64xf32>
      return %0 : tensor<2x3x64xf32>
    })mlir");
  ASSERT_TRUE(module);
  std::vector<float> x = random(6 * 64, 2.0f, 70), g = random(64, 1.0f, 71), b = random(64, 1.0f, 72);
  Buffer3D xBuf(x, {2, 3, 64});
  Buffer1D gBuf(g, {64}), bBuf(b, {64});
  Buffer3D out(std::vector<float>(6 * 64), {2, 3, 64});
  ASSERT_TRUE(module->call("ln3", xBuf.memref(), gBuf.memref(), bBuf.memref(), out.memref()));
  EXPECT_CLOSE(out.values(), ref::layerNorm(x, 6, 64, g, b, static_cast<double>(1.0e-5f)), kOpTolerance);
}

//===----------------------------------------------------------------------===//
// Elementwise ops and softmax
//===----------------------------------------------------------------------===//

TEST(Elementwise, ResidualGeluSiluSwigluSoftmax) {
  auto module = compileOrDie(R"mlir(
    func.func @add(%a: tensor<?x80xf32>, %b: tensor<?x80xf32>) -> tensor<?x80xf32> {
      %0 = attn.residual_add %a, %b : tensor<?x80xf32>
      return %0 : tensor<?x80xf32>
    }
    func.func @gelu_tanh(%a: tensor<?x80xf32>) -> tensor<?x80xf32> {
      %0 = attn.gelu %a tanh : tensor<?x80xf32>
      return %0 : tensor<?x80xf32>
    }
    func.func @gelu_erf(%a: tensor<?x80xf32>) -> tensor<?x80xf32> {
      %0 = attn.gelu %a erf : tensor<?x80xf32>
      return %0 : tensor<?x80xf32>
    }
    func.func @silu(%a: tensor<?x80xf32>) -> tensor<?x80xf32> {
      %0 = attn.silu %a : tensor<?x80xf32>
      return %0 : tensor<?x80xf32>
    }
    func.func @swiglu(%a: tensor<?x80xf32>, %b: tensor<?x80xf32>) -> tensor<?x80xf32> {
      %0 = attn.swiglu %a, %b : tensor<?x80xf32>
      return %0 : tensor<?x80xf32>
    }
    func.func @softmax(%a: tensor<?x80xf32>) -> tensor<?x80xf32> {
      %0 = attn.softmax %a : tensor<?x80xf32>
      return %0 : tensor<?x80xf32>
    })mlir");
  ASSERT_TRUE(module);
  const int64_t d = 80;
  for (int64_t rows : kSeqLengths) {
    // Wide inputs reach the tails (exp overflow in silu, gelu's saturation).
    std::vector<float> a = random(rows * d, 4.0f, 80 + rows), b = random(rows * d, 1.0f, 90 + rows);
    if (rows > 1) {
      a[0] = -100.0f;
      a[1] = 100.0f;
    }
    auto run = [&](const char *name, bool binary) {
      Buffer2D aBuf(a, {rows, d}), bBuf(b, {rows, d});
      Buffer2D out(std::vector<float>(rows * d), {rows, d});
      bool called = binary ? module->call(name, aBuf.memref(), bBuf.memref(), out.memref())
                           : module->call(name, aBuf.memref(), out.memref());
      EXPECT_TRUE(called) << name;
      return out.values();
    };
    EXPECT_CLOSE(run("add", true), ref::residualAdd(a, b), kOpTolerance) << rows;
    EXPECT_CLOSE(run("gelu_tanh", false), ref::gelu(a, ref::GeluApproximation::Tanh), kOpTolerance) << rows;
    EXPECT_CLOSE(run("gelu_erf", false), ref::gelu(a, ref::GeluApproximation::Erf), kOpTolerance) << rows;
    EXPECT_CLOSE(run("silu", false), ref::silu(a), kOpTolerance) << rows;
    EXPECT_CLOSE(run("swiglu", true), ref::swiglu(a, b), kOpTolerance) << rows;
    // Softmax compares each row relative to its own scale (rows sum to 1).
    EXPECT_LE(ref::maxAbsError(run("softmax", false), ref::softmax(a, rows, d)), kOpTolerance) << rows;
  }
}

//===----------------------------------------------------------------------===//
// Positional encodings
//===----------------------------------------------------------------------===//

struct RopeCase {
  int64_t heads, headDim;
  double theta;
  bool rotateHalf;
};

TEST(Rope, BothPairingsHeadDimsAndOffsets) {
  const std::vector<RopeCase> cases = {{2, 32, 1e4, true},   {3, 64, 1e4, false},
                                       {2, 80, 5e5, true},   {1, 128, 1e4, true},
                                       {2, 128, 1e4, false}};
  std::string source;
  for (auto [index, c] : llvm::enumerate(cases)) {
    int64_t features = c.heads * c.headDim;
    source += llvm::formatv(R"mlir(
      func.func @rope{0}(%x: tensor<?x{1}xf32>, %pos: index) -> tensor<?x{1}xf32> {
        %0 = attn.rope %x offset(%pos) head_dim({2}) theta({3:e}) {4} : tensor<?x{1}xf32>
        return %0 : tensor<?x{1}xf32>
      })mlir", index, features, c.headDim, c.theta,
                            c.rotateHalf ? "rotate_half" : "interleaved").str();
  }
  auto module = compileOrDie(source);
  ASSERT_TRUE(module);
  for (auto [index, c] : llvm::enumerate(cases)) {
    int64_t features = c.heads * c.headDim;
    for (int64_t seq : kSeqLengths) {
      for (int64_t offset : {0, 7, 1000}) {
        std::vector<float> x = random(seq * features, 1.0f, 100 + seq + offset);
        Buffer2D xBuf(x, {seq, features});
        Buffer2D out(std::vector<float>(seq * features), {seq, features});
        ASSERT_TRUE(module->call("rope" + std::to_string(index), xBuf.memref(), offset, out.memref()));
        std::vector<float> expected =
            ref::rope(x, seq, features, c.headDim, static_cast<double>(static_cast<float>(c.theta)),
                      c.rotateHalf ? ref::RopePairing::RotateHalf : ref::RopePairing::Interleaved,
                      offset);
        EXPECT_CLOSE(out.values(), expected, kOpTolerance)
            << "case " << index << " seq=" << seq << " offset=" << offset;
      }
    }
  }
}

/// A scaled or partial RoPE: the reference's description of an HF
/// rope_scaling, and the features that rotate.
struct ScaledRopeCase {
  const char *name;
  int64_t heads, headDim, rotaryDims;
  bool rotateHalf;
  double theta;
  ref::RopeScaling scaling;
};

ref::RopeScaling scalingOf(ref::RopeScaling::Type type, double factor) {
  ref::RopeScaling scaling;
  scaling.type = type;
  scaling.factor = factor;
  return scaling;
}

/// The compiler's description of the same scaling (what readRopeParameters
/// fills in from a config).
mlir::attn::RopeScaling compilerScaling(const ref::RopeScaling &r) {
  mlir::attn::RopeScaling c;
  c.factor = r.factor;
  c.originalMaxPositions = r.originalMaxPositions;
  switch (r.type) {
  case ref::RopeScaling::Type::None:
    c.kind = RopeScalingKind::None;
    break;
  case ref::RopeScaling::Type::Linear:
    c.kind = RopeScalingKind::Linear;
    break;
  case ref::RopeScaling::Type::Dynamic:
    c.kind = RopeScalingKind::Dynamic;
    c.originalMaxPositions = r.maxPositions;
    break;
  case ref::RopeScaling::Type::Yarn:
    c.kind = RopeScalingKind::Yarn;
    break;
  case ref::RopeScaling::Type::Llama3:
    c.kind = RopeScalingKind::Llama3;
    break;
  case ref::RopeScaling::Type::LongRope:
    c.kind = RopeScalingKind::LongRope;
    c.shortFactor = r.shortFactor;
    c.longFactor = r.longFactor;
    break;
  }
  if (!std::isnan(r.attentionFactor))
    c.attentionFactor = r.attentionFactor;
  c.betaFast = r.betaFast;
  c.betaSlow = r.betaSlow;
  c.mscale = r.mscale;
  c.mscaleAllDim = r.mscaleAllDim;
  c.truncate = r.truncate;
  c.lowFreqFactor = r.lowFreqFactor;
  c.highFreqFactor = r.highFreqFactor;
  return c;
}

/// The attn.rope attributes the compiler's ModelBuilder would emit for the
/// case: theta (with dynamic_ntk), or the resolved table and attention
/// factor. Table entries print with 17 digits, so they parse back exactly.
std::string ropeAttributes(const ScaledRopeCase &c) {
  PositionSpec positions;
  positions.theta = c.theta;
  positions.rotaryDims = c.rotaryDims;
  positions.scaling = compilerScaling(c.scaling);
  std::string text = llvm::formatv("head_dim({0})", c.headDim).str();
  if (c.rotaryDims != c.headDim)
    text += llvm::formatv(" rotary_dims({0})", c.rotaryDims).str();
  switch (positions.scaling.kind) {
  case RopeScalingKind::None:
    return text + llvm::formatv(" theta({0:e})", c.theta).str();
  case RopeScalingKind::Dynamic:
    return text + llvm::formatv(" theta({0:e}) dynamic_ntk(factor = {1:e16}, "
                                "max_positions = {2})",
                                c.theta, c.scaling.factor,
                                c.scaling.maxPositions)
                      .str();
  default:
    break;
  }
  auto tableText = [&](bool longTable) {
    llvm::SmallVector<double> table =
        ropeInverseFrequencies(positions, c.rotaryDims, longTable);
    std::string entries;
    for (double f : table)
      entries += (entries.empty() ? "" : ", ") + llvm::formatv("{0:e16}", f).str();
    return llvm::formatv("dense<[{0}]> : tensor<{1}xf64>", entries, table.size())
        .str();
  };
  text += " frequencies(" + tableText(false) + ")";
  if (positions.scaling.kind == RopeScalingKind::LongRope)
    text += llvm::formatv(" long_frequencies({0}, after = {1})", tableText(true),
                          positions.scaling.originalMaxPositions)
                .str();
  if (double factor = ropeAttentionFactor(positions.scaling); factor != 1.0)
    text += llvm::formatv(" attention_factor({0:e16})", factor).str();
  return text;
}

// Every rope_type with partial dims under both pairings, at positions far
// past the length each scaling is measured against (original
// max_position_embeddings 64..256, positions up to 40128): the compiled op
// against the reference's HF formulas (ropeScaledFrequencies with the
// call's length for dynamic, then ropeWithFrequencies). The compiler's
// frequency table and attention factor are compared first, to 1e-12.
TEST(Rope, PartialDimsAndScaledFrequenciesPastTheOriginalContext) {
  using Type = ref::RopeScaling::Type;
  ref::RopeScaling dynamic = scalingOf(Type::Dynamic, 2.0);
  dynamic.maxPositions = 64;
  ref::RopeScaling dynamicPartial = scalingOf(Type::Dynamic, 4.0);
  dynamicPartial.maxPositions = 128;
  ref::RopeScaling yarn = scalingOf(Type::Yarn, 4.0);
  yarn.originalMaxPositions = 128;
  ref::RopeScaling yarnMscale = scalingOf(Type::Yarn, 8.0);
  yarnMscale.originalMaxPositions = 256;
  yarnMscale.mscale = 1.0;
  yarnMscale.mscaleAllDim = 0.707;
  yarnMscale.truncate = false;
  yarnMscale.betaFast = 16.0;
  yarnMscale.betaSlow = 2.0;
  ref::RopeScaling yarnFactor = scalingOf(Type::Yarn, 16.0);
  yarnFactor.originalMaxPositions = 64;
  yarnFactor.attentionFactor = 0.75;
  ref::RopeScaling llama3 = scalingOf(Type::Llama3, 8.0);
  llama3.originalMaxPositions = 256;
  llama3.lowFreqFactor = 1.0;
  llama3.highFreqFactor = 4.0;
  // Phi-4-mini's proportions: 3/4 of the head rotates. Calls of up to 17
  // rows at offsets 0 and 7 end within 64 positions and take the short
  // table; 129 rows, or offsets 1000 and 40000, the long one.
  ref::RopeScaling longRope = scalingOf(Type::LongRope, 32.0);
  longRope.originalMaxPositions = 64;
  for (int i = 0; i < 12; ++i) {
    longRope.shortFactor.push_back(1.0 + 0.05 * i);
    longRope.longFactor.push_back(1.0 + 1.5 * i * i);
  }
  ref::RopeScaling longRopeFactor = longRope;
  longRopeFactor.shortFactor.resize(8);
  longRopeFactor.longFactor.resize(8);
  longRopeFactor.attentionFactor = 1.5;
  const std::vector<ScaledRopeCase> cases = {
      {"neox_partial", 2, 64, 16, true, 1e4, {}},
      {"gptj_partial", 3, 64, 32, false, 1e4, {}},
      {"linear_partial", 2, 80, 40, true, 1e4, scalingOf(Type::Linear, 4.0)},
      {"linear_interleaved", 1, 32, 32, false, 5e5, scalingOf(Type::Linear, 2.0)},
      {"dynamic", 2, 64, 64, false, 1e4, dynamic},
      {"dynamic_partial", 2, 32, 16, true, 1e4, dynamicPartial},
      {"yarn", 2, 64, 64, true, 1e4, yarn},
      {"yarn_mscale_partial", 2, 64, 32, false, 1e4, yarnMscale},
      {"yarn_attention_factor", 1, 128, 96, true, 1e6, yarnFactor},
      {"llama3", 2, 128, 128, true, 5e5, llama3},
      {"llama3_partial", 1, 64, 48, false, 5e5, llama3},
      {"longrope_partial", 2, 32, 24, true, 1e4, longRope},
      {"longrope_attention_factor", 1, 16, 16, false, 1e4, longRopeFactor},
  };
  std::string source;
  for (auto [index, c] : llvm::enumerate(cases)) {
    int64_t features = c.heads * c.headDim;
    source += llvm::formatv(R"mlir(
      func.func @rope{0}(%x: tensor<?x{1}xf32>, %pos: index) -> tensor<?x{1}xf32> {
        %0 = attn.rope %x offset(%pos) {2} {3} : tensor<?x{1}xf32>
        return %0 : tensor<?x{1}xf32>
      })mlir", index, features, ropeAttributes(c),
                            c.rotateHalf ? "rotate_half" : "interleaved").str();
  }
  auto module = compileOrDie(source);
  ASSERT_TRUE(module);
  for (auto [index, c] : llvm::enumerate(cases)) {
    bool dynamicCase = c.scaling.type == Type::Dynamic;
    if (!dynamicCase) {
      // (Longrope's short table: a call within originalMaxPositions.)
      PositionSpec positions;
      positions.theta = c.theta;
      positions.scaling = compilerScaling(c.scaling);
      double expectedFactor = 1.0;
      std::vector<double> expected = ref::ropeScaledFrequencies(
          c.theta, c.rotaryDims, c.scaling, 0, expectedFactor);
      llvm::SmallVector<double> table =
          ropeInverseFrequencies(positions, c.rotaryDims);
      ASSERT_EQ(table.size(), expected.size()) << c.name;
      for (size_t i = 0; i < table.size(); ++i)
        EXPECT_NEAR(table[i], expected[i], 1e-12 * expected[i])
            << c.name << " pair " << i;
      EXPECT_NEAR(ropeAttentionFactor(positions.scaling), expectedFactor, 1e-12)
          << c.name;
    }
    int64_t features = c.heads * c.headDim;
    for (int64_t seq : kSeqLengths) {
      for (int64_t offset : {0, 7, 1000, 40000}) {
        std::vector<float> x = random(seq * features, 1.0f, 300 + seq + offset);
        Buffer2D xBuf(x, {seq, features});
        Buffer2D out(std::vector<float>(seq * features), {seq, features});
        ASSERT_TRUE(module->call("rope" + std::to_string(index), xBuf.memref(),
                                 offset, out.memref()));
        // Dynamic NTK's base grows with the positions of this call, and
        // longrope's table switches on its last one.
        double attentionFactor = 1.0;
        std::vector<double> frequencies = ref::ropeScaledFrequencies(
            c.theta, c.rotaryDims, c.scaling, offset + seq, attentionFactor);
        std::vector<float> expected = ref::ropeWithFrequencies(
            x, seq, features, c.headDim, frequencies, attentionFactor,
            c.rotateHalf ? ref::RopePairing::RotateHalf
                         : ref::RopePairing::Interleaved,
            offset);
        EXPECT_CLOSE(out.values(), expected, kOpTolerance)
            << c.name << " seq=" << seq << " offset=" << offset;
      }
    }
  }
}

// The original layout (sin at 2i, cos at 2i + 1) and fairseq's (XGLM:
// sines then cosines, frequencies over d/2 - 1), at offsets 0 and 2 (XGLM's
// first position) and well past them.
TEST(SinusoidalPE, MatchesBothLayouts) {
  for (bool halves : {false, true}) {
    std::string source;
    for (int64_t d : {16, 80})
      source += llvm::formatv(R"mlir(
        func.func @pe{0}(%x: tensor<?x{0}xf32>, %pos: index) -> tensor<?x{0}xf32> {
          %0 = attn.sinusoidal_pe %x offset(%pos) base(1.0e+04){1} : tensor<?x{0}xf32>
          return %0 : tensor<?x{0}xf32>
        })mlir", d, halves ? " halves" : "").str();
    auto module = compileOrDie(source);
    ASSERT_TRUE(module);
    for (int64_t d : {16, 80}) {
      for (int64_t seq : kSeqLengths) {
        for (int64_t offset : {0, 2, 102}) {
          std::vector<float> x = random(seq * d, 1.0f, 110 + seq);
          Buffer2D xBuf(x, {seq, d});
          Buffer2D out(std::vector<float>(seq * d), {seq, d});
          ASSERT_TRUE(module->call("pe" + std::to_string(d), xBuf.memref(), offset, out.memref()));
          std::vector<float> expected =
              halves ? ref::sinusoidalPEHalves(x, seq, d, 1e4, offset)
                     : ref::sinusoidalPE(x, seq, d, 1e4, offset);
          EXPECT_CLOSE(out.values(), expected, kOpTolerance)
              << (halves ? "halves" : "interleaved") << " d=" << d << " seq=" << seq
              << " offset=" << offset;
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  int64_t heads, kvHeads, headDim;
  bool causal;
  /// 0: no bias; 1: one bias for all heads; heads: one per head (ALiBi).
  int64_t biasHeads;
  /// 0: default 1/sqrt(head_dim).
  double scale;
  /// A sliding window of that many keys (0: none).
  int64_t window = 0;
  /// ALiBi computed in the op from HF's slopes for `heads`.
  bool alibi = false;
};

/// HF's ALiBi slopes as the f32 values the op holds.
std::vector<float> alibiSlopes(int64_t heads) {
  std::vector<double> slopes = ref::alibiSlopes(heads);
  return std::vector<float>(slopes.begin(), slopes.end());
}

/// `alibi([...])` with digits enough to read back each f32.
std::string alibiAttribute(int64_t heads) {
  std::string text = " alibi([";
  for (auto [h, slope] : llvm::enumerate(alibiSlopes(heads)))
    text += (h ? ", " : "") + llvm::formatv("{0:e8}", static_cast<double>(slope)).str();
  return text + "])";
}

/// @attention<index><suffix>: queries [rows, heads * head_dim] f32 (rows
/// "?" or a static count), keys and values of element type `kvType`.
std::string attentionFunction(size_t index, const AttentionCase &c,
                              llvm::StringRef kvType = "f32", llvm::StringRef rows = "?",
                              llvm::StringRef suffix = "") {
  int64_t qf = c.heads * c.headDim, kf = c.kvHeads * c.headDim;
  std::string biasArg, biasUse;
  if (c.biasHeads) {
    biasArg = llvm::formatv(", %bias: tensor<{0}x?x?xf32>", c.biasHeads).str();
    biasUse = llvm::formatv(" bias(%bias : tensor<{0}x?x?xf32>)", c.biasHeads).str();
  }
  std::string options = llvm::formatv("heads({0}) kv_heads({1})", c.heads, c.kvHeads).str();
  if (c.scale != 0.0)
    options += llvm::formatv(" scale({0:e})", c.scale).str();
  if (c.causal)
    options += " causal";
  if (c.window)
    options += llvm::formatv(" window({0})", c.window).str();
  if (c.alibi)
    options += alibiAttribute(c.heads);
  return llvm::formatv(R"mlir(
    func.func @attention{0}{6}(%q: tensor<{8}x{1}xf32>, %k: tensor<?x{2}x{7}>, %v: tensor<?x{2}x{7}>{3}) -> tensor<{8}x{1}xf32> {
      %0 = attn.attention %q, %k, %v {4}{5} : tensor<{8}x{1}xf32>, tensor<?x{2}x{7}>, tensor<?x{2}x{7}> -> tensor<{8}x{1}xf32>
      return %0 : tensor<{8}x{1}xf32>
    })mlir", index, qf, kf, biasArg, options, biasUse, suffix, kvType, rows).str();
}

const std::vector<AttentionCase> kAttentionCases = {
    {2, 2, 32, false, 0, 0.0},  // multi-head, no mask
    {4, 2, 64, true, 0, 0.0},   // GQA, 2 query heads per KV head
    {8, 2, 80, true, 0, 0.0},   // GQA, 4 per KV head, head_dim 80
    {2, 1, 128, true, 0, 0.0},  // multi-query, head_dim 128
    {4, 4, 32, true, 4, 0.0},   // ALiBi per-head bias
    {2, 2, 64, false, 1, 0.3},  // shared bias, explicit scale
    {4, 2, 64, true, 0, 0.0, 7},               // sliding window, GQA
    {2, 2, 32, true, 0, 0.0, 1},               // a window of one key: itself
    {8, 8, 32, true, 0, 0.0, 0, true},         // ALiBi in the op, 8 heads
    {12, 4, 32, true, 0, 0.0, 0, true},        // ALiBi, 12 heads (odd powers), GQA
    {4, 1, 64, true, 0, 0.0, 33, true},        // window and ALiBi, multi-query
    {2, 2, 32, false, 0, 0.0, 0, true},        // ALiBi without a mask
};

/// The reference's parameters for case `c` with `bias` (when it has one);
/// `slopes` holds the ALiBi slopes the result points to.
ref::AttentionParams referenceParams(const AttentionCase &c, const std::vector<float> &bias,
                                     std::vector<double> &slopes) {
  ref::AttentionParams params;
  params.heads = c.heads;
  params.kvHeads = c.kvHeads;
  params.headDim = c.headDim;
  params.scale = c.scale != 0.0 ? static_cast<double>(static_cast<float>(c.scale))
                                : static_cast<double>(static_cast<float>(ref::defaultScale(c.headDim)));
  params.causal = c.causal;
  params.bias = c.biasHeads ? bias.data() : nullptr;
  params.biasHeads = c.biasHeads ? c.biasHeads : 1;
  params.window = c.window;
  std::vector<float> asFloat = alibiSlopes(c.heads);
  slopes.assign(asFloat.begin(), asFloat.end());
  params.alibiSlopes = c.alibi ? slopes.data() : nullptr;
  return params;
}

void checkAttention(const CompiledModule &module, size_t index,
                    const AttentionCase &c, int64_t seqQ, int64_t seqKv,
                    uint64_t seed) {
  int64_t qf = c.heads * c.headDim, kf = c.kvHeads * c.headDim;
  // q, k with std 1: scaled scores have std ~1, far from uniform weights.
  std::vector<float> q = random(seqQ * qf, 1.0f, seed), k = random(seqKv * kf, 1.0f, seed + 1),
                     v = random(seqKv * kf, 1.0f, seed + 2);
  std::vector<float> bias;
  if (c.biasHeads == c.heads && c.biasHeads > 1)
    bias = ref::alibiBias(c.heads, seqQ, seqKv, -1);
  else if (c.biasHeads)
    bias = random(c.biasHeads * seqQ * seqKv, 1.0f, seed + 3);
  Buffer2D qBuf(q, {seqQ, qf}), kBuf(k, {seqKv, kf}), vBuf(v, {seqKv, kf});
  Buffer3D biasBuf(bias, {c.biasHeads, seqQ, seqKv});
  Buffer2D out(std::vector<float>(seqQ * qf), {seqQ, qf});
  std::string name = "attention" + std::to_string(index);
  bool called = c.biasHeads ? module.call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(), biasBuf.memref(), out.memref())
                            : module.call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(), out.memref());
  ASSERT_TRUE(called);
  std::vector<double> slopes;
  ref::AttentionParams params = referenceParams(c, bias, slopes);
  EXPECT_CLOSE(out.values(), ref::attention(q, seqQ, k, v, seqKv, params), kOpTolerance)
      << name << " seqQ=" << seqQ << " seqKv=" << seqKv;
}

/// One way of compiling attention: the linalg lowering or the kernel, at a
/// block size and vector width.
struct AttentionVariant {
  std::string name;
  bool kernel;
  int64_t queryBlock, kvBlock, vectorWidth;

  CompileOptions options() const {
    CompileOptions options;
    options.queryBlock = queryBlock;
    options.kvBlock = kvBlock;
    options.configure = [*this](AttnPipelineOptions &pipeline) {
      pipeline.attentionKernel = kernel;
      pipeline.vectorWidth = vectorWidth;
    };
    return options;
  }
};

void PrintTo(const AttentionVariant &variant, std::ostream *os) { *os << variant.name; }

class AttentionBlocks : public ::testing::TestWithParam<AttentionVariant> {};

TEST_P(AttentionBlocks, MatchesReferenceOnPrefillShapes) {
  std::string source;
  for (auto [index, c] : llvm::enumerate(kAttentionCases))
    source += attentionFunction(index, c);
  auto module = compileOrDie(source, GetParam().options());
  ASSERT_TRUE(module);
  for (auto [index, c] : llvm::enumerate(kAttentionCases)) {
    for (int64_t seq : kSeqLengths)
      checkAttention(*module, index, c, seq, seq, 200 + seq);
    // Fewer queries than keys: the causal diagonal sits at kv_len - seq_q.
    checkAttention(*module, index, c, 5, 40, 300);
    checkAttention(*module, index, c, 1, 129, 301);
  }
}

// The linalg lowering at default blocks (64x64) and at small ones that make
// every sequence above span several full and partial blocks in both
// directions; the kernel (bias-free cases) likewise, at both vector widths.
// With 5 rows per block, grouped heads leave a block of one position padded
// to a whole vector.
INSTANTIATE_TEST_SUITE_P(
    Lowerings, AttentionBlocks,
    ::testing::Values(AttentionVariant{"linalg_q64_kv64", false, 64, 64, 16},
                      AttentionVariant{"linalg_q16_kv8", false, 16, 8, 16},
                      AttentionVariant{"linalg_q5_kv3", false, 5, 3, 16},
                      AttentionVariant{"kernel_rows64_w16", true, 64, 64, 16},
                      AttentionVariant{"kernel_rows16_w16", true, 16, 64, 16},
                      AttentionVariant{"kernel_rows5_w16", true, 5, 64, 16},
                      AttentionVariant{"kernel_rows64_w8", true, 64, 64, 8},
                      AttentionVariant{"kernel_rows8_w8", true, 8, 64, 8}),
    [](const auto &info) { return info.param.name; });

/// Query and key blocks of 16, through the kernel or the linalg lowering.
CompileOptions smallBlocks(bool kernel) {
  CompileOptions options;
  options.queryBlock = 16;
  options.kvBlock = 16;
  options.configure = [kernel](AttnPipelineOptions &pipeline) {
    pipeline.attentionKernel = kernel;
  };
  return options;
}

TEST(Attention, DecodeOverAStaticCacheWithKvLen) {
  // Queries against a [64, kv] cache of which kv_len rows are valid: a
  // dynamic number of queries (the kernel's many-row path), and one or three
  // static ones whose rows fit in a vector (its decode path).
  const int64_t heads = 4, kvHeads = 2, headDim = 32, maxSeq = 64;
  const int64_t qf = heads * headDim, kf = kvHeads * headDim;
  std::string source;
  for (auto [name, rows, mask] :
       {std::tuple{"dynamic", "?", " causal"}, std::tuple{"one", "1", " causal"},
        std::tuple{"three", "3", " causal"}, std::tuple{"three_full", "3", ""}})
    source += llvm::formatv(R"mlir(
    func.func @{3}(%q: tensor<{4}x{0}xf32>, %k: tensor<{2}x{1}xf32>, %v: tensor<{2}x{1}xf32>, %n: index) -> tensor<{4}x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads(4) kv_heads(2){5} kv_len(%n) : tensor<{4}x{0}xf32>, tensor<{2}x{1}xf32>, tensor<{2}x{1}xf32> -> tensor<{4}x{0}xf32>
      return %0 : tensor<{4}x{0}xf32>
    })mlir", qf, kf, maxSeq, name, rows, mask).str();
  for (bool kernel : {false, true}) {
    auto module = compileOrDie(source, smallBlocks(kernel));
    ASSERT_TRUE(module);
    std::vector<float> k = random(maxSeq * kf, 1.0f, 400), v = random(maxSeq * kf, 1.0f, 401);
    // Garbage past kv_len must not leak into the result.
    for (int64_t kvLen : {3, 16, 17, 40, 64}) {
      for (auto [name, seqQ, causal] :
           {std::tuple{"dynamic", int64_t(1), true}, std::tuple{"dynamic", int64_t(3), true},
            std::tuple{"one", int64_t(1), true}, std::tuple{"three", int64_t(3), true},
            std::tuple{"three_full", int64_t(3), false}}) {
        std::vector<float> q = random(seqQ * qf, 1.0f, 402 + kvLen);
        Buffer2D qBuf(q, {seqQ, qf}), kBuf(k, {maxSeq, kf}), vBuf(v, {maxSeq, kf});
        Buffer2D out(std::vector<float>(seqQ * qf), {seqQ, qf});
        ASSERT_TRUE(module->call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(), kvLen,
                                 out.memref()));
        ref::AttentionParams params;
        params.heads = heads;
        params.kvHeads = kvHeads;
        params.headDim = headDim;
        params.scale = static_cast<double>(static_cast<float>(ref::defaultScale(headDim)));
        params.causal = causal;
        params.kvLen = kvLen;
        EXPECT_CLOSE(out.values(), ref::attention(q, seqQ, k, v, maxSeq, params), kOpTolerance)
            << name << " kernel=" << kernel << " kv_len=" << kvLen << " seqQ=" << seqQ;
      }
    }
  }
}

// Decode shapes (static rows that fit a vector: the kernel's few-row path)
// with a window and ALiBi, over caches long enough that the kernel splits
// the keys across tasks (flash-decoding) and the window starts mid-cache.
TEST(Attention, WindowAndAlibiOnDecodeShapes) {
  const int64_t heads = 4, kvHeads = 2, headDim = 32, maxSeq = 640;
  const int64_t qf = heads * headDim, kf = kvHeads * headDim;
  struct Variant {
    const char *name;
    int64_t rows, window;
    bool alibi;
  };
  const Variant variants[] = {{"one_w16", 1, 16, false},   {"one_w300", 1, 300, false},
                              {"three_w16", 3, 16, false}, {"one_alibi", 1, 0, true},
                              {"three_alibi_w300", 3, 300, true}};
  std::string source;
  for (const Variant &variant : variants) {
    std::string options = " causal";
    if (variant.window)
      options += llvm::formatv(" window({0})", variant.window).str();
    if (variant.alibi)
      options += alibiAttribute(heads);
    source += llvm::formatv(R"mlir(
    func.func @{3}(%q: tensor<{4}x{0}xf32>, %k: tensor<{2}x{1}xf32>, %v: tensor<{2}x{1}xf32>, %n: index) -> tensor<{4}x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads(4) kv_heads(2){5} kv_len(%n) : tensor<{4}x{0}xf32>, tensor<{2}x{1}xf32>, tensor<{2}x{1}xf32> -> tensor<{4}x{0}xf32>
      return %0 : tensor<{4}x{0}xf32>
    })mlir", qf, kf, maxSeq, variant.name, variant.rows, options).str();
  }
  std::vector<float> slopes = alibiSlopes(heads);
  std::vector<double> slopesAsDouble(slopes.begin(), slopes.end());
  for (bool kernel : {false, true}) {
    CompileOptions options;
    options.configure = [kernel](AttnPipelineOptions &pipeline) {
      pipeline.attentionKernel = kernel;
    };
    auto module = compileOrDie(source, options);
    ASSERT_TRUE(module);
    std::vector<float> k = random(maxSeq * kf, 1.0f, 410), v = random(maxSeq * kf, 1.0f, 411);
    for (int64_t kvLen : {5, 17, 100, 257, 600, 640}) {
      for (const Variant &variant : variants) {
        std::vector<float> q = random(variant.rows * qf, 1.0f, 412 + kvLen);
        Buffer2D qBuf(q, {variant.rows, qf}), kBuf(k, {maxSeq, kf}), vBuf(v, {maxSeq, kf});
        Buffer2D out(std::vector<float>(variant.rows * qf), {variant.rows, qf});
        ASSERT_TRUE(module->call(variant.name, qBuf.memref(), kBuf.memref(), vBuf.memref(),
                                 kvLen, out.memref()));
        ref::AttentionParams params;
        params.heads = heads;
        params.kvHeads = kvHeads;
        params.headDim = headDim;
        params.scale = static_cast<double>(static_cast<float>(ref::defaultScale(headDim)));
        params.causal = true;
        params.kvLen = kvLen;
        params.window = variant.window;
        params.alibiSlopes = variant.alibi ? slopesAsDouble.data() : nullptr;
        EXPECT_CLOSE(out.values(), ref::attention(q, variant.rows, k, v, maxSeq, params),
                     kOpTolerance)
            << variant.name << " kernel=" << kernel << " kv_len=" << kvLen;
      }
    }
  }
}

// Keys and values held in bf16 or f16 (a --kv-format cache): every lowering
// widens them as it loads them and otherwise computes as with f32 keys, so
// the result equals the reference on the widened values. Prefill shapes
// (dynamic rows; the linalg lowering also with a bias) and decode shapes
// (one static row: the kernel's few-row path, keys split across tasks).
TEST(Attention, ReadsBf16AndF16KeysAndValues) {
  struct Element {
    const char *type;
    uint16_t (*bits)(float);
    float (*value)(uint16_t);
  };
  auto bf16Bits = [](float value) -> uint16_t {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
  };
  auto bf16Value = [](uint16_t bits) {
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &wide, sizeof value);
    return value;
  };
  const Element elements[] = {{"bf16", +bf16Bits, +bf16Value},
                              {"f16", ref::f16Bits, ref::f16Value}};
  // GQA; a shared bias (linalg only); a window; window and ALiBi, MQA.
  const size_t caseIndices[] = {1, 5, 6, 10};
  for (const Element &element : elements) {
    std::string source;
    for (size_t index : caseIndices) {
      const AttentionCase &c = kAttentionCases[index];
      source += attentionFunction(index, c, element.type, "?", "_rows");
      source += attentionFunction(index, c, element.type, "1", "_one");
    }
    for (bool kernel : {false, true}) {
      SCOPED_TRACE(std::string(element.type) + (kernel ? " kernel" : " linalg"));
      auto module = compileOrDie(source, smallBlocks(kernel));
      ASSERT_TRUE(module);
      for (size_t index : caseIndices) {
        const AttentionCase &c = kAttentionCases[index];
        int64_t qf = c.heads * c.headDim, kf = c.kvHeads * c.headDim;
        for (auto [suffix, seqQ, seqKv] :
             {std::tuple{"_rows", int64_t(17), int64_t(17)},
              std::tuple{"_rows", int64_t(5), int64_t(40)},
              std::tuple{"_one", int64_t(1), int64_t(300)}}) {
          std::vector<float> q = random(seqQ * qf, 1.0f, 500 + seqKv),
                             k = random(seqKv * kf, 1.0f, 501 + seqKv),
                             v = random(seqKv * kf, 1.0f, 502 + seqKv);
          std::vector<uint16_t> kBits(k.size()), vBits(v.size());
          for (size_t i = 0; i < k.size(); ++i) {
            kBits[i] = element.bits(k[i]);
            vBits[i] = element.bits(v[i]);
            // The reference reads the stored values.
            k[i] = element.value(kBits[i]);
            v[i] = element.value(vBits[i]);
          }
          std::vector<float> bias;
          if (c.biasHeads)
            bias = random(c.biasHeads * seqQ * seqKv, 1.0f, 503);
          Buffer2D qBuf(q, {seqQ, qf}), out(std::vector<float>(seqQ * qf), {seqQ, qf});
          Buffer<uint16_t, 2> kBuf(kBits, {seqKv, kf}), vBuf(vBits, {seqKv, kf});
          Buffer3D biasBuf(bias, {c.biasHeads, seqQ, seqKv});
          std::string name = "attention" + std::to_string(index) + suffix;
          ASSERT_TRUE(c.biasHeads ? module->call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(),
                                                 biasBuf.memref(), out.memref())
                                  : module->call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(),
                                                 out.memref()));
          std::vector<double> slopes;
          ref::AttentionParams params = referenceParams(c, bias, slopes);
          EXPECT_CLOSE(out.values(), ref::attention(q, seqQ, k, v, seqKv, params), kOpTolerance)
              << name << " seqQ=" << seqQ << " seqKv=" << seqKv;
        }
      }
    }
  }
}

TEST(Attention, T5RelativePositionBiasEncoderAndDecoder) {
  // Prompts longer than max_distance (128), so the logarithmic buckets and
  // the last, shared one are all used; T5 does not scale scores.
  const int64_t heads = 4, headDim = 32, features = heads * headDim;
  const int64_t buckets = 32, maxDistance = 128, maxSeq = 320;
  const std::string source = llvm::formatv(R"mlir(
    func.func @encoder(%q: tensor<?x{0}xf32>, %k: tensor<?x{0}xf32>, %v: tensor<?x{0}xf32>, %table: tensor<32x4xf32>) -> tensor<?x{0}xf32> {
      %c0 = arith.constant 0 : index
      %s = tensor.dim %q, %c0 : tensor<?x{0}xf32>
      %b = attn.relative_position_bias %table sizes(%s, %s) bidirectional : tensor<32x4xf32> -> tensor<4x?x?xf32>
      %0 = attn.attention %q, %k, %v heads(4) scale(1.0) bias(%b : tensor<4x?x?xf32>) : tensor<?x{0}xf32>, tensor<?x{0}xf32>, tensor<?x{0}xf32> -> tensor<?x{0}xf32>
      return %0 : tensor<?x{0}xf32>
    }
    func.func @decoder(%q: tensor<3x{0}xf32>, %k: tensor<{1}x{0}xf32>, %v: tensor<{1}x{0}xf32>, %table: tensor<32x4xf32>, %n: index) -> tensor<3x{0}xf32> {
      %b = attn.relative_position_bias %table kv_len(%n) : tensor<32x4xf32> -> tensor<4x3x{1}xf32>
      %0 = attn.attention %q, %k, %v heads(4) scale(1.0) causal bias(%b : tensor<4x3x{1}xf32>) kv_len(%n) : tensor<3x{0}xf32>, tensor<{1}x{0}xf32>, tensor<{1}x{0}xf32> -> tensor<3x{0}xf32>
      return %0 : tensor<3x{0}xf32>
    })mlir", features, maxSeq).str();
  // Scores q.k of std ~1 next to biases of std 1: both move the softmax.
  std::vector<float> table = random(buckets * heads, 1.0f, 430);
  Buffer2D tableBuf(table, {buckets, heads});
  auto params = [&](bool bidirectional, int64_t distance) {
    ref::AttentionParams p;
    p.heads = p.kvHeads = heads;
    p.headDim = headDim;
    p.scale = 1.0;
    p.causal = !bidirectional;
    p.relativeBias = table.data();
    p.relativeBuckets = buckets;
    p.relativeMaxDistance = distance;
    p.relativeBidirectional = bidirectional;
    return p;
  };
  const float qStd = 1.0f / std::sqrt(static_cast<float>(headDim));
  for (bool kernel : {false, true}) {
    CompileOptions options;
    options.configure = [kernel](AttnPipelineOptions &pipeline) {
      pipeline.attentionKernel = kernel;
    };
    auto module = compileOrDie(source, options);
    ASSERT_TRUE(module);
    for (int64_t seq : {1, 17, 200}) {
      std::vector<float> q = random(seq * features, qStd, 431 + seq),
                         k = random(seq * features, 1.0f, 432 + seq),
                         v = random(seq * features, 1.0f, 433 + seq);
      Buffer2D qBuf(q, {seq, features}), kBuf(k, {seq, features}), vBuf(v, {seq, features});
      Buffer2D out(std::vector<float>(seq * features), {seq, features});
      ASSERT_TRUE(module->call("encoder", qBuf.memref(), kBuf.memref(), vBuf.memref(),
                               tableBuf.memref(), out.memref()));
      EXPECT_CLOSE(out.values(), ref::attention(q, seq, k, v, seq, params(true, maxDistance)),
                   kOpTolerance)
          << "encoder seq=" << seq << " kernel=" << kernel;
      // The test can see a wrong direction or distance: the bias matters.
      if (seq == 200) {
        EXPECT_GT(ref::maxRelError(out.values(), ref::attention(q, seq, k, v, seq,
                                                               params(true, 64))), 1e-2);
        EXPECT_GT(ref::maxRelError(out.values(), ref::attention(q, seq, k, v, seq,
                                                               params(false, maxDistance))), 1e-2);
      }
    }
    std::vector<float> k = random(maxSeq * features, 1.0f, 440),
                       v = random(maxSeq * features, 1.0f, 441);
    Buffer2D kBuf(k, {maxSeq, features}), vBuf(v, {maxSeq, features});
    for (int64_t kvLen : {3, 40, 250, 320}) {
      std::vector<float> q = random(3 * features, qStd, 442 + kvLen);
      Buffer2D qBuf(q, {3, features});
      Buffer2D out(std::vector<float>(3 * features), {3, features});
      ASSERT_TRUE(module->call("decoder", qBuf.memref(), kBuf.memref(), vBuf.memref(),
                               tableBuf.memref(), kvLen, out.memref()));
      ref::AttentionParams p = params(false, maxDistance);
      p.kvLen = kvLen;
      EXPECT_CLOSE(out.values(), ref::attention(q, 3, k, v, maxSeq, p), kOpTolerance)
          << "decoder kv_len=" << kvLen << " kernel=" << kernel;
    }
  }
}

TEST(Attention, RowsThatSeeNoKeyAreZero) {
  // Causal with 4 queries over 2 valid keys: rows 0 and 1 see nothing.
  auto module = compileOrDie(R"mlir(
    func.func @starved(%q: tensor<4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>, %n: index) -> tensor<4x8xf32> {
      %0 = attn.attention %q, %k, %v heads(2) causal kv_len(%n) : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
      return %0 : tensor<4x8xf32>
    })mlir");
  ASSERT_TRUE(module);
  std::vector<float> q = random(32, 1.0f, 500), k = random(32, 1.0f, 501), v = random(32, 1.0f, 502);
  Buffer2D qBuf(q, {4, 8}), kBuf(k, {4, 8}), vBuf(v, {4, 8});
  Buffer2D out(std::vector<float>(32, 7.0f), {4, 8});
  ASSERT_TRUE(module->call("starved", qBuf.memref(), kBuf.memref(), vBuf.memref(), int64_t(2), out.memref()));
  ref::AttentionParams params;
  params.heads = params.kvHeads = 2;
  params.headDim = 4;
  params.scale = 0.5;
  params.causal = true;
  params.kvLen = 2;
  std::vector<float> expected = ref::attention(q, 4, k, v, 4, params);
  EXPECT_EQ(ref::maxAbsError(std::vector<float>(out.values().begin(), out.values().begin() + 16),
                             std::vector<float>(16, 0.0f)), 0.0);
  EXPECT_CLOSE(out.values(), expected, kOpTolerance);
}

// gpt-oss's attention sinks: prefill (many rows), decode over caches long
// enough that the kernel splits the keys across tasks (the sink joins after
// the splits combine), with and without a window, and the probabilities.
// One sink dominates its head (+6), one barely counts (-4).
TEST(Attention, SinksOnPrefillAndDecodeShapes) {
  const int64_t heads = 4, kvHeads = 2, headDim = 32, maxSeq = 640;
  const int64_t qf = heads * headDim, kf = kvHeads * headDim;
  std::string source = llvm::formatv(R"mlir(
    func.func @prefill(%q: tensor<?x{0}xf32>, %k: tensor<?x{1}xf32>, %v: tensor<?x{1}xf32>, %s: tensor<4xf32>) -> tensor<?x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal sinks(%s : tensor<4xf32>) : tensor<?x{0}xf32>, tensor<?x{1}xf32>, tensor<?x{1}xf32> -> tensor<?x{0}xf32>
      return %0 : tensor<?x{0}xf32>
    }
    func.func @prefill_w16(%q: tensor<?x{0}xf32>, %k: tensor<?x{1}xf32>, %v: tensor<?x{1}xf32>, %s: tensor<4xf32>) -> tensor<?x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal window(16) sinks(%s : tensor<4xf32>) : tensor<?x{0}xf32>, tensor<?x{1}xf32>, tensor<?x{1}xf32> -> tensor<?x{0}xf32>
      return %0 : tensor<?x{0}xf32>
    }
    func.func @probabilities(%q: tensor<?x{0}xf32>, %k: tensor<?x{1}xf32>, %s: tensor<4xf32>) -> tensor<4x?x?xf32> {
      %0 = attn.attention_probabilities %q, %k heads(4) kv_heads(2) causal window(16) sinks(%s : tensor<4xf32>) : tensor<?x{0}xf32>, tensor<?x{1}xf32> -> tensor<4x?x?xf32>
      return %0 : tensor<4x?x?xf32>
    })mlir", qf, kf).str();
  for (auto [name, rows, window] : {std::tuple{"one", 1, 0}, std::tuple{"three", 3, 0},
                                    std::tuple{"one_w300", 1, 300}})
    source += llvm::formatv(R"mlir(
    func.func @{3}(%q: tensor<{4}x{0}xf32>, %k: tensor<{2}x{1}xf32>, %v: tensor<{2}x{1}xf32>, %s: tensor<4xf32>, %n: index) -> tensor<{4}x{0}xf32> {
      %0 = attn.attention %q, %k, %v heads(4) kv_heads(2) causal{5} sinks(%s : tensor<4xf32>) kv_len(%n) : tensor<{4}x{0}xf32>, tensor<{2}x{1}xf32>, tensor<{2}x{1}xf32> -> tensor<{4}x{0}xf32>
      return %0 : tensor<{4}x{0}xf32>
    })mlir", qf, kf, maxSeq, name, rows,
                            window ? llvm::formatv(" window({0})", window).str() : "").str();
  std::vector<float> sinks = {0.7f, 6.0f, -4.0f, -0.3f};
  Buffer1D sinkBuf(sinks, {heads});
  ref::AttentionParams params;
  params.heads = heads;
  params.kvHeads = kvHeads;
  params.headDim = headDim;
  params.scale = static_cast<double>(static_cast<float>(ref::defaultScale(headDim)));
  params.causal = true;
  params.sinks = sinks.data();
  for (bool kernel : {false, true}) {
    auto module = compileOrDie(source, smallBlocks(kernel));
    ASSERT_TRUE(module);
    for (int64_t seq : {1, 7, 40, 129}) {
      std::vector<float> q = random(seq * qf, 1.0f, 700 + seq),
                         k = random(seq * kf, 1.0f, 701 + seq),
                         v = random(seq * kf, 1.0f, 702 + seq);
      Buffer2D qBuf(q, {seq, qf}), kBuf(k, {seq, kf}), vBuf(v, {seq, kf});
      for (auto [name, window] : {std::pair{"prefill", 0}, std::pair{"prefill_w16", 16}}) {
        Buffer2D out(std::vector<float>(seq * qf), {seq, qf});
        ASSERT_TRUE(module->call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(),
                                 sinkBuf.memref(), out.memref()));
        params.window = window;
        params.kvLen = -1;
        EXPECT_CLOSE(out.values(), ref::attention(q, seq, k, v, seq, params), kOpTolerance)
            << name << " kernel=" << kernel << " seq=" << seq;
      }
      if (kernel)
        continue; // the probabilities have one lowering
      Buffer3D probs(std::vector<float>(heads * seq * seq), {heads, seq, seq});
      ASSERT_TRUE(module->call("probabilities", qBuf.memref(), kBuf.memref(),
                               sinkBuf.memref(), probs.memref()));
      std::vector<float> weights;
      params.window = 16;
      ref::attention(q, seq, k, v, seq, params, &weights);
      EXPECT_CLOSE(probs.values(), weights, kOpTolerance) << "probabilities seq=" << seq;
    }
    std::vector<float> k = random(maxSeq * kf, 1.0f, 710), v = random(maxSeq * kf, 1.0f, 711);
    for (int64_t kvLen : {1, 17, 257, 640}) {
      for (auto [name, rows, window] : {std::tuple{"one", int64_t(1), 0},
                                        std::tuple{"three", int64_t(3), 0},
                                        std::tuple{"one_w300", int64_t(1), 300}}) {
        std::vector<float> q = random(rows * qf, 1.0f, 712 + kvLen);
        Buffer2D qBuf(q, {rows, qf}), kBuf(k, {maxSeq, kf}), vBuf(v, {maxSeq, kf});
        Buffer2D out(std::vector<float>(rows * qf), {rows, qf});
        ASSERT_TRUE(module->call(name, qBuf.memref(), kBuf.memref(), vBuf.memref(),
                                 sinkBuf.memref(), kvLen, out.memref()));
        params.window = window;
        params.kvLen = kvLen;
        EXPECT_CLOSE(out.values(), ref::attention(q, rows, k, v, maxSeq, params), kOpTolerance)
            << name << " kernel=" << kernel << " kv_len=" << kvLen;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

TEST(KvCache, AppendUpdatesTheCallersBufferInPlaceAndReadSlices) {
  // The cache is a buffer the caller owns: the entry point takes it as a
  // memref and materializes the appended tensor back into it, the calling
  // convention attn-compile uses.
  auto module = compileOrDie(R"mlir(
    func.func @append(%new: memref<?x8xf32>, %cache: memref<16x8xf32>, %pos: index) {
      %n = bufferization.to_tensor %new restrict : memref<?x8xf32> to tensor<?x8xf32>
      %c = bufferization.to_tensor %cache restrict writable : memref<16x8xf32> to tensor<16x8xf32>
      %0 = attn.kv_cache_append %n into %c[%pos] : tensor<?x8xf32> into tensor<16x8xf32>
      bufferization.materialize_in_destination %0 in restrict writable %cache : (tensor<16x8xf32>, memref<16x8xf32>) -> ()
      return
    }
    func.func @read(%cache: tensor<16x8xf32>, %len: index) -> tensor<?x8xf32> {
      %0 = attn.kv_cache_read %cache[%len] : tensor<16x8xf32> -> tensor<?x8xf32>
      return %0 : tensor<?x8xf32>
    })mlir");
  ASSERT_TRUE(module);
  std::vector<float> cache = random(16 * 8, 1.0f, 600);
  Buffer2D cacheBuf(cache, {16, 8});
  int64_t position = 0;
  for (int64_t rows : {3, 1, 1, 5, 6}) {
    std::vector<float> update = random(rows * 8, 1.0f, 601 + position);
    Buffer2D updateBuf(update, {rows, 8});
    ASSERT_TRUE(module->call("append", updateBuf.memref(), cacheBuf.memref(), position));
    cache = ref::kvCacheAppend(cache, 16, 8, update, rows, position);
    EXPECT_EQ(ref::maxAbsError(cacheBuf.values(), cache), 0.0) << "position " << position;
    position += rows;
    Buffer2D prefix(std::vector<float>(position * 8), {position, 8});
    ASSERT_TRUE(module->call("read", cacheBuf.memref(), position, prefix.memref()));
    EXPECT_EQ(ref::maxAbsError(prefix.values(), ref::kvCacheRead(cache, 8, position)), 0.0);
  }
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

using ExpertIds = Buffer<int32_t, 2>;

// The three scorings on random logits (experts exact, weights to 1e-5), then
// the edge cases: every logit equal (the lower experts win, in order), one
// expert every token chooses (a large bias) tied with another, and top_k
// equal to the number of experts (every expert, best first).
TEST(Moe, RouterScoringsTiesAndTopKOfAll) {
  const int64_t hidden = 32, experts = 8;
  auto module = compileOrDie(R"mlir(
    func.func @normalized(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
      %0, %1 = attn.moe_router %x, %w top_k(2) softmax_top_k normalize : tensor<?x32xf32>, tensor<8x32xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
      return %0, %1 : tensor<?x2xf32>, tensor<?x2xi32>
    }
    func.func @probabilities(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
      %0, %1 = attn.moe_router %x, %w top_k(2) softmax_top_k : tensor<?x32xf32>, tensor<8x32xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
      return %0, %1 : tensor<?x2xf32>, tensor<?x2xi32>
    }
    func.func @top_k_first(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>, %b: tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>) {
      %0, %1 = attn.moe_router %x, %w, %b top_k(2) top_k_softmax : tensor<?x32xf32>, tensor<8x32xf32>, tensor<8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
      return %0, %1 : tensor<?x2xf32>, tensor<?x2xi32>
    }
    func.func @all(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) -> (tensor<?x8xf32>, tensor<?x8xi32>) {
      %0, %1 = attn.moe_router %x, %w top_k(8) softmax_top_k normalize : tensor<?x32xf32>, tensor<8x32xf32> -> tensor<?x8xf32>, tensor<?x8xi32>
      return %0, %1 : tensor<?x8xf32>, tensor<?x8xi32>
    })mlir");
  ASSERT_TRUE(module);
  auto route = [&](const char *name, int64_t topK, std::vector<float> x,
                   std::vector<float> w, const std::vector<float> *bias) {
    int64_t tokens = static_cast<int64_t>(x.size()) / hidden;
    Buffer2D xBuf(std::move(x), {tokens, hidden}), wBuf(std::move(w), {experts, hidden});
    Buffer2D weights(std::vector<float>(tokens * topK), {tokens, topK});
    ExpertIds ids(std::vector<int32_t>(tokens * topK, -1), {tokens, topK});
    Buffer1D bBuf(bias ? *bias : std::vector<float>(experts), {experts});
    bool called = bias ? module->call(name, xBuf.memref(), wBuf.memref(), bBuf.memref(),
                                      weights.memref(), ids.memref())
                       : module->call(name, xBuf.memref(), wBuf.memref(),
                                      weights.memref(), ids.memref());
    EXPECT_TRUE(called) << name;
    return ref::MoeRouting{weights.values(), ids.values()};
  };
  // Logits of std ~3: routing far from uniform.
  std::vector<float> w = weights(experts * hidden, hidden, 7);
  for (float &v : w)
    v *= 3.0f;
  std::vector<float> bias = random(experts, 1.0f, 8);
  for (int64_t tokens : kSeqLengths) {
    std::vector<float> x = random(tokens * hidden, 1.0f, 100 + tokens);
    struct Case {
      const char *name;
      int64_t topK;
      ref::MoeScoring scoring;
      bool normalize;
      const std::vector<float> *bias;
    };
    for (const Case &c : {Case{"normalized", 2, ref::MoeScoring::SoftmaxTopK, true, nullptr},
                          Case{"probabilities", 2, ref::MoeScoring::SoftmaxTopK, false, nullptr},
                          Case{"top_k_first", 2, ref::MoeScoring::TopKSoftmax, false, &bias},
                          Case{"all", experts, ref::MoeScoring::SoftmaxTopK, true, nullptr}}) {
      ref::MoeRouting actual = route(c.name, c.topK, x, w, c.bias);
      ref::MoeRouting expected = ref::moeRouter(x, tokens, hidden, w, experts,
                                                c.bias ? c.bias->data() : nullptr,
                                                c.topK, c.scoring, c.normalize);
      EXPECT_EQ(actual.experts, expected.experts) << c.name << " " << tokens;
      EXPECT_LE(ref::maxAbsError(actual.weights, expected.weights), kOpTolerance)
          << c.name << " " << tokens;
    }
  }

  // Every logit equal: experts 0 and 1, each 1/8 of the softmax (1/2 once
  // renormalized); top_k of all lists every expert in index order.
  const int64_t tokens = 3;
  std::vector<float> x = random(tokens * hidden, 1.0f, 9), zero(experts * hidden, 0.0f);
  ref::MoeRouting tie = route("probabilities", 2, x, zero, nullptr);
  EXPECT_EQ(tie.experts, (std::vector<int32_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(tie.weights, std::vector<float>(6, 0.125f));
  EXPECT_EQ(route("normalized", 2, x, zero, nullptr).weights, std::vector<float>(6, 0.5f));
  ref::MoeRouting all = route("all", experts, x, zero, nullptr);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t e = 0; e < experts; ++e)
      EXPECT_EQ(all.experts[t * experts + e], e);
  // A bias every token follows, tied between experts 6 and 3: 3 first.
  std::vector<float> leaning(experts, 0.0f);
  leaning[6] = leaning[3] = 100.0f;
  ref::MoeRouting one = route("top_k_first", 2, x, zero, &leaning);
  EXPECT_EQ(one.experts, (std::vector<int32_t>{3, 6, 3, 6, 3, 6}));
  EXPECT_EQ(one.weights, std::vector<float>(6, 0.5f));
}

// Both activations against the reference, with experts no token chose, every
// token on one expert, and out-of-range ids (clamped). Pre-activations of std
// ~4 push gpt-oss's clamp at 7 into play: without it the values differ.
TEST(Moe, ExpertsSwigluAndClampedGlu) {
  const int64_t hidden = 32, ffn = 40, experts = 6, topK = 2;
  auto module = compileOrDie(R"mlir(
    func.func @swiglu(%x: tensor<?x32xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<6x40x32xf32>, %u: tensor<6x40x32xf32>, %d: tensor<6x32x40xf32>) -> tensor<?x32xf32> {
      %0 = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : tensor<?x32xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<6x40x32xf32>, tensor<6x40x32xf32>, tensor<6x32x40xf32> -> tensor<?x32xf32>
      return %0 : tensor<?x32xf32>
    }
    func.func @clamped(%x: tensor<?x32xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: tensor<6x40x32xf32>, %u: tensor<6x40x32xf32>, %d: tensor<6x32x40xf32>, %gb: tensor<6x40xf32>, %ub: tensor<6x40xf32>, %db: tensor<6x32xf32>) -> tensor<?x32xf32> {
      %0 = attn.moe_experts %x, %w, %e, %g, %u, %d biases(%gb, %ub, %db : tensor<6x40xf32>, tensor<6x40xf32>, tensor<6x32xf32>) clamped_swiglu alpha(1.702) limit(7.0) : tensor<?x32xf32>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<6x40x32xf32>, tensor<6x40x32xf32>, tensor<6x32x40xf32> -> tensor<?x32xf32>
      return %0 : tensor<?x32xf32>
    })mlir");
  ASSERT_TRUE(module);
  std::vector<float> gate = weights(experts * ffn * hidden, hidden, 21),
                     up = weights(experts * ffn * hidden, hidden, 22),
                     down = weights(experts * hidden * ffn, ffn, 23),
                     gateBias = random(experts * ffn, 1.0f, 24),
                     upBias = random(experts * ffn, 1.0f, 25),
                     downBias = random(experts * hidden, 1.0f, 26),
                     routerWeight = weights(experts * hidden, hidden, 27);
  auto run = [&](const char *name, const std::vector<float> &x,
                 const ref::MoeRouting &routing) {
    int64_t tokens = static_cast<int64_t>(x.size()) / hidden;
    Buffer2D xBuf(x, {tokens, hidden}), wBuf(routing.weights, {tokens, topK});
    ExpertIds eBuf(routing.experts, {tokens, topK});
    Buffer3D gBuf(gate, {experts, ffn, hidden}), uBuf(up, {experts, ffn, hidden}),
        dBuf(down, {experts, hidden, ffn});
    Buffer2D gbBuf(gateBias, {experts, ffn}), ubBuf(upBias, {experts, ffn}),
        dbBuf(downBias, {experts, hidden});
    Buffer2D out(std::vector<float>(tokens * hidden), {tokens, hidden});
    bool clamped = std::string(name) == "clamped";
    bool called =
        clamped ? module->call(name, xBuf.memref(), wBuf.memref(), eBuf.memref(),
                               gBuf.memref(), uBuf.memref(), dBuf.memref(),
                               gbBuf.memref(), ubBuf.memref(), dbBuf.memref(),
                               out.memref())
                : module->call(name, xBuf.memref(), wBuf.memref(), eBuf.memref(),
                               gBuf.memref(), uBuf.memref(), dBuf.memref(),
                               out.memref());
    EXPECT_TRUE(called) << name;
    return out.values();
  };
  auto check = [&](const std::vector<float> &x, const ref::MoeRouting &routing,
                   const std::string &what) {
    int64_t tokens = static_cast<int64_t>(x.size()) / hidden;
    EXPECT_CLOSE(run("swiglu", x, routing),
                 ref::moeExperts(x, tokens, hidden, routing, topK, gate, up, down,
                                 experts, ffn, ref::MoeActivation::Swiglu),
                 kOpTolerance)
        << what;
    EXPECT_CLOSE(run("clamped", x, routing),
                 ref::moeExperts(x, tokens, hidden, routing, topK, gate, up, down,
                                 experts, ffn, ref::MoeActivation::ClampedSwiglu,
                                 static_cast<double>(1.702f), 7.0,
                                 {&gateBias, &upBias, &downBias}),
                 kOpTolerance)
        << what;
  };
  for (int64_t tokens : kSeqLengths) {
    std::vector<float> x = random(tokens * hidden, 4.0f, 200 + tokens);
    check(x, ref::moeRouter(x, tokens, hidden, routerWeight, experts, nullptr,
                            topK, ref::MoeScoring::SoftmaxTopK, true),
          "routed " + std::to_string(tokens));
    // Every token on expert 4 (twice, with weights that do not sum to 1).
    ref::MoeRouting one{random(tokens * topK, 1.0f, 300 + tokens),
                        std::vector<int32_t>(tokens * topK, 4)};
    check(x, one, "one expert " + std::to_string(tokens));
  }
  // Out-of-range ids read the nearest expert.
  std::vector<float> x = random(2 * hidden, 4.0f, 400);
  ref::MoeRouting outside{{0.75f, 0.25f, 0.5f, 0.5f}, {-3, 99, 0, 5}};
  ref::MoeRouting clamped{outside.weights, {0, 5, 0, 5}};
  EXPECT_EQ(run("swiglu", x, outside), run("swiglu", x, clamped));
  EXPECT_EQ(run("clamped", x, outside), run("clamped", x, clamped));
}


/// The stacked packed slabs of `experts` [out, in] weights (row-major
/// [experts * out, in]) in `format`, as attn-compile packs a model's experts,
/// with blocks of `nr` outputs.
std::vector<uint8_t> packExperts(const std::vector<float> &w, int64_t experts,
                                 int64_t out, int64_t in, int64_t nr,
                                 PackedFormat format) {
  std::vector<uint8_t> bytes;
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<float> one(w.begin() + e * out * in, w.begin() + (e + 1) * out * in);
    std::vector<uint8_t> slab;
    if (isQuantized(format)) {
      slab = ref::packQuantized(one, out, in, nr, quantFormat(format));
    } else {
      std::vector<float> packed = packOutIn(one, out, in, nr);
      if (format == PackedFormat::BF16) {
        std::vector<uint16_t> bits(packed.size());
        for (size_t i = 0; i < packed.size(); ++i)
          bits[i] = bf16Bits(packed[i]);
        slab.assign(reinterpret_cast<const uint8_t *>(bits.data()),
                    reinterpret_cast<const uint8_t *>(bits.data() + bits.size()));
      } else {
        slab.assign(reinterpret_cast<const uint8_t *>(packed.data()),
                    reinterpret_cast<const uint8_t *>(packed.data() + packed.size()));
      }
    }
    bytes.insert(bytes.end(), slab.begin(), slab.end());
  }
  return bytes;
}

/// A memref descriptor over `bytes` of a stacked packed weight: the shape
/// in elements of the format (f32, bf16 or i8).
struct PackedExperts {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> shape;
  StridedMemRefType<uint8_t, 5> descriptor;
  void *memref() {
    descriptor.basePtr = descriptor.data = bytes.data();
    descriptor.offset = 0;
    int64_t stride = 1;
    for (int dim = static_cast<int>(shape.size()) - 1; dim >= 0; --dim) {
      descriptor.sizes[dim] = shape[dim];
      descriptor.strides[dim] = stride;
      stride *= shape[dim];
    }
    return &descriptor; // a rank-4 memref reads only the first four entries
  }
};

class PackedMoe : public ::testing::TestWithParam<PackedFormat> {};

// attn.moe_experts on packed experts takes the CPU path: pairs grouped by
// expert, each chosen expert's rows through attn.gemm (gate and up with the
// SwiGLU epilogue, down scaled by the routing weights). Against the
// reference on the weights rounded through the format (and, for q8_0 /
// q4_0, the rows the kernels read quantized per block of 32), with routed
// tokens, every token on one expert (both slots), experts no token chose,
// top_k equal to the number of experts, and out-of-range ids (clamped).
// gpt-oss's experts too: the clamped SwiGLU (a limit of 1.5, so that many
// gates and ups are clamped) with biases on gate, up and down (the down
// bias before the routing weight scales the row).
TEST_P(PackedMoe, GroupedByExpertMatchesReference) {
  const PackedFormat format = GetParam();
  const bool quantized = isQuantized(format);
  if (quantized && !hostHasInt8Dot())
    GTEST_SKIP() << "the q8_0 / q4_0 kernels need AVX2 or AVX-512BW";
  const int64_t hidden = 64, ffn = 96, experts = 6, nr = 32;
  auto slabType = [&](int64_t out, int64_t in) {
    if (quantized)
      return llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}xi8>", experts, out / nr,
                           in / 32, nr, format == PackedFormat::Q8_0 ? 34 : 18)
          .str();
    return llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", experts, out / nr, in, nr,
                         packedFormatName(format))
        .str();
  };
  std::string g = slabType(ffn, hidden), d = slabType(hidden, ffn);
  auto function = [&](const char *name, int64_t topK) {
    std::string x = "tensor<?x64xf32>",
                w = llvm::formatv("tensor<?x{0}xf32>", topK).str(),
                e = llvm::formatv("tensor<?x{0}xi32>", topK).str();
    return llvm::formatv(R"mlir(
    func.func @{0}(%x: {1}, %w: {2}, %e: {3}, %g: {4}, %u: {4}, %d: {5}) -> {1} {
      %0 = attn.moe_experts %x, %w, %e, %g, %u, %d swiglu : {1}, {2}, {3}, {4}, {4}, {5} -> {1}
      return %0 : {1}
    })mlir",
                         name, x, w, e, g, d)
        .str();
  };
  std::string gptOss = llvm::formatv(R"mlir(
    func.func @oss(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: {0}, %u: {0}, %d: {1},
                   %gb: tensor<{2}x{3}xf32>, %ub: tensor<{2}x{3}xf32>, %db: tensor<{2}x64xf32>) -> tensor<?x64xf32> {
      %0 = attn.moe_experts %x, %w, %e, %g, %u, %d biases(%gb, %ub, %db : tensor<{2}x{3}xf32>, tensor<{2}x{3}xf32>, tensor<{2}x64xf32>)
          clamped_swiglu alpha(1.702) limit(1.5)
          : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, {0}, {0}, {1} -> tensor<?x64xf32>
      return %0 : tensor<?x64xf32>
    })mlir", g, d, experts, ffn).str();
  auto module = compileOrDie(function("top2", 2) + function("all", experts) + gptOss);
  ASSERT_TRUE(module);

  std::vector<float> gate = weights(experts * ffn * hidden, hidden, 31),
                     up = weights(experts * ffn * hidden, hidden, 32),
                     down = weights(experts * hidden * ffn, ffn, 33),
                     routerWeight = weights(experts * hidden, hidden, 34);
  auto stack = [&](const std::vector<float> &w, int64_t out, int64_t in) {
    PackedExperts packed{packExperts(w, experts, out, in, nr, format), {}, {}};
    if (quantized)
      packed.shape = {experts, out / nr, in / 32, nr,
                      format == PackedFormat::Q8_0 ? 34 : 18};
    else
      packed.shape = {experts, out / nr, in, nr};
    return packed;
  };
  PackedExperts gBuf = stack(gate, ffn, hidden), uBuf = stack(up, ffn, hidden),
                dBuf = stack(down, hidden, ffn);
  // The values the kernels multiply.
  for (auto [w, in] : {std::pair{&gate, hidden}, {&up, hidden}, {&down, ffn}}) {
    if (format == PackedFormat::BF16)
      for (float &v : *w)
        v = bf16Value(bf16Bits(v));
    else if (quantized)
      ref::roundThroughFormat(*w, in, /*outIn=*/true, quantFormat(format));
  }
  ref::RowRounding roundRows;
  if (quantized)
    roundRows = [](const std::vector<float> &rows, int64_t count, int64_t width) {
      return ref::quantizeActivationRows(rows, count, width);
    };
  const double tolerance = quantized ? kQuantizedNormTolerance : kOpTolerance;

  auto run = [&](const char *name, int64_t topK, const std::vector<float> &x,
                 const ref::MoeRouting &routing) {
    int64_t tokens = static_cast<int64_t>(x.size()) / hidden;
    Buffer2D xBuf(x, {tokens, hidden}), wBuf(routing.weights, {tokens, topK});
    ExpertIds eBuf(routing.experts, {tokens, topK});
    Buffer2D out(std::vector<float>(tokens * hidden), {tokens, hidden});
    EXPECT_TRUE(module->call(name, xBuf.memref(), wBuf.memref(), eBuf.memref(),
                             gBuf.memref(), uBuf.memref(), dBuf.memref(),
                             out.memref()))
        << name;
    return out.values();
  };
  auto check = [&](const char *name, int64_t topK, const std::vector<float> &x,
                   const ref::MoeRouting &routing, const std::string &what) {
    int64_t tokens = static_cast<int64_t>(x.size()) / hidden;
    EXPECT_CLOSE(run(name, topK, x, routing),
                 ref::moeExperts(x, tokens, hidden, routing, topK, gate, up, down,
                                 experts, ffn, ref::MoeActivation::Swiglu, 0.0, 0.0,
                                 {}, roundRows, roundRows),
                 tolerance)
        << what;
  };
  for (int64_t tokens : kSeqLengths) {
    std::string at = " tokens=" + std::to_string(tokens);
    std::vector<float> x = random(tokens * hidden, 1.0f, 500 + tokens);
    ref::MoeRouting routed =
        ref::moeRouter(x, tokens, hidden, routerWeight, experts, nullptr, 2,
                       ref::MoeScoring::SoftmaxTopK, true);
    check("top2", 2, x, routed, "routed" + at);
    ref::MoeRouting one{random(tokens * 2, 1.0f, 600 + tokens),
                        std::vector<int32_t>(tokens * 2, 4)};
    check("top2", 2, x, one, "every token on expert 4" + at);
    check("all", experts, x,
          ref::moeRouter(x, tokens, hidden, routerWeight, experts, nullptr,
                         experts, ref::MoeScoring::SoftmaxTopK, false),
          "top_k of all" + at);
  }
  std::vector<float> gateBias = random(experts * ffn, 0.5f, 35),
                     upBias = random(experts * ffn, 0.5f, 36),
                     downBias = random(experts * hidden, 0.5f, 37),
                     routerBias = random(experts, 0.5f, 38);
  Buffer2D gbBuf(gateBias, {experts, ffn}), ubBuf(upBias, {experts, ffn}),
      dbBuf(downBias, {experts, hidden});
  for (int64_t tokens : kSeqLengths) {
    std::vector<float> x = random(tokens * hidden, 1.0f, 800 + tokens);
    ref::MoeRouting routing =
        ref::moeRouter(x, tokens, hidden, routerWeight, experts, routerBias.data(), 2,
                       ref::MoeScoring::TopKSoftmax, false);
    Buffer2D xBuf(x, {tokens, hidden}), wBuf(routing.weights, {tokens, 2});
    ExpertIds eBuf(routing.experts, {tokens, 2});
    Buffer2D out(std::vector<float>(tokens * hidden), {tokens, hidden});
    ASSERT_TRUE(module->call("oss", xBuf.memref(), wBuf.memref(), eBuf.memref(),
                             gBuf.memref(), uBuf.memref(), dBuf.memref(), gbBuf.memref(),
                             ubBuf.memref(), dbBuf.memref(), out.memref()));
    EXPECT_CLOSE(out.values(),
                 ref::moeExperts(x, tokens, hidden, routing, 2, gate, up, down, experts,
                                 ffn, ref::MoeActivation::ClampedSwiglu, 1.702, 1.5,
                                 {&gateBias, &upBias, &downBias}, roundRows, roundRows),
                 tolerance)
        << "gpt-oss experts tokens=" << tokens;
  }

  std::vector<float> x = random(2 * hidden, 1.0f, 700);
  ref::MoeRouting outside{{0.75f, 0.25f, 0.5f, 0.5f}, {-3, 99, 0, 5}};
  ref::MoeRouting clamped{outside.weights, {0, 5, 0, 5}};
  EXPECT_EQ(run("top2", 2, x, outside), run("top2", 2, x, clamped));
}

// A shared expert (Qwen2-MoE, Qwen3-Next) joins after the routed sum:
// result = routed + sigmoid(logit) * shared, on the reference path (f32
// [experts, ffn, hidden]) and on the grouped path (packed f32 slabs), with
// gate logits from -12 to 12 (sigmoid near 0, 1/2 and near 1) and without
// a gate (the shared output added whole).
TEST(Moe, SharedExpertJoinsAfterTheRoutedSum) {
  const int64_t hidden = 64, ffn = 96, experts = 6, topK = 2, nr = 32;
  const std::string packed =
      llvm::formatv("tensor<{0}x{1}x64x{2}xf32>", experts, ffn / nr, nr).str(),
                    packedDown =
      llvm::formatv("tensor<{0}x2x{1}x{2}xf32>", experts, ffn, nr).str();
  auto function = [&](const char *name, const std::string &g, const std::string &d,
                      bool gated) {
    return llvm::formatv(R"mlir(
    func.func @{0}(%x: tensor<?x64xf32>, %w: tensor<?x2xf32>, %e: tensor<?x2xi32>, %g: {1}, %u: {1}, %d: {2},
                   %s: tensor<?x64xf32>, %sg: tensor<?x1xf32>) -> tensor<?x64xf32> {
      %0 = attn.moe_experts %x, %w, %e, %g, %u, %d shared(%s : tensor<?x64xf32>) {3} swiglu
          : tensor<?x64xf32>, tensor<?x2xf32>, tensor<?x2xi32>, {1}, {1}, {2} -> tensor<?x64xf32>
      return %0 : tensor<?x64xf32>
    })mlir",
                         name, g, d,
                         gated ? "shared_gate(%sg : tensor<?x1xf32>)" : "")
        .str();
  };
  auto module = compileOrDie(
      function("plain", "tensor<6x96x64xf32>", "tensor<6x64x96xf32>", true) +
      function("packed", packed, packedDown, true) +
      function("ungated", "tensor<6x96x64xf32>", "tensor<6x64x96xf32>", false));
  ASSERT_TRUE(module);
  std::vector<float> gate = weights(experts * ffn * hidden, hidden, 41),
                     up = weights(experts * ffn * hidden, hidden, 42),
                     down = weights(experts * hidden * ffn, ffn, 43),
                     routerWeight = weights(experts * hidden, hidden, 44);
  Buffer3D gPlain(gate, {experts, ffn, hidden}), uPlain(up, {experts, ffn, hidden}),
      dPlain(down, {experts, hidden, ffn});
  auto stack = [&](const std::vector<float> &w, int64_t out, int64_t in) {
    return PackedExperts{packExperts(w, experts, out, in, nr, PackedFormat::F32),
                         {experts, out / nr, in, nr}, {}};
  };
  PackedExperts gPacked = stack(gate, ffn, hidden), uPacked = stack(up, ffn, hidden),
                dPacked = stack(down, hidden, ffn);
  for (int64_t tokens : kSeqLengths) {
    std::vector<float> x = random(tokens * hidden, 1.0f, 900 + tokens),
                       shared = random(tokens * hidden, 1.0f, 1000 + tokens),
                       logits(tokens);
    for (int64_t t = 0; t < tokens; ++t)
      logits[t] = -12.0f + 24.0f * static_cast<float>(t % 7) / 6.0f;
    ref::MoeRouting routing =
        ref::moeRouter(x, tokens, hidden, routerWeight, experts, nullptr, topK,
                       ref::MoeScoring::SoftmaxTopK, true);
    std::vector<float> routed =
        ref::moeExperts(x, tokens, hidden, routing, topK, gate, up, down, experts,
                        ffn, ref::MoeActivation::Swiglu);
    std::vector<float> gated(routed.size()), ungated(routed.size());
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < hidden; ++c) {
        double s = shared[t * hidden + c];
        double sigmoid = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[t])));
        gated[t * hidden + c] = static_cast<float>(routed[t * hidden + c] + sigmoid * s);
        ungated[t * hidden + c] = static_cast<float>(routed[t * hidden + c] + s);
      }
    Buffer2D xBuf(x, {tokens, hidden}), wBuf(routing.weights, {tokens, topK}),
        sBuf(shared, {tokens, hidden}), sgBuf(logits, {tokens, 1});
    ExpertIds eBuf(routing.experts, {tokens, topK});
    for (const char *name : {"plain", "packed", "ungated"}) {
      const bool isPacked = std::string(name) == "packed";
      Buffer2D out(std::vector<float>(tokens * hidden), {tokens, hidden});
      ASSERT_TRUE(module->call(
          name, xBuf.memref(), wBuf.memref(), eBuf.memref(),
          isPacked ? gPacked.memref() : gPlain.memref(),
          isPacked ? uPacked.memref() : uPlain.memref(),
          isPacked ? dPacked.memref() : dPlain.memref(), sBuf.memref(),
          sgBuf.memref(), out.memref()));
      EXPECT_CLOSE(out.values(), std::string(name) == "ungated" ? ungated : gated,
                   kOpTolerance)
          << name << " tokens=" << tokens;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, PackedMoe,
                         ::testing::Values(PackedFormat::F32, PackedFormat::BF16,
                                           PackedFormat::Q8_0, PackedFormat::Q4_0),
                         [](const auto &info) {
                           return std::string(packedFormatName(info.param));
                         });

} // namespace
