//===- ModelE2ETest.cpp - whole models: attn-compile + runtime vs reference ===//
//
// Each case writes a random-weight Hugging Face model folder (the same
// generator as attn-make-model), compiles it in-process with the attn-compile
// driver, loads it with the runtime, and compares with the naive reference
// model (test/reference/ModelReference, double accumulation):
//   - the logits of every prompt position (prefill with all rows),
//   - the logits of every greedily generated token fed back through decode,
//     against the reference over the whole sequence without a cache,
//   - cached decode against recomputing the whole sequence with one prefill.
// Tolerance: max abs error <= 1e-4 on logits (of magnitude ~1-10) and <= 1e-5
// of each row's largest |logit|.
//
//===----------------------------------------------------------------------===//

#include "DescriptionWeights.h"
#include "ModelReference.h"
#include "ModelWriter.h"
#include "Support.h"

#include "attn/Compiler/ModelCompiler.h"
#include "attn/Compiler/ModelLayout.h"
#include "attn/Target/CpuTarget.h"
#include "attn/Target/NativeCodegen.h"
#include "attnrt/attnrt.h"
#include "attnrt/model_abi.h"


#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace modelgen = attn::modelgen;
namespace ref = attn::ref;

namespace {

constexpr double kLogitTolerance = 1e-4;
/// And within 1e-5 of the row's largest |logit| (at least 1): the issue's
/// "1e-5 relative". The families measured 4e-7 to 2.4e-6 (2026-12-01).
constexpr double kRelativeTolerance = 1e-5;
// With int8-quantized activations, relative to the largest logit: a flip of
// one activation's rounding (its input off in the last bit) moves a logit
// by about one quantum of that block.
constexpr double kQuantizedTolerance = 2e-2;
// With a bf16 / f16 KV cache, likewise: a key or value whose f32 input is
// off in its last bit can round to the other neighbour ("flip"); measured
// worst row 6.5e-4 (2026-12-01).
constexpr double kCacheRoundingTolerance = 2e-3;

/// A temporary directory removed with its contents.
struct TempDir {
  TempDir() {
    llvm::SmallString<128> dir;
    if (!llvm::sys::fs::createUniqueDirectory("attn-model-e2e", dir))
      path = dir.str().str();
  }
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
  std::string path;
};

struct ModelDeleter {
  void operator()(attnrt_model *model) const { attnrt_model_free(model); }
};
struct SessionDeleter {
  void operator()(attnrt_session *session) const { attnrt_session_free(session); }
};
using ModelPtr = std::unique_ptr<attnrt_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<attnrt_session, SessionDeleter>;

/// Writes, compiles and loads one model; the reference loads the same folder.
struct CompiledModel {
  TempDir dir;
  ModelPtr model;
  std::unique_ptr<ref::ModelReference> reference;
  /// The logits of every position of a whole sequence, without a cache:
  /// the reference's, or a test's own for a model no family describes.
  std::function<bool(const std::vector<int64_t> &, std::vector<float> &,
                     std::string &)>
      forward;
  int64_t vocab = 0;
};

/// A change to the description before it is compiled (a planted bug).
using ConfigEdit = std::function<void(mlir::attn::ModelConfig &)>;

/// Compiles the model folder `dir` (its config.json read as attn-compile
/// reads it, then `edit`ed) and loads it with the runtime. With
/// `viaDescription` the config goes through its model description file
/// first (describeModel, then parseModelConfig), as a user's edited copy of
/// `attn-compile --emit=description` would. `bf16Prefill`: bf16 prefill on
/// AMX tiles or through vdpbf16ps (attn-compile's default where the CPU has
/// them; widened here unless asked, so the other tests see the kernels that
/// widen bf16 exactly).
enum class Bf16Prefill { Widen, Amx, Dot };

bool compileAndLoad(CompiledModel &compiled, int64_t maxSeq,
                    const ConfigEdit &edit, bool viaDescription = false,
                    mlir::attn::WeightFormat format = mlir::attn::WeightFormat::F32,
                    mlir::attn::KvFormat kvFormat = mlir::attn::KvFormat::F32,
                    bool inspect = false, Bf16Prefill bf16Prefill = Bf16Prefill::Widen) {
  const std::string &dir = compiled.dir.path;
  llvm::Expected<mlir::attn::ModelConfig> config =
      mlir::attn::loadModelConfig(dir);
  if (!config) {
    ADD_FAILURE() << llvm::toString(config.takeError());
    return false;
  }
  if (viaDescription) {
    std::string text = mlir::attn::describeModel(*config);
    config = mlir::attn::parseModelConfig(text, "description.json");
    if (!config) {
      ADD_FAILURE() << llvm::toString(config.takeError()) << "\n" << text;
      return false;
    }
    EXPECT_EQ(mlir::attn::describeModel(*config), text)
        << "the description does not read back to itself";
  }
  if (edit)
    edit(*config);
  mlir::attn::ModelCompileOptions options;
  options.maxSeq = maxSeq;
  options.weightFormat = format;
  options.kvFormat = kvFormat;
  options.inspect = inspect;
  options.output = dir + "/libmodel.so";
  options.pipeline.amx = bf16Prefill == Bf16Prefill::Amx;
  options.pipeline.bf16Dot = bf16Prefill == Bf16Prefill::Dot;
  if (llvm::Error err = mlir::attn::compileModel(*config, options, llvm::nulls())) {
    ADD_FAILURE() << "compiling: " << llvm::toString(std::move(err));
    return false;
  }
  char message[512] = "";
  compiled.model.reset(attnrt_model_load(options.output.c_str(),
                                         (dir + "/model.safetensors").c_str(),
                                         message, sizeof message));
  if (!compiled.model) {
    ADD_FAILURE() << "loading: " << message;
    return false;
  }
  compiled.vocab = attnrt_model_vocab_size(compiled.model.get());
  return true;
}

std::unique_ptr<CompiledModel> prepare(
    const modelgen::ModelSpec &spec, int64_t maxSeq = 0, const ConfigEdit &edit = nullptr,
    bool viaDescription = false,
    mlir::attn::WeightFormat format = mlir::attn::WeightFormat::F32,
    mlir::attn::KvFormat kvFormat = mlir::attn::KvFormat::F32, bool inspect = false,
    Bf16Prefill bf16Prefill = Bf16Prefill::Widen) {
  auto compiled = std::make_unique<CompiledModel>();
  std::string error;
  if (!modelgen::writeModel(spec, compiled->dir.path, error)) {
    ADD_FAILURE() << "writing the model: " << error;
    return nullptr;
  }
  if (!compileAndLoad(*compiled, maxSeq, edit, viaDescription, format, kvFormat, inspect,
                      bf16Prefill))
    return nullptr;
  std::unique_ptr<ref::ModelReference> reference =
      ref::ModelReference::load(compiled->dir.path, error);
  if (!reference) {
    ADD_FAILURE() << "reference: " << error;
    return nullptr;
  }
  compiled->forward = [model = reference.get()](const std::vector<int64_t> &ids,
                                                std::vector<float> &logits,
                                                std::string &message) {
    return model->forward(ids, logits, message);
  };
  compiled->reference = std::move(reference);
  return compiled;
}

std::vector<int32_t> promptTokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = static_cast<int32_t>((i * 37 + 11) % vocab);
  return tokens;
}

int32_t argmax(const float *row, int64_t vocab) {
  return static_cast<int32_t>(std::max_element(row, row + vocab) - row);
}

double maxAbs(const float *a, const float *b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double diff = std::abs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(diff))
      return INFINITY;
    worst = std::max(worst, diff);
  }
  return worst;
}

/// Prefill `prompt`, then `generate` greedy decode steps; checks every row
/// against the reference and the cached path against recomputation. With
/// `cachedReference` the reference generates as HF does with a cache (one
/// call for the prompt, one per token) and recomputation is not compared:
/// dynamic NTK RoPE rotates each call with the base of its own length, so
/// cached and recomputed logits differ by design. A `looseTolerance` > 0
/// (int8-quantized activations, whose rounding flips with the last bits of
/// their input) replaces the f32 tolerances, relative to the largest logit,
/// and skips the exact greedy comparison. `rowErrors`, when given, receives
/// each row's max |error| / max |logit| against the reference.
void checkGeneration(CompiledModel &m, const std::vector<int32_t> &prompt,
                     int64_t generate, bool cachedReference = false,
                     double looseTolerance = 0.0,
                     std::vector<double> *rowErrors = nullptr) {
  const int64_t vocab = m.vocab;
  char error[512] = "";
  SessionPtr session(attnrt_session_create(m.model.get(), error, sizeof error));
  ASSERT_TRUE(session) << error;

  // Rows: one per prompt token, then one per generated token fed back.
  std::vector<float> logits(prompt.size() * vocab);
  ASSERT_EQ(attnrt_prefill(session.get(), prompt.data(), prompt.size(),
                           logits.data(), 1, error, sizeof error),
            ATTNRT_OK)
      << error;
  std::vector<int32_t> sequence = prompt;
  std::vector<float> row(vocab);
  for (int64_t step = 0; step < generate; ++step) {
    const float *last = logits.data() + (sequence.size() - 1) * vocab;
    int32_t next = argmax(last, vocab);
    sequence.push_back(next);
    ASSERT_EQ(attnrt_decode(session.get(), next, row.data(), error, sizeof error),
              ATTNRT_OK)
        << error;
    logits.insert(logits.end(), row.begin(), row.end());
  }

  // The reference over the whole sequence at once, no cache.
  std::vector<int64_t> tokens(sequence.begin(), sequence.end());
  std::vector<float> expected;
  std::string message;
  if (cachedReference)
    ASSERT_TRUE(m.reference->forwardCached(
        tokens, static_cast<int64_t>(prompt.size()), expected, message))
        << message;
  else
    ASSERT_TRUE(m.forward(tokens, expected, message)) << message;
  ASSERT_EQ(expected.size(), logits.size());
  for (size_t position = 0; position < sequence.size(); ++position) {
    const float *actual = logits.data() + position * vocab;
    const float *wanted = expected.data() + position * vocab;
    double rowScale = 1.0;
    for (int64_t i = 0; i < vocab; ++i)
      rowScale = std::max(rowScale, std::abs(static_cast<double>(wanted[i])));
    double deviation = maxAbs(actual, wanted, vocab);
    if (rowErrors)
      rowErrors->push_back(deviation / rowScale);
    double allowed = looseTolerance > 0
                         ? looseTolerance * rowScale
                         : std::min(kLogitTolerance, kRelativeTolerance * rowScale);
    ASSERT_LE(deviation, allowed)
        << "position " << position << " (prompt of " << prompt.size()
        << "), largest |logit| " << rowScale;
  }
  // Greedy choices agree with the reference's argmax (no ties at this scale).
  for (size_t position = prompt.size(); looseTolerance == 0 && position < sequence.size();
       ++position)
    EXPECT_EQ(sequence[position],
              argmax(expected.data() + (position - 1) * vocab, vocab))
        << "generated token at position " << position;

  if (cachedReference)
    return;
  // Cached decode equals recomputing everything with one prefill.
  SessionPtr fresh(attnrt_session_create(m.model.get(), error, sizeof error));
  ASSERT_TRUE(fresh) << error;
  std::vector<float> recomputed(sequence.size() * vocab);
  ASSERT_EQ(attnrt_prefill(fresh.get(), sequence.data(), sequence.size(),
                           recomputed.data(), 1, error, sizeof error),
            ATTNRT_OK)
      << error;
  // To f32 rounding: the decode and prefill kernels sum in other orders.
  double scale = 1.0;
  for (float value : logits)
    scale = std::max(scale, std::abs(static_cast<double>(value)));
  EXPECT_LE(maxAbs(recomputed.data(), logits.data(), logits.size()),
            (looseTolerance > 0 ? looseTolerance : 1e-5) * scale)
      << "largest logit " << scale;
}

/// Every row's logits of one prefill of `prompt` in a fresh session.
void prefillRows(CompiledModel &m, const std::vector<int32_t> &prompt,
                 std::vector<float> &logits) {
  char error[512] = "";
  SessionPtr session(attnrt_session_create(m.model.get(), error, sizeof error));
  ASSERT_TRUE(session) << error;
  logits.assign(prompt.size() * m.vocab, 0.0f);
  ASSERT_EQ(attnrt_prefill(session.get(), prompt.data(), prompt.size(), logits.data(), 1,
                           error, sizeof error),
            ATTNRT_OK)
      << error;
}

struct Case {
  std::string name;
  modelgen::ModelSpec spec;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

modelgen::ModelSpec preset(const char *name) {
  modelgen::ModelSpec spec;
  EXPECT_TRUE(modelgen::presetSpec(name, spec)) << name;
  return spec;
}

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back({"tiny_gpt2", preset("tiny-gpt2")});
  modelgen::ModelSpec prefixed = preset("tiny-gpt2");
  prefixed.prefix = "transformer.";
  prefixed.extraBuffers = true;
  all.push_back({"gpt2_prefixed_with_mask_buffers", prefixed});
  modelgen::ModelSpec erf = preset("tiny-gpt2");
  erf.activation = "gelu";
  erf.layers = 1;
  all.push_back({"gpt2_erf_gelu", erf});
  all.push_back({"tiny_llama_gqa2", preset("tiny-llama")});
  all.push_back({"tiny_llama_tied_mqa", preset("tiny-llama-tied")});
  modelgen::ModelSpec wideHeads = preset("tiny-llama");
  wideHeads.headDim = 32; // q_proj is [4 * 32, 64]: wider than hidden
  wideHeads.ropeTheta = 500000.0;
  wideHeads.extraBuffers = true;
  all.push_back({"llama_explicit_head_dim", wideHeads});
  modelgen::ModelSpec half = preset("tiny-llama");
  half.dtype = modelgen::DType::BF16;
  all.push_back({"llama_bf16_weights", half});
  // The other families, sharp (larger q/k, strong random biases): a missing
  // bias, a wrong layout or mask moves logits far past the tolerance.
  for (const char *name : {"tiny-mistral", "tiny-mistral-mqa", "tiny-qwen2",
                           "tiny-qwen2-swa", "tiny-gemma", "tiny-gemma-mqa",
                           "tiny-phi3", "tiny-phi3-partial", "tiny-gpt_neox",
                           "tiny-gpt_neox-sequential", "tiny-gptj", "tiny-opt",
                           "tiny-opt-postln", "tiny-bloom", "tiny-xglm", "tiny-qwen3",
                           "tiny-qwen3-swa", "tiny-qwen3-bias", "tiny-gemma2",
                           "tiny-gemma3", "tiny-gemma3-mm", "tiny-smollm3",
                           "tiny-smollm3-list", "tiny-qwen3-moe",
                           "tiny-qwen3-moe-sparse", "tiny-qwen2-moe", "tiny-mixtral",
                           "tiny-gpt-oss"}) {
    modelgen::ModelSpec spec = preset(name);
    spec.sharp = true;
    std::string id = std::string(name + 5) + "_sharp";
    std::replace(id.begin(), id.end(), '-', '_');
    all.push_back({id, spec});
  }
  // Gemma 3 4B-27B as transformers >= 4.52 saves it (model.language_model.*,
  // the head at the top: untied here so that it is read).
  modelgen::ModelSpec gemma3Current = preset("tiny-gemma3-mm");
  gemma3Current.sharp = true;
  gemma3Current.multimodalCurrentNames = true;
  gemma3Current.tieEmbeddings = false;
  all.push_back({"gemma3_mm_untied_current_names_sharp", gemma3Current});
  // A GPT-J whose head is tied still has lm_head.bias.
  modelgen::ModelSpec gptjTied = preset("tiny-gptj");
  gptjTied.tieEmbeddings = true;
  all.push_back({"gptj_tied_with_head_bias", gptjTied});
  return all;
}

class ModelE2E : public ::testing::TestWithParam<Case> {};

TEST_P(ModelE2E, LogitsMatchReferenceAndDecodeMatchesRecompute) {
  std::unique_ptr<CompiledModel> m = prepare(GetParam().spec);
  ASSERT_TRUE(m);
  EXPECT_STREQ(attnrt_model_warnings(m->model.get()), "");
  // Short and longer prompts; the longer one crosses a 64-key attention
  // block when decoding.
  checkGeneration(*m, promptTokens(1, m->vocab), 4);
  checkGeneration(*m, promptTokens(17, m->vocab), 12);
  checkGeneration(*m, promptTokens(40, m->vocab), 24);
}

INSTANTIATE_TEST_SUITE_P(Families, ModelE2E, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

/// The largest |a - b| over the elements, with the index where it is.
std::pair<double, size_t> worstDifference(const std::vector<float> &a,
                                          const std::vector<float> &b) {
  std::pair<double, size_t> worst = {0.0, 0};
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double diff = std::abs(static_cast<double>(a[i]) - b[i]);
    if (!(diff <= worst.first)) // NaN counts as the worst
      worst = {std::isnan(diff) ? INFINITY : diff, i};
  }
  return worst;
}

// The inspection entry point (attn-compile --inspect) against the
// reference's own capture: every layer's and head's attention weights within
// 1e-5 and rows summing to 1, the residual stream and the final norm to f32
// rounding, and the logit lens of the last residual equal to the logits.
// Families cover GQA, sliding windows shorter than the prompt (Mistral: 16
// keys; Qwen2: 8, on one layer), ALiBi (BLOOM), post-norm (OPT-350m) and
// sinusoidal positions (XGLM), and the routing of a mixture of experts
// (gpt-oss, Qwen3-MoE with a dense layer); the prompt (40 tokens) is longer
// than every window, so masks and rings matter.
class ModelE2EInspect : public ::testing::TestWithParam<Case> {};

TEST_P(ModelE2EInspect, AttentionResidualAndFinalNormMatchTheReference) {
  std::unique_ptr<CompiledModel> m =
      prepare(GetParam().spec, 0, nullptr, false, mlir::attn::WeightFormat::F32,
              mlir::attn::KvFormat::F32, /*inspect=*/true);
  ASSERT_TRUE(m);
  const attnrt_model_info &info = *attnrt_model_get_info(m->model.get());
  ASSERT_EQ(info.can_inspect, 1);
  const int64_t n = 40, layers = info.num_layers, heads = info.num_heads,
                d = info.hidden_size, vocab = m->vocab;
  std::vector<int32_t> prompt = promptTokens(n, vocab);
  char error[512] = "";
  SessionPtr session(attnrt_session_create(m->model.get(), error, sizeof error));
  ASSERT_TRUE(session) << error;
  // A used session: inspection restarts at position 0.
  std::vector<float> row(vocab);
  ASSERT_EQ(attnrt_prefill(session.get(), prompt.data(), 5, row.data(), 0, error, sizeof error),
            ATTNRT_OK)
      << error;
  std::vector<float> attention(layers * heads * n * n, NAN), residual((layers + 1) * n * d, NAN),
      finalNorm(n * d, NAN), logits(n * vocab, NAN);
  // A mixture of experts' routing too.
  const int64_t topK = info.experts_per_token;
  std::vector<int32_t> experts(layers * n * topK, -2);
  std::vector<float> expertWeights(layers * n * topK, NAN);
  ASSERT_EQ(attnrt_inspect_routing(session.get(), prompt.data(), n, attention.data(),
                                   residual.data(), finalNorm.data(), logits.data(),
                                   topK ? experts.data() : nullptr,
                                   topK ? expertWeights.data() : nullptr, error, sizeof error),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(attnrt_session_position(session.get()), n);

  ref::Inspection expected;
  std::vector<float> expectedLogits;
  std::string message;
  ASSERT_TRUE(m->reference->inspect(std::vector<int64_t>(prompt.begin(), prompt.end()),
                                    expected, expectedLogits, message))
      << message;
  ASSERT_EQ(expected.attention.size(), attention.size());
  ASSERT_EQ(expected.residual.size(), residual.size());
  ASSERT_EQ(expected.finalNorm.size(), finalNorm.size());
  auto [attentionError, at] = worstDifference(attention, expected.attention);
  EXPECT_LE(attentionError, 1e-5) << "layer " << at / (heads * n * n) << " head "
                                  << at / (n * n) % heads << " query " << at / n % n
                                  << " key " << at % n;
  // Each row sums to 1, or with gpt-oss's sinks to less: the sink's share.
  const bool sinks = GetParam().spec.family == modelgen::Family::GptOss;
  double sinkShare = 0;
  for (int64_t r = 0; r < layers * heads * n; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < n; ++j)
      sum += attention[r * n + j];
    if (sinks) {
      ASSERT_LE(sum, 1.0 + 1e-5) << "row " << r % n << " of layer " << r / (heads * n);
      ASSERT_GT(sum, 0.0) << "row " << r % n << " of layer " << r / (heads * n);
      sinkShare = std::max(sinkShare, 1.0 - sum);
      continue;
    }
    ASSERT_NEAR(sum, 1.0, 1e-5) << "row " << r % n << " of layer " << r / (heads * n)
                                << " head " << r / n % heads;
  }
  if (sinks)
    EXPECT_GT(sinkShare, 0.1) << "no head gives its sink a visible share";
  // The routing: the same experts in the same order (ties are the
  // reference's torch.topk order), their weights within 1e-5; a dense layer
  // -1 and 0.
  ASSERT_EQ(expected.experts.size(), experts.size());
  for (size_t i = 0; i < experts.size(); ++i)
    ASSERT_EQ(experts[i], expected.experts[i])
        << "layer " << i / (n * topK) << " token " << i / topK % n << " choice " << i % topK;
  auto [routingError, wi] = worstDifference(expertWeights, expected.expertWeights);
  EXPECT_LE(routingError, 1e-5) << "layer " << wi / (n * topK) << " token " << wi / topK % n;
  if (topK) {
    std::set<int32_t> chosen(experts.begin(), experts.end());
    EXPECT_GT(chosen.size(), static_cast<size_t>(topK)) << "the prompt routes to few experts";
  } else {
    int32_t none[1];
    ASSERT_EQ(attnrt_inspect_routing(session.get(), prompt.data(), n, nullptr, nullptr, nullptr,
                                     nullptr, none, nullptr, error, sizeof error),
              ATTNRT_ERROR_ARGUMENT);
    EXPECT_NE(std::string(error).find("not a mixture of experts"), std::string::npos) << error;
  }
  // Activations to f32 rounding, relative to their largest magnitude.
  auto scaleOf = [](const std::vector<float> &v) {
    double scale = 1.0;
    for (float x : v)
      scale = std::max(scale, std::abs(static_cast<double>(x)));
    return scale;
  };
  auto [residualError, ri] = worstDifference(residual, expected.residual);
  EXPECT_LE(residualError, kRelativeTolerance * scaleOf(expected.residual))
      << "residual " << ri / (n * d) << " position " << ri / d % n;
  EXPECT_LE(worstDifference(finalNorm, expected.finalNorm).first,
            kRelativeTolerance * scaleOf(expected.finalNorm));
  EXPECT_LE(worstDifference(logits, expectedLogits).first,
            std::min(kLogitTolerance, kRelativeTolerance * scaleOf(expectedLogits)));

  // The logit lens of the last layer's output is the model's logits; the
  // session keeps its position.
  std::vector<float> lens(n * vocab, NAN);
  ASSERT_EQ(attnrt_unembed(session.get(), residual.data() + layers * n * d, n, lens.data(),
                           error, sizeof error),
            ATTNRT_OK)
      << error;
  EXPECT_LE(worstDifference(lens, logits).first, 1e-5 * scaleOf(logits));
  EXPECT_EQ(attnrt_session_position(session.get()), n);
  // The session decodes on from there as after a prefill.
  std::vector<float> next(vocab), again(vocab);
  ASSERT_EQ(attnrt_decode(session.get(), prompt[0], next.data(), error, sizeof error), ATTNRT_OK);
  SessionPtr plain(attnrt_session_create(m->model.get(), error, sizeof error));
  std::vector<float> all(n * vocab);
  ASSERT_EQ(attnrt_prefill(plain.get(), prompt.data(), n, all.data(), 1, error, sizeof error),
            ATTNRT_OK);
  ASSERT_EQ(attnrt_decode(plain.get(), prompt[0], again.data(), error, sizeof error), ATTNRT_OK);
  EXPECT_LE(worstDifference(next, again).first, 1e-5 * scaleOf(again));

  // Outputs may be left out; a prompt past the context is an error.
  ASSERT_EQ(attnrt_inspect(session.get(), prompt.data(), n, attention.data(), nullptr, nullptr,
                           nullptr, error, sizeof error),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(worstDifference(attention, expected.attention).first, attentionError);
  std::vector<int32_t> tooLong(info.max_seq + 1, 0);
  EXPECT_EQ(attnrt_inspect(session.get(), tooLong.data(), tooLong.size(), nullptr, nullptr,
                           nullptr, nullptr, error, sizeof error),
            ATTNRT_ERROR_POSITION);
  EXPECT_NE(std::string(error).find("context"), std::string::npos) << error;
}

std::vector<Case> inspectCases() {
  std::vector<Case> chosen;
  for (const Case &c : cases())
    for (const char *name : {"tiny_gpt2", "tiny_llama_gqa2", "mistral_sharp", "qwen2_swa_sharp",
                             "bloom_sharp", "opt_postln_sharp", "xglm_sharp", "gpt_oss_sharp",
                             "qwen3_moe_sharp"})
      if (c.name == name)
        chosen.push_back(c);
  return chosen;
}

INSTANTIATE_TEST_SUITE_P(Families, ModelE2EInspect, ::testing::ValuesIn(inspectCases()),
                         [](const auto &info) { return info.param.name; });

// attnrt_decode_batch: sessions at different positions decode together as
// each would alone, as one compiled batch when they are a group (each row
// at its own position, attending over its own cache: positions past
// Mistral's 16-key ring, ALiBi, learned and sinusoidal positions), one by
// one otherwise; and a bad entry changes no session.
void checkBatch(CompiledModel &m, bool grouped) {
  const int64_t vocab = m.vocab, batch = 4;
  char error[512] = "";
  std::vector<SessionPtr> together, alone;
  std::vector<attnrt_session *> handles(batch);
  if (grouped) {
    ASSERT_EQ(attnrt_session_create_group(m.model.get(), batch, handles.data(), error,
                                          sizeof error),
              ATTNRT_OK)
        << error;
    for (attnrt_session *s : handles)
      together.emplace_back(s);
  }
  std::vector<float> row(vocab);
  for (int64_t i = 0; i < batch; ++i) {
    if (!grouped) {
      together.emplace_back(attnrt_session_create(m.model.get(), error, sizeof error));
      handles[i] = together.back().get();
    }
    alone.emplace_back(attnrt_session_create(m.model.get(), error, sizeof error));
    ASSERT_TRUE(handles[i] && alone.back()) << error;
    std::vector<int32_t> prompt = promptTokens(5 + 9 * i, vocab);
    for (attnrt_session *s : {handles[i], alone.back().get()})
      ASSERT_EQ(attnrt_prefill(s, prompt.data(), prompt.size(), row.data(), 0, error, sizeof error),
                ATTNRT_OK)
          << error;
  }
  std::vector<int32_t> tokens = {3, 17, 42, 7};
  std::vector<float> logits(batch * vocab);
  for (int step = 0; step < 6; ++step) {
    ASSERT_EQ(attnrt_decode_batch(handles.data(), tokens.data(), batch, logits.data(), error,
                                  sizeof error),
              ATTNRT_OK)
        << error;
    for (int64_t i = 0; i < batch; ++i) {
      ASSERT_EQ(attnrt_decode(alone[i].get(), tokens[i], row.data(), error, sizeof error),
                ATTNRT_OK);
      double scale = 1.0;
      for (float x : row)
        scale = std::max(scale, std::abs(static_cast<double>(x)));
      // The batch's projections sum in another order than one row's.
      EXPECT_LE(maxAbs(logits.data() + i * vocab, row.data(), vocab), 1e-5 * scale)
          << "session " << i << " step " << step;
      EXPECT_EQ(attnrt_session_position(handles[i]), attnrt_session_position(alone[i].get()));
      tokens[i] = argmax(row.data(), vocab);
    }
  }
  // A bad token in the last entry, then a session twice: nothing runs.
  std::vector<int64_t> before;
  for (attnrt_session *s : handles)
    before.push_back(attnrt_session_position(s));
  tokens[3] = static_cast<int32_t>(vocab);
  EXPECT_EQ(attnrt_decode_batch(handles.data(), tokens.data(), batch, logits.data(), error,
                                sizeof error),
            ATTNRT_ERROR_TOKEN);
  EXPECT_NE(std::string(error).find("session 3"), std::string::npos) << error;
  tokens[3] = 1;
  attnrt_session *twice[] = {handles[0], handles[1], handles[0]};
  EXPECT_EQ(attnrt_decode_batch(twice, tokens.data(), 3, logits.data(), error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(error).find("session 2 is also session 0"), std::string::npos) << error;
  for (int64_t i = 0; i < batch; ++i)
    EXPECT_EQ(attnrt_session_position(handles[i]), before[i]);
}

class ModelE2EBatch : public ::testing::TestWithParam<Case> {};

TEST_P(ModelE2EBatch, DecodeBatchEqualsDecodingEachSession) {
  std::unique_ptr<CompiledModel> m = prepare(GetParam().spec);
  ASSERT_TRUE(m);
  checkBatch(*m, /*grouped=*/true);
  checkBatch(*m, /*grouped=*/false);
}

std::vector<Case> batchCases() {
  std::vector<Case> chosen;
  for (const Case &c : cases())
    for (const char *name : {"tiny_gpt2", "tiny_llama_gqa2", "mistral_sharp", "qwen2_swa_sharp",
                             "bloom_sharp", "xglm_sharp", "opt_postln_sharp", "qwen3_swa_sharp",
                             "gemma3_sharp", "qwen3_moe_sharp", "mixtral_sharp",
                             "gpt_oss_sharp"})
      if (c.name == name)
        chosen.push_back(c);
  return chosen;
}

INSTANTIATE_TEST_SUITE_P(Families, ModelE2EBatch, ::testing::ValuesIn(batchCases()),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Tensor parallelism: N ranks as N threads of this process
//===----------------------------------------------------------------------===//

/// The runtime's communicator contract (attnrt_communicator) over shared
/// memory: rank r's thread calls the hooks of comms[r]. Each collective
/// publishes this rank's data, waits for every rank, combines in rank order
/// (so every rank computes the same sums bit for bit, as MPI's reductions
/// do) and waits again before its slot may be reused. The MPI transport has
/// its own tests (test/mpi); this one checks the split itself.
class ThreadGroup {
public:
  explicit ThreadGroup(int32_t size) : size(size), slots(size), endpoints(size), comms(size) {
    for (int32_t r = 0; r < size; ++r) {
      endpoints[r] = {this, r};
      comms[r] = {r, size, &endpoints[r], allReduce, allGather, broadcast};
    }
  }
  /// A planted bug: the gather concatenates the ranks in reverse.
  bool reverseGather = false;
  const attnrt_communicator *comm(int32_t rank) const { return &comms[rank]; }

private:
  struct Endpoint {
    ThreadGroup *group;
    int32_t rank;
  };
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    int64_t generation = this->generation;
    if (++arrived == size) {
      arrived = 0;
      ++this->generation;
      ready.notify_all();
      return;
    }
    ready.wait(lock, [&] { return this->generation != generation; });
  }
  static void allReduce(void *context, float *data, int64_t n) {
    auto *e = static_cast<Endpoint *>(context);
    ThreadGroup &g = *e->group;
    g.slots[e->rank].assign(data, data + n);
    g.wait();
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int32_t r = 0; r < g.size; ++r)
        sum += g.slots[r][i];
      data[i] = sum;
    }
    g.wait();
  }
  static void allGather(void *context, const float *data, int64_t n, float *out) {
    auto *e = static_cast<Endpoint *>(context);
    ThreadGroup &g = *e->group;
    g.slots[e->rank].assign(data, data + n);
    g.wait();
    for (int32_t r = 0; r < g.size; ++r) {
      int32_t from = g.reverseGather ? g.size - 1 - r : r;
      std::copy(g.slots[from].begin(), g.slots[from].end(), out + r * n);
    }
    g.wait();
  }
  static void broadcast(void *context, void *bytes, int64_t n, int32_t root) {
    auto *e = static_cast<Endpoint *>(context);
    ThreadGroup &g = *e->group;
    auto *b = static_cast<uint8_t *>(bytes);
    if (e->rank == root)
      g.bytes.assign(b, b + n);
    g.wait();
    if (e->rank != root)
      std::copy(g.bytes.begin(), g.bytes.end(), b);
    g.wait();
  }

  int32_t size;
  std::vector<std::vector<float>> slots;
  std::vector<uint8_t> bytes;
  std::vector<Endpoint> endpoints;
  std::vector<attnrt_communicator> comms;
  std::mutex mutex;
  std::condition_variable ready;
  int32_t arrived = 0;
  int64_t generation = 0;
};

/// Compiles `m`'s folder as one rank's library of a `ranks`-way split and
/// loads it once per rank (from its own copy: one dlopen per rank, so each
/// has its own collectives), each with the group's communicator.
std::vector<ModelPtr> loadRanks(CompiledModel &m, int64_t ranks, ThreadGroup &group,
                                mlir::attn::WeightFormat format = mlir::attn::WeightFormat::F32) {
  const std::string &dir = m.dir.path;
  std::vector<ModelPtr> models;
  llvm::Expected<mlir::attn::ModelConfig> config = mlir::attn::loadModelConfig(dir);
  if (!config) {
    ADD_FAILURE() << llvm::toString(config.takeError());
    return models;
  }
  mlir::attn::ModelCompileOptions options;
  options.tensorParallel = ranks;
  options.weightFormat = format;
  options.output = dir + "/libsplit.so";
  // bf16 prefill widened, as prepare() compiled the whole model.
  options.pipeline.amx = false;
  options.pipeline.bf16Dot = false;
  if (llvm::Error err = mlir::attn::compileModel(*config, options, llvm::nulls())) {
    ADD_FAILURE() << "compiling: " << llvm::toString(std::move(err));
    return models;
  }
  for (int32_t r = 0; r < ranks; ++r) {
    std::string copy = dir + "/libsplit-" + std::to_string(r) + ".so";
    if (std::error_code ec = llvm::sys::fs::copy_file(options.output, copy)) {
      ADD_FAILURE() << copy << ": " << ec.message();
      return {};
    }
    char error[512] = "";
    ModelPtr model(attnrt_model_load_parallel(copy.c_str(), (dir + "/model.safetensors").c_str(),
                                              group.comm(r), error, sizeof error));
    if (!model) {
      ADD_FAILURE() << "loading rank " << r << ": " << error;
      return {};
    }
    attnrt_model_set_num_threads(model.get(), 1);
    models.push_back(std::move(model));
  }
  return models;
}

/// Every rank prefills `prompt` (every row's logits) and decodes `generate`
/// greedy steps on its own thread; returns rank 0's rows and checks that
/// every rank saw the same logits (the gather gives them all the whole
/// vocabulary) and chose the same tokens.
std::vector<float> runRanks(const std::vector<ModelPtr> &models,
                            const std::vector<int32_t> &prompt, int64_t generate,
                            int64_t vocab) {
  size_t ranks = models.size();
  std::vector<std::vector<float>> rows(ranks);
  std::vector<std::string> failures(ranks);
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      char error[512] = "";
      SessionPtr session(attnrt_session_create(models[r].get(), error, sizeof error));
      std::vector<float> &logits = rows[r];
      logits.assign(prompt.size() * vocab, 0.0f);
      if (!session || attnrt_prefill(session.get(), prompt.data(), prompt.size(),
                                     logits.data(), 1, error, sizeof error) != ATTNRT_OK) {
        failures[r] = error;
        return; // the other ranks then wait forever: the test times out
      }
      std::vector<float> row(vocab);
      for (int64_t step = 0; step < generate; ++step) {
        int32_t next = argmax(logits.data() + logits.size() - vocab, vocab);
        if (attnrt_decode(session.get(), next, row.data(), error, sizeof error) != ATTNRT_OK) {
          failures[r] = error;
          return;
        }
        logits.insert(logits.end(), row.begin(), row.end());
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (size_t r = 0; r < ranks; ++r) {
    EXPECT_EQ(failures[r], "") << "rank " << r;
    EXPECT_TRUE(rows[r] == rows[0]) << "rank " << r << "'s logits differ from rank 0's";
  }
  return rows[0];
}

/// The largest |a - b| of any row over that row's largest |b|.
double worstRowError(const std::vector<float> &a, const std::vector<float> &b, int64_t vocab) {
  double worst = 0;
  for (size_t row = 0; row * vocab < b.size(); ++row) {
    double scale = 1.0;
    for (int64_t i = 0; i < vocab; ++i)
      scale = std::max(scale, std::abs(static_cast<double>(b[row * vocab + i])));
    worst = std::max(worst, maxAbs(a.data() + row * vocab, b.data() + row * vocab, vocab) / scale);
  }
  return worst;
}

/// Largest |a - b| over the largest |b| (at least 1).
double relativeToMax(const std::vector<float> &a, const std::vector<float> &b) {
  double scale = 1.0;
  for (float value : b)
    scale = std::max(scale, std::abs(static_cast<double>(value)));
  return maxAbs(a.data(), b.data(), a.size()) / scale;
}

/// The quantile `q` over rows of max |a - b| / max |b| (at least 1) per row.
double rowErrorQuantile(const std::vector<float> &a, const std::vector<float> &b,
                        int64_t vocab, double q) {
  std::vector<double> rows;
  for (size_t start = 0; start + vocab <= b.size(); start += vocab) {
    std::vector<float> rowA(a.begin() + start, a.begin() + start + vocab);
    std::vector<float> rowB(b.begin() + start, b.begin() + start + vocab);
    rows.push_back(relativeToMax(rowA, rowB));
  }
  size_t at = static_cast<size_t>(q * (rows.size() - 1));
  std::nth_element(rows.begin(), rows.begin() + at, rows.end());
  return rows[at];
}

struct SplitCase {
  Case model;
  std::vector<int64_t> ranks;
  /// The whole and the split libraries' weight format.
  mlir::attn::WeightFormat format = mlir::attn::WeightFormat::F32;
};

void PrintTo(const SplitCase &c, std::ostream *os) { *os << c.model.name; }

class ModelE2ETensorParallel : public ::testing::TestWithParam<SplitCase> {};

// A model split over 2 (and 4) ranks gives the logits of the whole model:
// prompt rows and greedy decode rows, a prompt longer than every window.
TEST_P(ModelE2ETensorParallel, RanksTogetherComputeTheWholeModel) {
  mlir::attn::WeightFormat format = GetParam().format;
  std::unique_ptr<CompiledModel> m = prepare(GetParam().model.spec, 0, nullptr, false, format);
  ASSERT_TRUE(m);
  std::vector<int32_t> prompt = promptTokens(40, m->vocab);
  const int64_t generate = 8;
  // The whole model's rows, tokens chosen alike.
  std::vector<ModelPtr> whole;
  whole.push_back(std::move(m->model));
  std::vector<float> expected = runRanks(whole, prompt, generate, m->vocab);
  for (int64_t ranks : GetParam().ranks) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ThreadGroup group(static_cast<int32_t>(ranks));
    std::vector<ModelPtr> models = loadRanks(*m, ranks, group, format);
    ASSERT_EQ(models.size(), static_cast<size_t>(ranks));
    const attnrt_model_info *info = attnrt_model_get_info(models[1].get());
    EXPECT_EQ(info->tensor_parallel, ranks);
    EXPECT_EQ(info->rank, 1);
    EXPECT_EQ(info->kv_cache_bytes * ranks,
              attnrt_model_get_info(whole[0].get())->kv_cache_bytes);
    std::vector<float> split = runRanks(models, prompt, generate, m->vocab);
    ASSERT_EQ(split.size(), expected.size());
    double error = worstRowError(split, expected, m->vocab);
    if (format == mlir::attn::WeightFormat::F32) {
      EXPECT_LE(error, 1e-5) << "worst row error relative to its largest logit";
    } else {
      // The same blocks, but the all-reduce sums in another order: an
      // int8-quantized activation may round the other way (as against the
      // reference computed alike), so most rows agree to f32 rounding.
      EXPECT_LE(error, kQuantizedTolerance) << "worst row error relative to its largest logit";
      EXPECT_LE(rowErrorQuantile(split, expected, m->vocab, 0.5), kRelativeTolerance)
          << "the median row's error: the split's blocks are not the whole model's";
    }
    std::printf("[ %s, %lld ranks ] worst row error %.3g, median %.3g\n",
                GetParam().model.name.c_str(), static_cast<long long>(ranks), error,
                rowErrorQuantile(split, expected, m->vocab, 0.5));
  }
}

std::vector<SplitCase> splitCases() {
  std::vector<SplitCase> chosen;
  for (const Case &c : cases()) {
    // Every way q/k/v and the MLP are stored (GPT-2's fused Conv1D, Phi-3's
    // fused q|k|v and gate|up, NeoX's per-head q, k, v), biases of each
    // kind (q/k/v, the row-split output and down projections', the
    // vocabulary-split head's), tied and untied heads, windows, post-norm,
    // parallel blocks. (Separate q, k, v: the LLaMA below.)
    if (c.name == "tiny_gpt2" || c.name == "phi3_sharp" || c.name == "gpt_neox_sharp" ||
        c.name == "qwen2_swa_sharp" || c.name == "opt_postln_sharp" ||
        c.name == "gptj_tied_with_head_bias" || c.name == "qwen3_bias_sharp" ||
        c.name == "gemma2_sharp" || c.name == "smollm3_list_sharp")
      chosen.push_back({c, {2}});
  }
  // Longrope's two tables (the 40-token prompt rotates with the long one).
  modelgen::ModelSpec longRope = preset("tiny-phi3-longrope");
  longRope.sharp = true;
  chosen.push_back({{"phi3_longrope_sharp", longRope}, {2}});
  // Four ranks: GPT-2 (4 heads) and a LLaMA with 8 heads over 4 KV heads.
  chosen.front().ranks = {2, 4};
  modelgen::ModelSpec gqa = preset("tiny-llama");
  gqa.heads = 8;
  gqa.kvHeads = 4;
  chosen.push_back({{"llama_gqa_8_over_4", gqa}, {2, 4}});
  // Mixtures of experts, every expert's MLP width split: gpt-oss's
  // sinks (a rank's heads'), interleaved gate|up columns and expert biases
  // (the down bias added once); Qwen3-MoE's dense layers between MoE
  // layers. Quantized, Qwen2-MoE's shared expert and its gate in q8_0 and
  // Mixtral in q4_0, their widths a multiple of 2 blocks of 32 (so that a
  // rank's down projections are quantized too, in the whole model's blocks).
  for (const Case &c : cases()) {
    if (c.name == "gpt_oss_sharp" || c.name == "qwen3_moe_sparse_sharp")
      chosen.push_back({c, {2}});
    if (c.name == "qwen2_moe_sharp") {
      Case aligned = c;
      aligned.spec.moeFfn = 64;
      aligned.spec.sharedExpertFfn = 128;
      aligned.name = "qwen2_moe_q8_0_sharp";
      chosen.push_back({aligned, {2}, mlir::attn::WeightFormat::Q8_0});
    }
    if (c.name == "mixtral_sharp") {
      Case aligned = c;
      aligned.spec.ffn = 128;
      aligned.name = "mixtral_q4_0_sharp";
      chosen.push_back({aligned, {2}, mlir::attn::WeightFormat::Q4_0});
    }
  }
  return chosen;
}

INSTANTIATE_TEST_SUITE_P(Families, ModelE2ETensorParallel, ::testing::ValuesIn(splitCases()),
                         [](const auto &info) { return info.param.model.name; });

// The test above can fail: gathering the vocabulary slices in the wrong
// order moves the logits far past its tolerance.
TEST(ModelE2ETensorParallelPlantedBugs, GatheringInTheWrongOrderIsCaught) {
  std::unique_ptr<CompiledModel> m = prepare(preset("tiny-llama"));
  ASSERT_TRUE(m);
  std::vector<int32_t> prompt = promptTokens(12, m->vocab);
  std::vector<ModelPtr> whole;
  whole.push_back(std::move(m->model));
  std::vector<float> expected = runRanks(whole, prompt, 0, m->vocab);
  ThreadGroup group(2);
  group.reverseGather = true;
  std::vector<ModelPtr> models = loadRanks(*m, 2, group);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_GT(worstRowError(runRanks(models, prompt, 0, m->vocab), expected, m->vocab), 0.1);
}

// What cannot be split is refused when compiling, naming the reason; a
// library of one rank is refused without its group.
TEST(ModelE2ETensorParallelErrors, BadSplitsAndMissingGroups) {
  auto compileError = [](const modelgen::ModelSpec &spec, int64_t ranks) {
    TempDir dir;
    std::string error;
    EXPECT_TRUE(modelgen::writeModel(spec, dir.path, error)) << error;
    llvm::Expected<mlir::attn::ModelConfig> config = mlir::attn::loadModelConfig(dir.path);
    EXPECT_TRUE(static_cast<bool>(config));
    mlir::attn::ModelCompileOptions options;
    options.tensorParallel = ranks;
    options.emit = mlir::attn::EmitKind::Attn;
    options.output = dir.path + "/out.mlir";
    llvm::Error err = mlir::attn::compileModel(*config, options, llvm::nulls());
    return err ? llvm::toString(std::move(err)) : std::string();
  };
  EXPECT_EQ(compileError(preset("tiny-llama"), 3),
            "--tensor-parallel 3: 3 ranks do not divide the attention heads (4)");
  EXPECT_EQ(compileError(preset("tiny-llama"), 4),
            "--tensor-parallel 4: 4 ranks do not divide the key/value heads (2)");
  modelgen::ModelSpec narrow = preset("tiny-gpt2");
  narrow.ffn = 250;
  EXPECT_EQ(compileError(narrow, 4),
            "--tensor-parallel 4: 4 ranks do not divide the MLP width (intermediate size) (250)");
  EXPECT_NE(compileError(preset("tiny-bloom"), 2).find("ALiBi"), std::string::npos);
  modelgen::ModelSpec oddExperts = preset("tiny-qwen3-moe");
  oddExperts.moeFfn = 45;
  EXPECT_EQ(compileError(oddExperts, 2),
            "--tensor-parallel 2: 2 ranks do not divide the experts' MLP width (45)");
  modelgen::ModelSpec oddShared = preset("tiny-qwen2-moe");
  oddShared.sharedExpertFfn = 95;
  EXPECT_EQ(compileError(oddShared, 2),
            "--tensor-parallel 2: 2 ranks do not divide the shared expert's MLP width (95)");

  std::unique_ptr<CompiledModel> m = prepare(preset("tiny-gpt2"));
  ASSERT_TRUE(m);
  ThreadGroup group(2);
  std::vector<ModelPtr> models = loadRanks(*m, 2, group);
  ASSERT_EQ(models.size(), 2u);
  std::string weights = m->dir.path + "/model.safetensors";
  std::string split = m->dir.path + "/libsplit.so";
  char error[512] = "";
  EXPECT_EQ(attnrt_model_load(split.c_str(), weights.c_str(), error, sizeof error), nullptr);
  EXPECT_NE(std::string(error).find("is one rank of a 2-way tensor-parallel split: load it "
                                    "with a communicator of 2 ranks (mpirun -np 2)"),
            std::string::npos)
      << error;
  ThreadGroup four(4);
  EXPECT_EQ(attnrt_model_load_parallel(split.c_str(), weights.c_str(), four.comm(0), error,
                                       sizeof error),
            nullptr);
  EXPECT_NE(std::string(error).find("split but the group has 4 ranks"), std::string::npos)
      << error;
  std::string whole = attnrt_model_library_path(m->model.get());
  EXPECT_EQ(attnrt_model_load_parallel(whole.c_str(), weights.c_str(), group.comm(0), error,
                                       sizeof error),
            nullptr);
  EXPECT_NE(std::string(error).find("is the whole model"), std::string::npos) << error;
}

TEST(ModelE2EInspect, TheFastLibraryCannotInspect) {
  std::unique_ptr<CompiledModel> m = prepare(preset("tiny-llama"));
  ASSERT_TRUE(m);
  EXPECT_EQ(attnrt_model_get_info(m->model.get())->can_inspect, 0);
  char error[512] = "";
  SessionPtr session(attnrt_session_create(m->model.get(), error, sizeof error));
  std::vector<int32_t> prompt = promptTokens(4, m->vocab);
  EXPECT_EQ(attnrt_inspect(session.get(), prompt.data(), 4, nullptr, nullptr, nullptr, nullptr,
                           error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_NE(std::string(error).find("--inspect"), std::string::npos) << error;
  std::vector<float> hidden(attnrt_model_get_info(m->model.get())->hidden_size), logits(m->vocab);
  EXPECT_EQ(attnrt_unembed(session.get(), hidden.data(), 1, logits.data(), error, sizeof error),
            ATTNRT_ERROR_ARGUMENT);
}

// rope_scaling through the whole chain (the config reader, the block
// builder, attn.rope, the runtime): tiny LLaMAs trained for 32 positions
// (8 before yarn's and llama3's scaling) run to position 70, every row
// against the reference, which generates as HF does with a cache.
TEST(ModelE2ERopeScaling, EveryTypePastTheOriginalContext) {
  using Type = modelgen::RopeScaling::Type;
  struct ScalingCase {
    const char *name;
    modelgen::RopeScaling scaling;
  };
  std::vector<ScalingCase> scalings(4);
  scalings[0] = {"linear", {}};
  scalings[0].scaling.type = Type::Linear;
  scalings[0].scaling.factor = 4.0;
  scalings[1] = {"dynamic", {}};
  scalings[1].scaling.type = Type::Dynamic;
  scalings[1].scaling.factor = 2.0;
  scalings[2] = {"yarn", {}};
  scalings[2].scaling.type = Type::Yarn;
  scalings[2].scaling.factor = 4.0;
  scalings[2].scaling.originalMaxPositions = 8;
  scalings[3] = {"llama3", {}};
  scalings[3].scaling.type = Type::Llama3;
  scalings[3].scaling.factor = 8.0;
  scalings[3].scaling.lowFreqFactor = 1.0;
  scalings[3].scaling.highFreqFactor = 4.0;
  scalings[3].scaling.originalMaxPositions = 8;
  // Also through the model description: its scaling object says the same.
  for (bool viaDescription : {false, true}) {
    for (const ScalingCase &c : scalings) {
      SCOPED_TRACE(std::string(c.name) + (viaDescription ? " via description" : ""));
      modelgen::ModelSpec spec = preset("tiny-llama");
      spec.maxPositions = 32;
      spec.ropeScaling = c.scaling;
      std::unique_ptr<CompiledModel> m = prepare(spec, 96, nullptr, viaDescription);
      ASSERT_TRUE(m);
      bool dynamic = c.scaling.type == Type::Dynamic;
      // Within the trained length, then a prompt past it.
      checkGeneration(*m, promptTokens(5, m->vocab), 20, dynamic);
      checkGeneration(*m, promptTokens(40, m->vocab), 30, dynamic);
    }
  }
}

// Phi-3's longrope (tiny-phi3-longrope: trained for 16 positions, 6 rotary
// pairs, sharp): a call whose last position is within 16 rotates with the
// short table, past it with the long one, and a cached decode keeps the keys
// it rotated before, as HF computes it with a cache. So a sequence that
// crosses 16 in decode differs from its recomputation (checked), one that
// starts past 16 does not.
TEST(ModelE2ERopeScaling, LongRopeSwitchesTablesAtTheCallsLastPosition) {
  using mlir::attn::ModelConfig;
  modelgen::ModelSpec spec = preset("tiny-phi3-longrope");
  spec.sharp = true;
  ASSERT_EQ(spec.ropeScaling.originalMaxPositions, 16);
  for (bool viaDescription : {false, true}) {
    SCOPED_TRACE(viaDescription ? "via description" : "from config.json");
    std::unique_ptr<CompiledModel> m = prepare(spec, 0, nullptr, viaDescription);
    ASSERT_TRUE(m);
    EXPECT_STREQ(attnrt_model_warnings(m->model.get()), "");
    checkGeneration(*m, promptTokens(10, m->vocab), 12, /*cachedReference=*/true);
    checkGeneration(*m, promptTokens(16, m->vocab), 4, /*cachedReference=*/true);
    checkGeneration(*m, promptTokens(17, m->vocab), 4, /*cachedReference=*/true);
    checkGeneration(*m, promptTokens(40, m->vocab), 8);
  }

  // Crossing in decode: the first 16 keys stay short-rotated in the cache.
  std::unique_ptr<CompiledModel> m = prepare(spec);
  ASSERT_TRUE(m);
  std::vector<int32_t> tokens = promptTokens(24, m->vocab);
  char error[512] = "";
  SessionPtr session(attnrt_session_create(m->model.get(), error, sizeof error));
  ASSERT_TRUE(session) << error;
  std::vector<float> stepwise(tokens.size() * m->vocab), whole;
  ASSERT_EQ(attnrt_prefill(session.get(), tokens.data(), 10, stepwise.data(), 1, error,
                           sizeof error),
            ATTNRT_OK)
      << error;
  for (size_t i = 10; i < tokens.size(); ++i)
    ASSERT_EQ(attnrt_decode(session.get(), tokens[i], stepwise.data() + i * m->vocab, error,
                            sizeof error),
              ATTNRT_OK)
        << error;
  prefillRows(*m, tokens, whole);
  EXPECT_GT(maxAbs(stepwise.data() + 20 * m->vocab, whole.data() + 20 * m->vocab, m->vocab),
            100 * kLogitTolerance)
      << "the cached keys were rotated again with the long table";

  // Planted bugs, each against the reference's prefill of a prompt that
  // shows it: the switch one position early (16 tokens) or late (17), the
  // tables swapped, the attention factor dropped (40).
  llvm::Expected<ModelConfig> config = mlir::attn::loadModelConfig(m->dir.path);
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  const double factor = mlir::attn::ropeAttentionFactor(config->positions.scaling);
  ASSERT_NEAR(factor, std::sqrt(1.5), 1e-12); // sqrt(1 + ln 4 / ln 16)
  struct Plant {
    const char *bug;
    int64_t promptLength;
    ConfigEdit edit;
  };
  const Plant plants[] = {
      {"switch at >= original", 16,
       [factor](ModelConfig &c) {
         c.positions.scaling.attentionFactor = factor;
         c.positions.scaling.originalMaxPositions -= 1;
       }},
      {"switch one position late", 17,
       [factor](ModelConfig &c) {
         c.positions.scaling.attentionFactor = factor;
         c.positions.scaling.originalMaxPositions += 1;
       }},
      {"short and long tables swapped", 40,
       [](ModelConfig &c) {
         std::swap(c.positions.scaling.shortFactor, c.positions.scaling.longFactor);
       }},
      {"attention factor dropped", 40,
       [](ModelConfig &c) { c.positions.scaling.attentionFactor = 1.0; }},
  };
  for (const Plant &plant : plants) {
    std::unique_ptr<CompiledModel> planted = prepare(spec, 0, plant.edit);
    ASSERT_TRUE(planted) << plant.bug;
    std::vector<int32_t> prompt = promptTokens(plant.promptLength, planted->vocab);
    std::vector<float> logits, expected;
    prefillRows(*planted, prompt, logits);
    if (::testing::Test::HasFatalFailure())
      return;
    std::string message;
    ASSERT_TRUE(planted->forward(std::vector<int64_t>(prompt.begin(), prompt.end()), expected,
                                 message))
        << message;
    EXPECT_GT(maxAbs(logits.data(), expected.data(), logits.size()), 100 * kLogitTolerance)
        << "longrope with " << plant.bug << " still matches the reference";
  }
}

TEST(ModelE2EContext, FullContextAndOverflow) {
  // A context of 24 positions: fill it exactly, then one more is refused.
  std::unique_ptr<CompiledModel> m = prepare(preset("tiny-llama"), 24);
  ASSERT_TRUE(m);
  EXPECT_EQ(attnrt_model_max_seq(m->model.get()), 24);
  checkGeneration(*m, promptTokens(20, m->vocab), 4);
  char error[512] = "";
  SessionPtr session(attnrt_session_create(m->model.get(), error, sizeof error));
  ASSERT_TRUE(session);
  std::vector<int32_t> prompt = promptTokens(24, m->vocab);
  std::vector<float> row(m->vocab);
  ASSERT_EQ(attnrt_prefill(session.get(), prompt.data(), prompt.size(), row.data(),
                           0, error, sizeof error),
            ATTNRT_OK)
      << error;
  EXPECT_EQ(attnrt_decode(session.get(), 1, row.data(), error, sizeof error),
            ATTNRT_ERROR_POSITION);
  EXPECT_NE(std::string(error).find("24"), std::string::npos) << error;
}

} // namespace

TEST(ModelE2EWindow, GeneratesFourWindowsPastThePromptInAWindowOfCache) {
  // tiny-mistral slides a window of 16 keys; in a context of 128 positions
  // its caches are rings of 16 rows. 64 tokens generated past a prompt of
  // 20 wrap each ring four times; every row must still match the reference
  // and recomputation (a ring that dropped or kept one key too many, or
  // rotated keys in the wrong order, would not).
  modelgen::ModelSpec spec = preset("tiny-mistral");
  spec.sharp = true;
  ASSERT_EQ(spec.slidingWindow, 16);
  std::unique_ptr<CompiledModel> m = prepare(spec, 128);
  ASSERT_TRUE(m);
  const attnrt_model_info *info = attnrt_model_get_info(m->model.get());
  ASSERT_TRUE(info);
  EXPECT_EQ(info->max_seq, 128);
  // layers x {k, v} x 16 rows x kv_heads * head_dim x 4 bytes.
  EXPECT_EQ(info->kv_cache_bytes,
            info->num_layers * 2 * 16 * info->num_kv_heads * info->head_dim * 4);
  EXPECT_EQ(info->kv_cache_bytes, 2 * 2 * 16 * 2 * 32 * 4);
  checkGeneration(*m, promptTokens(20, m->vocab), 64);
  // A prompt longer than the window, then as many tokens again.
  checkGeneration(*m, promptTokens(50, m->vocab), 50);

  // Prefill in chunks at later positions: each chunk's first rows attend to
  // keys the ring holds from earlier chunks, in position order.
  std::vector<int32_t> tokens = promptTokens(120, m->vocab);
  const int64_t vocab = m->vocab;
  char error[512] = "";
  SessionPtr whole(attnrt_session_create(m->model.get(), error, sizeof error));
  ASSERT_TRUE(whole) << error;
  std::vector<float> expected(tokens.size() * vocab);
  ASSERT_EQ(attnrt_prefill(whole.get(), tokens.data(), tokens.size(), expected.data(), 1,
                           error, sizeof error),
            ATTNRT_OK)
      << error;
  SessionPtr chunked(attnrt_session_create(m->model.get(), error, sizeof error));
  ASSERT_TRUE(chunked) << error;
  std::vector<float> actual;
  size_t done = 0;
  for (size_t chunk : {7, 9, 1, 15, 16, 17, 3, 40, 12}) {
    std::vector<float> rows(chunk * vocab);
    ASSERT_EQ(attnrt_prefill(chunked.get(), tokens.data() + done, chunk, rows.data(), 1,
                             error, sizeof error),
              ATTNRT_OK)
        << error;
    actual.insert(actual.end(), rows.begin(), rows.end());
    done += chunk;
  }
  ASSERT_EQ(done, tokens.size());
  EXPECT_LE(maxAbs(actual.data(), expected.data(), expected.size()), 1e-5);
}

// The tests above can fail: each family's distinctive feature, removed from
// its description, moves the prompt's logits far past the tolerance.
TEST(ModelE2EPlantedBugs, EachFamilysDistinctiveFeatureMatters) {
  using mlir::attn::ModelConfig;
  struct Plant {
    const char *preset, *bug;
    ConfigEdit edit;
  };
  const Plant plants[] = {
      {"tiny-bloom", "no ALiBi",
       [](ModelConfig &c) { c.positions.kind = mlir::attn::PositionKind::None; }},
      {"tiny-mistral", "window one key too wide",
       [](ModelConfig &c) {
         for (int64_t &window : c.attention.windows)
           window += 1;
       }},
      {"tiny-qwen2-swa", "window on every layer",
       [](ModelConfig &c) {
         for (int64_t &window : c.attention.windows)
           window = 8;
       }},
      {"tiny-opt", "position offset 0",
       [](ModelConfig &c) {
         // The same table (max + 2 rows), read from row 0.
         c.maxPositions += c.positions.offset;
         c.positions.offset = 0;
       }},
      {"tiny-xglm", "position offset 0", [](ModelConfig &c) { c.positions.offset = 0; }},
      {"tiny-xglm", "interleaved sinusoids",
       [](ModelConfig &c) {
         c.positions.sinusoidal = mlir::attn::SinusoidalLayout::Interleaved;
       }},
      {"tiny-gpt_neox", "rotary on all dims", [](ModelConfig &c) { c.positions.rotaryDims = 0; }},
      {"tiny-gpt_neox", "sequential residual", [](ModelConfig &c) { c.block.parallel = false; }},
      {"tiny-gptj", "rotary on all dims", [](ModelConfig &c) { c.positions.rotaryDims = 0; }},
      {"tiny-gptj", "rotate-half pairs",
       [](ModelConfig &c) { c.positions.pairing = mlir::attn::RopePairing::RotateHalf; }},
      {"tiny-phi3-partial", "rotary on all dims",
       [](ModelConfig &c) { c.positions.rotaryDims = 0; }},
      {"tiny-gemma", "no +1 in the norms", [](ModelConfig &c) { c.norm.gainOffset = 0; }},
      {"tiny-gemma", "unscaled embeddings", [](ModelConfig &c) { c.embeddingScale = 1; }},
      {"tiny-qwen2", "no q/k/v biases", [](ModelConfig &c) { c.attention.qkvBias = false; }},
      {"tiny-opt-postln", "pre-norm blocks", [](ModelConfig &c) { c.block.preNorm = true; }},
      // No qk-norm (its gains left unread in the checkpoint), and q's gains
      // on k and k's on q.
      {"tiny-qwen3", "qk-norm skipped",
       [](ModelConfig &c) {
         c.attention.qkNorm = false;
         c.names.ignoredSuffixes.push_back("_norm.weight");
       }},
      {"tiny-qwen3", "q_norm and k_norm swapped",
       [](ModelConfig &c) { std::swap(c.names.queryNorm, c.names.keyNorm); }},
      {"tiny-gemma2", "attention softcap off", [](ModelConfig &c) { c.attention.softcap = 0; }},
      {"tiny-gemma2", "final softcap off", [](ModelConfig &c) { c.logitSoftcap = 0; }},
      {"tiny-gemma2", "scores scaled by head_dim", [](ModelConfig &c) { c.attention.scale = 0; }},
      {"tiny-gemma2", "sandwich output norms dropped",
       [](ModelConfig &c) {
         c.block.outputNorms = false;
         c.names.ignoredSuffixes.push_back("_attention_layernorm.weight");
         c.names.ignoredSuffixes.push_back("post_feedforward_layernorm.weight");
       }},
      {"tiny-gemma3", "local layers given the global base",
       [](ModelConfig &c) { c.positions.localTheta = 0; }},
      {"tiny-gemma3", "qk-norm skipped",
       [](ModelConfig &c) {
         c.attention.qkNorm = false;
         c.names.ignoredSuffixes.push_back("_norm.weight");
       }},
      {"tiny-smollm3", "NoPE layers rotated",
       [](ModelConfig &c) { c.positions.unrotatedLayers.clear(); }},
      {"tiny-smollm3-list", "a RoPE layer left unrotated",
       [](ModelConfig &c) { c.positions.unrotatedLayers.push_back(0); }},
      {"tiny-qwen3-swa", "window on every layer",
       [](ModelConfig &c) {
         for (int64_t &window : c.attention.windows)
           window = 8;
       }},
      // Mixtures of experts: the routing's choices and weights, and which
      // layers are sparse.
      {"tiny-mixtral", "renormalization off", [](ModelConfig &c) { c.moe.normalize = false; }},
      {"tiny-qwen3-moe-sparse", "renormalization on",
       [](ModelConfig &c) { c.moe.normalize = true; }},
      // (With renormalization, as Mixtral's, the two orders are equal.)
      {"tiny-qwen3-moe-sparse", "top-k then softmax",
       [](ModelConfig &c) { c.moe.scoring = mlir::attn::MoeScoring::TopKSoftmax; }},
      {"tiny-mixtral", "one expert fewer per token", [](ModelConfig &c) { c.moe.topK -= 1; }},
      {"tiny-qwen3-moe", "gate and up swapped",
       [](ModelConfig &c) { std::swap(c.names.expertGate, c.names.expertUp); }},
      // Qwen2-MoE's shared expert added whole, its sigmoid gate ignored.
      {"tiny-qwen2-moe", "the shared expert's gate ignored",
       [](ModelConfig &c) {
         c.moe.sharedGate = false;
         c.names.ignoredSuffixes.push_back("shared_expert_gate.weight");
       }},
      // gpt-oss: its sinks, its experts' and router's biases, its clamp.
      {"tiny-gpt-oss", "sinks dropped",
       [](ModelConfig &c) {
         c.attention.sinks = false;
         c.names.ignoredSuffixes.push_back("self_attn.sinks");
       }},
      {"tiny-gpt-oss", "expert biases dropped",
       [](ModelConfig &c) {
         c.moe.expertBias = false;
         c.names.ignoredSuffixes.push_back("proj_bias");
       }},
      {"tiny-gpt-oss", "router bias dropped",
       [](ModelConfig &c) {
         c.moe.routerBias = false;
         c.names.ignoredSuffixes.push_back("router.bias");
       }},
      {"tiny-gpt-oss", "clamp dropped", [](ModelConfig &c) { c.moe.limit = 1e30; }},
      {"tiny-gpt-oss", "softmax then top-k",
       [](ModelConfig &c) { c.moe.scoring = mlir::attn::MoeScoring::SoftmaxTopK; }},
  };
  for (const Plant &plant : plants) {
    modelgen::ModelSpec spec = preset(plant.preset);
    spec.sharp = true;
    std::unique_ptr<CompiledModel> m = prepare(spec, 0, plant.edit);
    ASSERT_TRUE(m) << plant.preset << ": " << plant.bug;
    std::vector<int32_t> prompt = promptTokens(40, m->vocab);
    std::vector<float> logits;
    prefillRows(*m, prompt, logits);
    if (::testing::Test::HasFatalFailure())
      return;
    std::vector<float> expected;
    std::string message;
    ASSERT_TRUE(m->forward(std::vector<int64_t>(prompt.begin(), prompt.end()),
                           expected, message))
        << message;
    EXPECT_GT(maxAbs(logits.data(), expected.data(), logits.size()), 100 * kLogitTolerance)
        << plant.preset << " with " << plant.bug << " still matches the reference";
  }
}

// Every family's description, written as `attn-compile --emit=description`
// writes it and read back, compiles to the model the family reader builds:
// the schema can say everything a family says.
TEST_P(ModelE2E, TheModelDescriptionCompilesToTheSameModel) {
  std::unique_ptr<CompiledModel> m = prepare(GetParam().spec, 0, nullptr, true);
  ASSERT_TRUE(m);
  checkGeneration(*m, promptTokens(40, m->vocab), 4);
}

namespace {

/// The tutorial's decoder (docs/examples/models/tutorial-decoder.json),
/// written out from its definition with the reference's ops and the weight
/// names the file gives: embeddings * sqrt(64) plus interleaved sinusoids,
/// then per block x = LN1(x + attention(x)), x = LN2(x + MLP(x)) with a ReLU
/// MLP, and the tied head on the last block's output (no final norm).
struct TutorialDecoder {
  static constexpr int64_t vocab = 97, d = 64, heads = 4, layers = 2, ffn = 256;
  std::map<std::string, ref::StoredTensor> w;

  const std::vector<float> &at(const std::string &name) const {
    return w.at(name).data;
  }
  bool forward(const std::vector<int64_t> &ids, std::vector<float> &logits,
               std::string &) const {
    const int64_t seq = static_cast<int64_t>(ids.size());
    const double eps = static_cast<double>(1e-5f);
    auto linear = [&](const std::vector<float> &x, const std::string &module,
                      int64_t in, int64_t out) {
      return ref::linear(x, seq, in, at(module + "weight"), out,
                         ref::WeightLayout::OutIn, at(module + "bias").data());
    };
    std::vector<float> x = ref::embedding(at("embed.weight"), vocab, d, ids);
    for (float &value : x)
      value *= 8.0f;
    x = ref::sinusoidalPE(x, seq, d, 10000.0, 0);
    for (int64_t l = 0; l < layers; ++l) {
      std::string p = "blocks." + std::to_string(l) + ".";
      ref::AttentionParams params;
      params.heads = params.kvHeads = heads;
      params.headDim = d / heads;
      params.scale = static_cast<double>(static_cast<float>(ref::defaultScale(d / heads)));
      params.causal = true;
      std::vector<float> a =
          ref::attention(linear(x, p + "attn.q.", d, d), seq, linear(x, p + "attn.k.", d, d),
                         linear(x, p + "attn.v.", d, d), seq, params);
      x = ref::layerNorm(ref::residualAdd(x, linear(a, p + "attn.out.", d, d)), seq, d,
                         at(p + "norm1.weight"), at(p + "norm1.bias"), eps);
      std::vector<float> h = ref::relu(linear(x, p + "ffn.0.", d, ffn));
      x = ref::layerNorm(ref::residualAdd(x, linear(h, p + "ffn.2.", ffn, d)), seq, d,
                         at(p + "norm2.weight"), at(p + "norm2.bias"), eps);
    }
    logits = ref::linear(x, seq, d, at("embed.weight"), vocab, ref::WeightLayout::OutIn);
    return true;
  }
};

const std::string kTutorialDescription =
    std::string(ATTN_SOURCE_DIR) + "/docs/examples/models/tutorial-decoder.json";

/// The tutorial decoder with sharp random weights, compiled (after `edit`)
/// and paired with its hand-written forward.
std::unique_ptr<CompiledModel> prepareTutorial(std::shared_ptr<TutorialDecoder> &decoder,
                                               const ConfigEdit &edit = nullptr) {
  auto compiled = std::make_unique<CompiledModel>();
  modelgen::ModelSpec spec;
  spec.sharp = true;
  std::string error;
  if (!modelgen::writeDescriptionModel(kTutorialDescription, spec, compiled->dir.path,
                                       error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  if (!compileAndLoad(*compiled, 0, edit))
    return nullptr;
  decoder = std::make_shared<TutorialDecoder>();
  if (!ref::readSafetensors(compiled->dir.path + "/model.safetensors", decoder->w, error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  compiled->forward = [decoder](const std::vector<int64_t> &ids, std::vector<float> &logits,
                                std::string &message) {
    return decoder->forward(ids, logits, message);
  };
  return compiled;
}

} // namespace

// transformers 5 saves a MixtralExperts / Qwen3MoeExperts block stacked
// (mlp.experts.gate_up_proj [experts, 2 ffn, hidden], down_proj; Mixtral's
// router renamed mlp.gate): the library compiled from config.json reads
// each expert's projection as its slice there, and computes the logits of
// the per-expert checkpoint holding the same values, bit for bit. A missing
// per-expert tensor names the stacked one it also looked for, and a
// stacked tensor of the wrong shape is named with the shape expected.
TEST(ModelE2EStackedExperts, LoadAsThePerExpertTensors) {
  for (const char *name : {"tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral"}) {
    SCOPED_TRACE(name);
    modelgen::ModelSpec spec = preset(name);
    spec.sharp = true;
    CompiledModel perExpert, stacked;
    std::string error;
    ASSERT_TRUE(modelgen::writeModel(spec, perExpert.dir.path, error)) << error;
    ASSERT_TRUE(compileAndLoad(perExpert, 0, nullptr));
    spec.stackedExperts = true;
    ASSERT_TRUE(modelgen::writeModel(spec, stacked.dir.path, error)) << error;
    char message[512] = "";
    stacked.model.reset(attnrt_model_load((perExpert.dir.path + "/libmodel.so").c_str(),
                                          (stacked.dir.path + "/model.safetensors").c_str(),
                                          message, sizeof message));
    ASSERT_TRUE(stacked.model) << message;
    EXPECT_STREQ(attnrt_model_warnings(stacked.model.get()), "");
    stacked.vocab = perExpert.vocab;
    std::vector<int32_t> prompt = promptTokens(40, perExpert.vocab);
    std::vector<float> expected, logits;
    prefillRows(perExpert, prompt, expected);
    prefillRows(stacked, prompt, logits);
    EXPECT_EQ(logits, expected);
  }

  // The per-expert tiny-mixtral's library, on a checkpoint that lacks one
  // expert's tensor, then on stacked experts one feature narrower.
  modelgen::ModelSpec spec = preset("tiny-mixtral");
  CompiledModel m;
  std::string error;
  ASSERT_TRUE(modelgen::writeModel(spec, m.dir.path, error)) << error;
  ASSERT_TRUE(compileAndLoad(m, 0, nullptr));
  auto loadError = [&](const modelgen::ModelSpec &variant) {
    TempDir dir;
    std::string written;
    EXPECT_TRUE(modelgen::writeModel(variant, dir.path, written)) << written;
    char message[512] = "";
    ModelPtr model(attnrt_model_load((m.dir.path + "/libmodel.so").c_str(),
                                     (dir.path + "/model.safetensors").c_str(), message,
                                     sizeof message));
    EXPECT_FALSE(model);
    return std::string(message);
  };
  modelgen::ModelSpec missing = spec;
  missing.omitTensors = {"model.layers.1.block_sparse_moe.experts.2.w3.weight"};
  std::string message = loadError(missing);
  EXPECT_NE(message.find("missing tensor 'model.layers.1.block_sparse_moe.experts.2.w3.weight' "
                         "required by the model (tried "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("'model.layers.1.mlp.experts.gate_up_proj'"), std::string::npos)
      << message;
  modelgen::ModelSpec narrow = spec;
  narrow.stackedExperts = true;
  narrow.ffn -= 1;
  message = loadError(narrow);
  EXPECT_NE(message.find("tensor 'model.layers.0.mlp.experts.gate_up_proj' (weight "
                         "'model.layers.0.block_sparse_moe.experts.0.w1.weight') has shape "
                         "[4, 190, 64], the model expects [4, 192, 64]"),
            std::string::npos)
      << message;
}

TEST(ModelE2EDescription, TheTutorialDecoderMatchesItsDefinition) {
  std::shared_ptr<TutorialDecoder> decoder;
  std::unique_ptr<CompiledModel> m = prepareTutorial(decoder);
  ASSERT_TRUE(m);
  EXPECT_STREQ(attnrt_model_architecture(m->model.get()), "tutorial-decoder");
  checkGeneration(*m, promptTokens(1, m->vocab), 4);
  checkGeneration(*m, promptTokens(40, m->vocab), 24);
  // Past a 64-key attention block and 2 of the sinusoids' shortest periods.
  checkGeneration(*m, promptTokens(100, m->vocab), 30);
}

TEST(ModelE2EDescription, TheTutorialDecodersFeaturesEachMatter) {
  using mlir::attn::ModelConfig;
  const std::pair<const char *, ConfigEdit> plants[] = {
      {"pre-norm blocks", [](ModelConfig &c) { c.block.preNorm = true; }},
      {"fairseq's sinusoid halves",
       [](ModelConfig &c) { c.positions.sinusoidal = mlir::attn::SinusoidalLayout::Halves; }},
      {"positions from 1", [](ModelConfig &c) { c.positions.offset = 1; }},
      {"unscaled embeddings", [](ModelConfig &c) { c.embeddingScale = 1; }},
      {"GELU for ReLU", [](ModelConfig &c) { c.mlp.kind = mlir::attn::MlpKind::Gelu; }},
  };
  for (const auto &[bug, edit] : plants) {
    std::shared_ptr<TutorialDecoder> decoder;
    std::unique_ptr<CompiledModel> m = prepareTutorial(decoder, edit);
    ASSERT_TRUE(m) << bug;
    std::vector<int32_t> prompt = promptTokens(40, m->vocab);
    std::vector<float> logits, expected;
    prefillRows(*m, prompt, logits);
    if (::testing::Test::HasFatalFailure())
      return;
    std::string message;
    ASSERT_TRUE(m->forward(std::vector<int64_t>(prompt.begin(), prompt.end()), expected,
                           message));
    EXPECT_GT(maxAbs(logits.data(), expected.data(), logits.size()), 100 * kLogitTolerance)
        << "the tutorial decoder with " << bug << " still matches its definition";
  }
}

/// Rounds the reference's copies of the weights the packed buffers hold as
/// `format` stores them (a quantized format's fallback buffers as bf16);
/// returns how many were rounded. Quantized experts are read by
/// attn.moe_experts' reference lowering, which multiplies f32 rows by the
/// dequantized weights: their inputs are not quantized.
int roundPackedSources(CompiledModel &m, mlir::attn::WeightFormat format) {
  llvm::Expected<mlir::attn::ModelConfig> config = mlir::attn::loadModelConfig(m.dir.path);
  if (!config) {
    ADD_FAILURE() << llvm::toString(config.takeError());
    return 0;
  }
  // The library's blocks: two of the host's vectors.
  mlir::attn::ModelLayout layout =
      mlir::attn::planModelLayout(*config, 2 * mlir::attn::hostVectorWidth(), format);
  int rounded = 0;
  for (const mlir::attn::PackedWeight &packed : layout.packed) {
    if (packed.vector || packed.format == mlir::attn::WeightFormat::F32)
      continue;
    for (const mlir::attn::PackedWeight::Source &source : packed.sources) {
      const std::string &weight = layout.weights[source.weight].name;
      bool found = false;
      for (const char *prefix : {"", "model.", "transformer.", "gpt_neox."}) {
        if (found)
          break;
        if (packed.format == mlir::attn::WeightFormat::BF16)
          found = m.reference->roundWeightToBf16(prefix + weight);
        else
          found = m.reference->quantizeWeight(
              prefix + weight, packed.inFeatures, source.outIn,
              packed.format == mlir::attn::WeightFormat::Q8_0 ? ref::QuantFormat::Q8_0
                                                              : ref::QuantFormat::Q4_0,
              source.expert >= 0 ? packed.experts : 1);
      }
      EXPECT_TRUE(found) << weight;
      rounded += found;
    }
  }
  return rounded;
}

// --weight-format bf16: the packed projections (and a tied embedding) hold
// the checkpoint's weights rounded to bf16. The logits equal the reference
// run on the same rounded weights as tightly as f32 equals the plain one
// (the kernels widen bf16 exactly and accumulate in f32), and stay within a
// stated distance of the f32 model's.
TEST(ModelE2EWeightFormats, Bf16MatchesTheReferenceOnRoundedWeights) {
  for (const char *name : {"tiny-llama", "tiny-llama-tied", "tiny-gpt2", "tiny-phi3",
                           "tiny-gpt_neox", "tiny-bloom", "tiny-qwen3", "tiny-gemma2",
                           "tiny-smollm3", "tiny-phi3-longrope", "tiny-qwen3-moe",
                           "tiny-qwen2-moe", "tiny-gpt-oss"}) {
    SCOPED_TRACE(name);
    modelgen::ModelSpec spec = preset(name);
    spec.sharp = true;
    std::unique_ptr<CompiledModel> m =
        prepare(spec, 0, nullptr, false, mlir::attn::WeightFormat::BF16);
    ASSERT_TRUE(m);
    std::vector<int32_t> prompt = promptTokens(40, m->vocab);
    // The f32 reference first, then the same with the packed weights rounded.
    std::vector<float> exact;
    std::string message;
    ASSERT_TRUE(m->forward(std::vector<int64_t>(prompt.begin(), prompt.end()), exact, message));
    EXPECT_GT(roundPackedSources(*m, mlir::attn::WeightFormat::BF16), 0);
    checkGeneration(*m, prompt, 8);
    // Against the f32 model: 0.4% to 2.2% of the largest logit on these sharp
    // tiny models (2026-12-01; tied tiny-llama the most), bounded with room.
    std::vector<float> logits;
    prefillRows(*m, prompt, logits);
    if (::testing::Test::HasFatalFailure())
      return;
    double relative = relativeToMax(logits, exact);
    printf("%s: bf16 vs f32, max |error| / max |logit| = %.3g\n", name, relative);
    // A mixture of experts moves further (5.2% on tiny-qwen3-moe, 14.8% on
    // tiny-gpt-oss, 2 of 6 experts per token): a row whose router is near a
    // tie may pick another expert once rounded.
    bool routed = std::string(name).find("moe") != std::string::npos ||
                  std::string(name) == "tiny-gpt-oss";
    EXPECT_LT(relative, routed ? 0.25 : 5e-2);
    EXPECT_GT(relative, 1e-5) << "the weights were not rounded";
  }
}

// On a CPU with AMX-BF16, bf16 prefill multiplies in AMX tiles: the input
// rows are rounded to bf16 too (as llama.cpp's and oneDNN's AMX kernels
// do), groups of 32 rows (16 for gate and up) run on the tiles and the rows
// left over on the f32 kernel. A 40-token prompt takes both. The logits stay
// within a stated distance of the reference on the rounded weights, and of
// the kernel that widens bf16 exactly, from which they must differ.
TEST(ModelE2EWeightFormats, Bf16AmxPrefillRoundsOnlyTheInputs) {
  if (!mlir::attn::hostHasAmxBf16())
    GTEST_SKIP() << "this CPU (" << mlir::attn::hostCpuName() << ") has no AMX-BF16";
  for (const char *name : {"tiny-llama", "tiny-gpt2", "tiny-phi3"}) {
    SCOPED_TRACE(name);
    modelgen::ModelSpec spec = preset(name);
    spec.sharp = true;
    using mlir::attn::KvFormat;
    using mlir::attn::WeightFormat;
    std::unique_ptr<CompiledModel> amx =
        prepare(spec, 0, nullptr, false, WeightFormat::BF16, KvFormat::F32, false,
                Bf16Prefill::Amx);
    std::unique_ptr<CompiledModel> widened =
        prepare(spec, 0, nullptr, false, WeightFormat::BF16, KvFormat::F32, false,
                Bf16Prefill::Widen);
    ASSERT_TRUE(amx && widened);
    std::vector<int32_t> prompt = promptTokens(40, amx->vocab);
    std::vector<float> tiles, exact;
    prefillRows(*amx, prompt, tiles);
    prefillRows(*widened, prompt, exact);
    if (::testing::Test::HasFatalFailure())
      return;
    // 4.6e-3 to 1.1e-2 of the largest logit (2026-12-02, Sapphire Rapids);
    // the weight's pairs of k rows interleaved the wrong way round: 1.5.
    double relative = relativeToMax(tiles, exact);
    printf("%s: AMX vs widened bf16, max |error| / max |logit| = %.3g\n", name, relative);
    EXPECT_LT(relative, 3e-2);
    EXPECT_GT(relative, 1e-6) << "no row ran on the AMX tiles";
    EXPECT_GT(roundPackedSources(*amx, WeightFormat::BF16), 0);
    checkGeneration(*amx, prompt, 4, false, /*looseTolerance=*/5e-2);
  }
}

// On Zen 4 and 5, bf16 prefill runs vdpbf16ps: the input rows are rounded
// to bf16 as for AMX (chunks of 8 rows or more; a 40-token prompt is one),
// so the logits stay within a stated distance of the kernel that widens
// bf16 exactly, from which they must differ; decode's rows widen.
TEST(ModelE2EWeightFormats, Bf16DotPrefillRoundsOnlyTheInputs) {
  if (!mlir::attn::CpuTarget::host().has("avx512bf16") ||
      mlir::attn::hostVectorWidth() != 16)
    GTEST_SKIP() << "this CPU (" << mlir::attn::hostCpuName() << ") has no AVX-512 BF16";
  for (const char *name : {"tiny-llama"}) { // the other kernels: PackedGemmBf16Dot
    SCOPED_TRACE(name);
    modelgen::ModelSpec spec = preset(name);
    spec.sharp = true;
    using mlir::attn::KvFormat;
    using mlir::attn::WeightFormat;
    std::unique_ptr<CompiledModel> dot = prepare(spec, 0, nullptr, false, WeightFormat::BF16,
                                                 KvFormat::F32, false, Bf16Prefill::Dot);
    std::unique_ptr<CompiledModel> widened = prepare(
        spec, 0, nullptr, false, WeightFormat::BF16, KvFormat::F32, false, Bf16Prefill::Widen);
    ASSERT_TRUE(dot && widened);
    std::vector<int32_t> prompt = promptTokens(40, dot->vocab);
    std::vector<float> paired, exact;
    prefillRows(*dot, prompt, paired);
    prefillRows(*widened, prompt, exact);
    if (::testing::Test::HasFatalFailure())
      return;
    double relative = relativeToMax(paired, exact);
    printf("%s: vdpbf16ps vs widened bf16, max |error| / max |logit| = %.3g\n", name,
           relative);
    EXPECT_LT(relative, 3e-2);
    EXPECT_GT(relative, 1e-6) << "no row ran through vdpbf16ps";
    EXPECT_GT(roundPackedSources(*dot, WeightFormat::BF16), 0);
    checkGeneration(*dot, prompt, 4, false, /*looseTolerance=*/5e-2);
  }
}

/// Checkpoint values on which llama.cpp's rounding is decided by ties:
/// every block of 32 (along the inputs, `in` of them, stored [out, in] or
/// [in, out]) has one value of largest magnitude making its scale d a power
/// of two (q8_0: 127 d, q4_0: -8 d), the others an odd number of half
/// steps, (k + 1/2) d, so that w / d is exactly halfway. roundf (q8_0) and
/// trunc(w / d + 8.5) (q4_0) then differ from rounding to nearest even.
std::vector<float> tiedBlocks(int64_t size, int64_t in, bool outIn, bool q8,
                              uint32_t seed) {
  std::vector<float> w(size);
  const float d = 0x1.0p-7f;
  int64_t out = size / in;
  for (int64_t i = 0; i < size; ++i) {
    seed = seed * 1664525u + 1013904223u;
    int span = q8 ? 252 : 15; // k in [-126, 125] or [-8, 6]
    int value = static_cast<int>((seed >> 12) % span) - (q8 ? 126 : 8);
    w[i] = (static_cast<float>(value) + 0.5f) * d;
  }
  // The extreme value: the first input of each block.
  for (int64_t i = 0; i < size; ++i) {
    int64_t k = outIn ? i % in : i / out;
    if (k % 32 == 0)
      w[i] = (q8 ? ((i / 32) % 2 ? 127.0f : -127.0f) : -8.0f) * d;
  }
  return w;
}

// The compiled model's pack function (attn_model_pack, run by the runtime
// at load) stores q8_0 / q4_0 bytes identical to the scalar reference of
// the format, on weights whose rounding is all ties: a pack that rounds to
// nearest even, or rounds q4_0 instead of truncating, fails here.
TEST(ModelE2EWeightFormats, QuantizedPackingRoundsAsLlamaCpp) {
  if (!mlir::attn::hostHasInt8Dot())
    GTEST_SKIP() << "the q8_0 / q4_0 kernels need AVX2 or AVX-512BW";
  for (mlir::attn::WeightFormat format :
       {mlir::attn::WeightFormat::Q8_0, mlir::attn::WeightFormat::Q4_0}) {
    for (const char *name : {"tiny-llama-tied", "tiny-gpt2", "tiny-phi3"}) {
      std::string label = std::string(name) + " " + mlir::attn::weightFormatName(format);
      SCOPED_TRACE(label);
      const bool q8 = format == mlir::attn::WeightFormat::Q8_0;
      std::unique_ptr<CompiledModel> m = prepare(preset(name), 0, nullptr, false, format);
      ASSERT_TRUE(m);
      llvm::Expected<mlir::attn::ModelConfig> config =
          mlir::attn::loadModelConfig(m->dir.path);
      ASSERT_TRUE(static_cast<bool>(config));
      // The library's blocks: two of the host's vectors.
  mlir::attn::ModelLayout layout =
      mlir::attn::planModelLayout(*config, 2 * mlir::attn::hostVectorWidth(), format);
      void *library = dlopen((m->dir.path + "/libmodel.so").c_str(), RTLD_NOW | RTLD_LOCAL);
      ASSERT_TRUE(library) << dlerror();
      auto pack = reinterpret_cast<int32_t (*)(float *const *, int32_t)>(
          dlsym(library, "attn_model_pack"));
      ASSERT_TRUE(pack);
      // Every weight read as blocks along the inputs of its projection.
      std::vector<std::vector<float>> values(layout.weights.size());
      for (size_t i = 0; i < layout.weights.size(); ++i) {
        int64_t size = 1;
        for (int64_t dim : layout.weights[i].shape)
          size *= dim;
        values[i].assign(size, 0.25f);
      }
      for (const mlir::attn::PackedWeight &packed : layout.packed)
        if (mlir::attn::isQuantized(packed.format))
          for (const mlir::attn::PackedWeight::Source &source : packed.sources)
            values[source.weight] =
                tiedBlocks(static_cast<int64_t>(values[source.weight].size()),
                           packed.inFeatures, source.outIn, q8, 17 + source.weight);
      std::vector<float *> table;
      for (std::vector<float> &weight : values)
        table.push_back(weight.data());
      std::vector<std::vector<uint8_t>> buffers;
      for (const mlir::attn::PackedWeight &packed : layout.packed)
        buffers.emplace_back(packed.bytes() + 64);
      for (std::vector<uint8_t> &buffer : buffers)
        table.push_back(reinterpret_cast<float *>(buffer.data()));
      int checked = 0;
      for (size_t j = 0; j < layout.packed.size(); ++j) {
        const mlir::attn::PackedWeight &packed = layout.packed[j];
        if (!mlir::attn::isQuantized(packed.format))
          continue;
        ASSERT_EQ(pack(table.data(), static_cast<int32_t>(j)), 0) << packed.name;
        // The packed matrix [out, in] from its sources, then the reference's bytes.
        std::vector<float> matrix;
        for (const mlir::attn::PackedWeight::Source &source : packed.sources) {
          const std::vector<float> &w = values[source.weight];
          int64_t stored = static_cast<int64_t>(w.size()) / packed.inFeatures;
          for (int64_t r = 0; r < source.rows; ++r)
            for (int64_t k = 0; k < packed.inFeatures; ++k) {
              int64_t row = source.sourceRow(r);
              matrix.push_back(source.outIn ? w[row * packed.inFeatures + k]
                                            : w[k * stored + row]);
            }
        }
        std::vector<uint8_t> expected =
            ref::packQuantized(matrix, packed.outFeatures, packed.inFeatures,
                               packed.blockSize,
                               q8 ? ref::QuantFormat::Q8_0 : ref::QuantFormat::Q4_0);
        ASSERT_EQ(static_cast<int64_t>(expected.size()), packed.bytes()) << packed.name;
        size_t mismatch = 0;
        while (mismatch < expected.size() && expected[mismatch] == buffers[j][mismatch])
          ++mismatch;
        EXPECT_EQ(mismatch, expected.size())
            << packed.name << ": first differing byte " << mismatch << " (packed "
            << int(buffers[j][mismatch]) << ", reference " << int(expected[mismatch]) << ")";
        ++checked;
      }
      EXPECT_GT(checked, 0);
      dlclose(library);
    }
  }
}

// --weight-format q8_0 / q4_0: the packed projections hold llama.cpp's
// blocks and the kernels multiply int8-quantized inputs. Against the
// reference run the same way (weights rounded through the format by its
// scalar reference, projection inputs quantized per row and block of 32)
// rows agree to f32 rounding (measured 1-3e-7 relative) except those that a
// flip of one activation's rounding reaches (an input off in its last bit
// lands on the other side of a half step: its own row and, through sharp
// attention, some later ones; 0.3-1.1% of the largest logit, in 2 of 12
// cases, at most 25 of 40 rows), far inside the distance to the f32 model
// (q8_0 2-6%, q4_0 15-60% on these sharp random models); a rounding or
// layout bug moves every row. Prompt, decode and recomputation.
TEST(ModelE2EWeightFormats, QuantizedMatchTheReferenceComputedAlike) {
  if (!mlir::attn::hostHasInt8Dot())
    GTEST_SKIP() << "the q8_0 / q4_0 kernels need AVX2 or AVX-512BW";
  for (mlir::attn::WeightFormat format :
       {mlir::attn::WeightFormat::Q8_0, mlir::attn::WeightFormat::Q4_0}) {
    for (const char *name : {"tiny-llama", "tiny-llama-tied", "tiny-gpt2", "tiny-phi3",
                             "tiny-gpt_neox", "tiny-bloom", "tiny-qwen3", "tiny-gemma3",
                             "tiny-smollm3", "tiny-phi3-longrope", "tiny-qwen3-moe",
                             "tiny-qwen2-moe", "tiny-mixtral", "tiny-gpt-oss"}) {
      std::string label = std::string(name) + " " + mlir::attn::weightFormatName(format);
      SCOPED_TRACE(label);
      modelgen::ModelSpec spec = preset(name);
      // SmolLM3's NoPE layer attends so sharply with sharp weights that one
      // input-rounding flip (row 9 of 40) moves every later row by 5-18%:
      // the plain random weights (std 1/sqrt(dim)) test its rounding.
      spec.sharp = std::string(name) != "tiny-smollm3";
      std::unique_ptr<CompiledModel> m = prepare(spec, 0, nullptr, false, format);
      ASSERT_TRUE(m);
      EXPECT_STREQ(attnrt_model_weight_format(m->model.get()),
                   mlir::attn::weightFormatName(format));
      std::vector<int32_t> prompt = promptTokens(40, m->vocab);
      std::vector<int64_t> ids(prompt.begin(), prompt.end());
      std::vector<float> exact, expected, logits;
      std::string message;
      ASSERT_TRUE(m->forward(ids, exact, message));
      EXPECT_GT(roundPackedSources(*m, format), 0);
      ASSERT_TRUE(m->forward(ids, expected, message)) << message;
      prefillRows(*m, prompt, logits);
      if (::testing::Test::HasFatalFailure())
        return;
      double vsReference = relativeToMax(logits, expected);
      double vsF32 = relativeToMax(logits, exact);
      double agreeing = rowErrorQuantile(logits, expected, m->vocab, 0.25);
      printf("%s: max |error| / max |logit| = %.3g (a quarter of the rows within %.3g) "
             "vs the reference computed alike, %.3g vs f32\n",
             label.c_str(), vsReference, agreeing, vsF32);
      EXPECT_LT(vsReference, kQuantizedTolerance);
      EXPECT_LT(agreeing, kRelativeTolerance)
          << "the format's rounding is not what the kernels do";
      EXPECT_GT(rowErrorQuantile(logits, exact, m->vocab, 0.25), 100 * kRelativeTolerance)
          << "the weights were not quantized";
      checkGeneration(*m, prompt, 8, /*cachedReference=*/false, kQuantizedTolerance);
    }
  }
}

// --kv-format bf16 / f16: keys and values are rounded as they are appended
// and every attention reads them back rounded, the new rows' own included
// (a sliding window's ring prefilled in chunks too). The logits equal the
// reference whose cache rounds alike; against the f32 cache they move by
// the rounding, which the planted "no rounding" of a cache held as f32
// would not.
TEST(ModelE2EKvFormats, MatchTheReferenceWithTheCacheRoundedAlike) {
  using mlir::attn::KvFormat;
  for (KvFormat format : {KvFormat::BF16, KvFormat::F16}) {
    // GPT-2 (MHA, learned positions), LLaMA (GQA, RoPE), Mistral (a window of
    // 16 keys: its caches are rings, the prompt longer than the window), BLOOM
    // (ALiBi), Qwen2 with a window on some layers only.
    for (const char *name : {"tiny-gpt2", "tiny-llama", "tiny-mistral", "tiny-bloom",
                             "tiny-qwen2-swa", "tiny-qwen3-swa"}) {
      std::string label = std::string(name) + " " + mlir::attn::kvFormatName(format);
      SCOPED_TRACE(label);
      modelgen::ModelSpec spec = preset(name);
      spec.sharp = true;
      std::unique_ptr<CompiledModel> m =
          prepare(spec, 0, nullptr, false, mlir::attn::WeightFormat::F32, format);
      ASSERT_TRUE(m);
      const attnrt_model_info *info = attnrt_model_get_info(m->model.get());
      ASSERT_TRUE(info);
      llvm::Expected<mlir::attn::ModelConfig> config =
          mlir::attn::loadModelConfig(m->dir.path);
      ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
      EXPECT_EQ(2 * info->kv_cache_bytes,
                mlir::attn::kvCacheBytes(*config, info->max_seq, KvFormat::F32));

      std::vector<int32_t> prompt = promptTokens(40, m->vocab);
      std::vector<int64_t> ids(prompt.begin(), prompt.end());
      std::vector<float> exact, logits;
      std::string message;
      ASSERT_TRUE(m->forward(ids, exact, message)) << message;
      m->reference->setCacheFormat(format == KvFormat::BF16
                                       ? ref::ModelReference::CacheFormat::BF16
                                       : ref::ModelReference::CacheFormat::F16);
      prefillRows(*m, prompt, logits);
      if (::testing::Test::HasFatalFailure())
        return;
      std::vector<float> expected;
      ASSERT_TRUE(m->forward(ids, expected, message)) << message;
      double vsF32 = relativeToMax(logits, exact);
      double vsReference = relativeToMax(logits, expected);
      double medianRow = rowErrorQuantile(logits, expected, m->vocab, 0.5);
      std::vector<double> rowErrors;
      checkGeneration(*m, promptTokens(17, m->vocab), 24, false, kCacheRoundingTolerance,
                      &rowErrors);
      checkGeneration(*m, promptTokens(30, m->vocab), 30, false, kCacheRoundingTolerance,
                      &rowErrors);
      std::sort(rowErrors.begin(), rowErrors.end());
      printf("%s: max |error| / max |logit| = %.3g (median row %.3g) vs the reference "
             "rounding alike, %.3g vs the f32 cache (median row %.3g); generation: "
             "median row %.3g, worst %.3g\n",
             label.c_str(), vsReference, medianRow, vsF32,
             rowErrorQuantile(logits, exact, m->vocab, 0.5), rowErrors[rowErrors.size() / 2],
             rowErrors.back());
      // Most rows see no flip: they agree to f32 rounding (bf16), or to the
      // rounding of f16's 8x finer and so 8x more frequent flips (measured
      // median rows 2-5e-7 with bf16; up to 2.6e-5 with f16 on the RoPE
      // families, whose keys differ from the reference's in their last bits).
      double medianTolerance =
          format == KvFormat::BF16 ? kRelativeTolerance : 10 * kRelativeTolerance;
      EXPECT_LT(medianRow, medianTolerance) << "prefill: not rounded as the reference";
      EXPECT_LT(rowErrors[rowErrors.size() / 2], medianTolerance)
          << "decode: not rounded as the reference";
      EXPECT_LT(vsReference, kCacheRoundingTolerance);
      // The rounding itself moves the rows ten times more.
      EXPECT_GT(rowErrorQuantile(logits, exact, m->vocab, 0.5), 10 * medianRow)
          << "the cache did not round";
      EXPECT_LT(vsF32, 5e-2);
    }
  }
}

// One description of the target decides the vector width, the int8 dot
// product and AMX, as -march names CPUs.
TEST(CpuTarget, NamedCpusDecideTheKernels) {
  struct Expected {
    const char *spec;
    int64_t width;
    const char *int8Dot;
    bool amx;
  };
  for (const Expected &e : std::initializer_list<Expected>{
           {"x86-64-v3", 8, "vpmaddubsw", false},
           {"znver3", 8, "vpmaddubsw", false},
           {"alderlake", 8, "vpdpbusd", false}, // AVX-VNNI
           {"skylake-avx512", 16, "vpmaddubsw", false},
           {"icelake-server", 16, "vpdpbusd", false},
           {"znver4", 16, "vpdpbusd", false},
           {"znver5", 16, "vpdpbusd", false},
           {"sapphirerapids", 16, "vpdpbusd", true},
           {"sapphirerapids,-amx-tile", 16, "vpdpbusd", false},
           {"x86-64-v3,+avxvnni", 8, "vpdpbusd", false},
           {"znver4,-avx512f", 8, "vpmaddubsw", false}, // its VNNI needs AVX-512
           {"znver5,-avx512f", 8, "vpdpbusd", false},  // AVX-VNNI
           {"native,-avx512f,-avxvnni,-amx-tile", 8, "vpmaddubsw", false}}) {
    llvm::Expected<mlir::attn::CpuTarget> target = mlir::attn::CpuTarget::parse(e.spec);
    ASSERT_TRUE(static_cast<bool>(target)) << llvm::toString(target.takeError());
    EXPECT_EQ(target->vectorWidth(), e.width) << e.spec;
    EXPECT_EQ(target->int8Dot(target->vectorWidth()).value_or("").str(),
              std::string(e.int8Dot)) << e.spec;
    EXPECT_EQ(target->amxBf16(), e.amx) << e.spec;
    std::vector<std::string> required = target->requiredFeatures();
    EXPECT_EQ(std::count(required.begin(), required.end(), "avx512f"), e.width == 16)
        << e.spec;
  }
  llvm::Expected<mlir::attn::CpuTarget> bad = mlir::attn::CpuTarget::parse("znver9");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("unknown CPU 'znver9'"), std::string::npos);
}

// The runtime reads CPUID itself: it must see every feature of the table
// that LLVM sees on this host, and no other, or a library compiled here
// would be refused here (or one for a newer CPU run).
TEST(CpuTarget, TheRuntimeSeesTheHostAsTheCompilerDoes) {
  const mlir::attn::CpuTarget &host = mlir::attn::CpuTarget::host();
  std::vector<std::string> required = host.requiredFeatures();
  EXPECT_TRUE(attnrt::missingCpuFeatures(required).empty());
#define ATTN_CHECK_FEATURE(name, leaf, subleaf, reg, bit, state)               \
  EXPECT_EQ(attnrt::hostHasCpuFeature(name), host.has(name)) << name;
  ATTN_MODEL_CPU_FEATURES(ATTN_CHECK_FEATURE)
#undef ATTN_CHECK_FEATURE
}
