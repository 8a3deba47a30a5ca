//===- ModelReferenceTest.cpp - Model writer and reference model tests ----===//
//
// The writer (tools/attn-make-model) and the whole-model reference are
// checked against each other and against things computed independently:
//  - files round-trip through the reader bit for bit, in every dtype;
//  - F16/BF16 rounding on known values and on every 16-bit pattern;
//  - the reference forward equals a second forward written here in plain
//    double arithmetic the way Hugging Face's modeling code reads (HF
//    rotate_half with cat(freqs, freqs), repeat_kv, Conv1D), fed with the
//    writer's values rather than the reader's;
//  - structural invariants: causality, tied vs untied heads, name prefixes
//    and non-weight buffers that must not change anything;
//  - the command lines.
//
//===----------------------------------------------------------------------===//

#include "ModelReference.h"
#include "ModelWriter.h"
#include "Npy.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#ifndef ATTN_TOOLS_DIR
#error "ATTN_TOOLS_DIR must name the directory of attn-ref-model"
#endif

using namespace attn;
namespace fs = std::filesystem;
using modelgen::DType;
using modelgen::Family;
using modelgen::ModelSpec;
using modelgen::TensorDesc;
using ref::ModelReference;

namespace {

using attn::testing::CommandResult;
using attn::testing::run;
/// A fresh folder per test, removed afterwards.
struct TempDir : attn::testing::TempDir {
  TempDir() : attn::testing::TempDir("attn-model-ref") {}
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//


ModelSpec preset(const std::string &name) {
  ModelSpec spec;
  EXPECT_TRUE(modelgen::presetSpec(name, spec)) << name;
  return spec;
}

std::string writeOrDie(const ModelSpec &spec, const std::string &dir) {
  std::string error;
  EXPECT_TRUE(modelgen::writeModel(spec, dir, error)) << error;
  return dir;
}

std::unique_ptr<ModelReference>
loadOrDie(const std::string &dir,
          std::vector<std::string> *warnings = nullptr) {
  std::string error;
  std::unique_ptr<ModelReference> model =
      ModelReference::load(dir, error, warnings);
  EXPECT_TRUE(model) << error;
  return model;
}

std::vector<float> forwardOrDie(const ModelReference &model,
                                const std::vector<int64_t> &tokens) {
  std::vector<float> logits;
  std::string error;
  EXPECT_TRUE(model.forward(tokens, logits, error)) << error;
  return logits;
}

std::vector<int64_t> someTokens(int64_t n, int64_t vocab, int64_t salt = 0) {
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < n; ++i)
    tokens.push_back((i * 37 + 11 + salt * 13) % vocab);
  return tokens;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// The writer's values of every tensor, by name without the prefix.
std::map<std::string, std::vector<float>> writerValues(const ModelSpec &spec) {
  std::vector<TensorDesc> plan;
  std::string error;
  EXPECT_TRUE(modelgen::planTensors(spec, plan, error)) << error;
  std::map<std::string, std::vector<float>> out;
  for (const TensorDesc &t : plan)
    out[t.canonicalName] = modelgen::tensorValues(spec, t);
  return out;
}

int64_t countArgmaxDifferences(const std::vector<float> &a,
                               const std::vector<float> &b, int64_t vocab) {
  int64_t rows = static_cast<int64_t>(a.size()) / vocab, diffs = 0;
  for (int64_t r = 0; r < rows; ++r)
    diffs +=
        ref::argmax(&a[r * vocab], vocab) != ref::argmax(&b[r * vocab], vocab);
  return diffs;
}

//===----------------------------------------------------------------------===//
// An independent forward pass
//===----------------------------------------------------------------------===//
//
// Everything in double, no rounding between ops, written from the HF
// modeling code rather than from Reference.h. The Bugs flags inject the
// mistakes the test models are meant to expose.

struct Bugs {
  bool interleavedRope = false; ///< pair (2i, 2i+1) instead of (i, i+hd/2)
  bool gqaModulo = false;       ///< kv head h % G instead of h / (H / G)
  bool noCausalMask = false;
  bool linearLayoutForConv1D = false; ///< read GPT-2 c_proj as [out, in]
};

using Matrix = std::vector<std::vector<double>>;

Matrix zeros(int64_t rows, int64_t cols) {
  return Matrix(rows, std::vector<double>(cols, 0.0));
}

/// y = x W with W stored [in, out] (inOut) or [out, in].
Matrix matmul(const Matrix &x, const std::vector<float> &w, int64_t in,
              int64_t out, bool inOut, const std::vector<float> *bias) {
  Matrix y = zeros(x.size(), out);
  for (size_t r = 0; r < x.size(); ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? (*bias)[o] : 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += x[r][i] * (inOut ? w[i * out + o] : w[o * in + i]);
      y[r][o] = acc;
    }
  return y;
}

Matrix layerNormRows(const Matrix &x, const std::vector<float> &g,
                     const std::vector<float> &b, double eps) {
  Matrix y = x;
  for (auto &row : y) {
    double mean = 0, var = 0;
    for (double v : row)
      mean += v;
    mean /= row.size();
    for (double v : row)
      var += (v - mean) * (v - mean);
    var /= row.size();
    for (size_t i = 0; i < row.size(); ++i)
      row[i] = (row[i] - mean) / std::sqrt(var + eps) * g[i] + b[i];
  }
  return y;
}

Matrix rmsNormRows(const Matrix &x, const std::vector<float> &g, double eps) {
  Matrix y = x;
  for (auto &row : y) {
    double ms = 0;
    for (double v : row)
      ms += v * v;
    ms /= row.size();
    for (size_t i = 0; i < row.size(); ++i)
      row[i] = row[i] / std::sqrt(ms + eps) * g[i];
  }
  return y;
}

/// Causal attention over [n, heads * hd] q and [n, kvHeads * hd] k, v.
Matrix causalAttention(const Matrix &q, const Matrix &k, const Matrix &v,
                       int64_t heads, int64_t kvHeads, int64_t hd,
                       const Bugs &bugs) {
  int64_t n = q.size();
  Matrix out = zeros(n, heads * hd);
  for (int64_t h = 0; h < heads; ++h) {
    // repeat_kv: kv head g serves query heads [g * rep, (g + 1) * rep).
    int64_t g = bugs.gqaModulo ? h % kvHeads : h / (heads / kvHeads);
    for (int64_t i = 0; i < n; ++i) {
      int64_t last = bugs.noCausalMask ? n - 1 : i;
      std::vector<double> s(last + 1);
      double mx = -1e300;
      for (int64_t j = 0; j <= last; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < hd; ++c)
          dot += q[i][h * hd + c] * k[j][g * hd + c];
        s[j] = dot / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (double &e : s)
        sum += (e = std::exp(e - mx));
      for (int64_t c = 0; c < hd; ++c) {
        double acc = 0;
        for (int64_t j = 0; j <= last; ++j)
          acc += s[j] / sum * v[j][g * hd + c];
        out[i][h * hd + c] = acc;
      }
    }
  }
  return out;
}

std::vector<float> flatten(const Matrix &m) {
  std::vector<float> out;
  for (const auto &row : m)
    for (double v : row)
      out.push_back(static_cast<float>(v));
  return out;
}

std::vector<float> independentGpt2(const ModelSpec &spec,
                                   const std::vector<int64_t> &tokens,
                                   const Bugs &bugs = {}) {
  auto w = writerValues(spec);
  int64_t n = tokens.size(), d = spec.hidden, hd = d / spec.heads;
  int64_t f = modelgen::effectiveFfn(spec);
  double eps = spec.normEps;
  Matrix x = zeros(n, d);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t j = 0; j < d; ++j)
      x[p][j] = double(w["wte.weight"][tokens[p] * d + j]) +
                w["wpe.weight"][p * d + j];
  for (int64_t l = 0; l < spec.layers; ++l) {
    std::string pre = "h." + std::to_string(l) + ".";
    Matrix h =
        layerNormRows(x, w[pre + "ln_1.weight"], w[pre + "ln_1.bias"], eps);
    Matrix qkv = matmul(h, w[pre + "attn.c_attn.weight"], d, 3 * d, true,
                        &w[pre + "attn.c_attn.bias"]);
    Matrix q = zeros(n, d), k = zeros(n, d), v = zeros(n, d);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < d; ++j) {
        q[p][j] = qkv[p][j];
        k[p][j] = qkv[p][d + j];
        v[p][j] = qkv[p][2 * d + j];
      }
    Matrix a = causalAttention(q, k, v, spec.heads, spec.heads, hd, bugs);
    Matrix o =
        matmul(a, w[pre + "attn.c_proj.weight"], d, d,
               !bugs.linearLayoutForConv1D, &w[pre + "attn.c_proj.bias"]);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < d; ++j)
        x[p][j] += o[p][j];
    Matrix h2 =
        layerNormRows(x, w[pre + "ln_2.weight"], w[pre + "ln_2.bias"], eps);
    Matrix fc = matmul(h2, w[pre + "mlp.c_fc.weight"], d, f, true,
                       &w[pre + "mlp.c_fc.bias"]);
    for (auto &row : fc)
      for (double &t : row) // gelu_new
        t = 0.5 * t *
            (1 + std::tanh(std::sqrt(2 / std::acos(-1.0)) *
                           (t + 0.044715 * t * t * t)));
    Matrix m = matmul(fc, w[pre + "mlp.c_proj.weight"], f, d, true,
                      &w[pre + "mlp.c_proj.bias"]);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < d; ++j)
        x[p][j] += m[p][j];
  }
  x = layerNormRows(x, w["ln_f.weight"], w["ln_f.bias"], eps);
  return flatten(matmul(x, w["wte.weight"], d, spec.vocab, false, nullptr));
}

std::vector<float> independentLlama(const ModelSpec &spec,
                                    const std::vector<int64_t> &tokens,
                                    const Bugs &bugs = {}) {
  auto w = writerValues(spec);
  int64_t n = tokens.size(), d = spec.hidden;
  int64_t hd = modelgen::effectiveHeadDim(spec);
  int64_t heads = spec.heads, kvHeads = modelgen::effectiveKvHeads(spec);
  int64_t f = spec.ffn;
  double eps = spec.normEps;

  // HF LlamaRotaryEmbedding: inv_freq[i] = theta^(-2i/hd), emb = cat(freqs,
  // freqs); q' = q cos + rotate_half(q) sin, rotate_half = cat(-x2, x1).
  auto applyRope = [&](Matrix &m, int64_t numHeads) {
    int64_t half = hd / 2;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t h = 0; h < numHeads; ++h) {
        std::vector<double> head(m[p].begin() + h * hd,
                                 m[p].begin() + (h + 1) * hd);
        for (int64_t c = 0; c < hd; ++c) {
          int64_t i = c % half;
          double angle = p * std::pow(spec.ropeTheta, -2.0 * i / hd);
          double rotated;
          if (bugs.interleavedRope) {
            int64_t pair = c / 2;
            angle = p * std::pow(spec.ropeTheta, -2.0 * pair / hd);
            rotated = c % 2 == 0 ? -head[c + 1] : head[c - 1];
          } else {
            rotated = c < half ? -head[c + half] : head[c - half];
          }
          m[p][h * hd + c] =
              head[c] * std::cos(angle) + rotated * std::sin(angle);
        }
      }
  };

  Matrix x = zeros(n, d);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t j = 0; j < d; ++j)
      x[p][j] = w["model.embed_tokens.weight"][tokens[p] * d + j];
  for (int64_t l = 0; l < spec.layers; ++l) {
    std::string pre = "model.layers." + std::to_string(l) + ".";
    Matrix h = rmsNormRows(x, w[pre + "input_layernorm.weight"], eps);
    Matrix q = matmul(h, w[pre + "self_attn.q_proj.weight"], d, heads * hd,
                      false, nullptr);
    Matrix k = matmul(h, w[pre + "self_attn.k_proj.weight"], d, kvHeads * hd,
                      false, nullptr);
    Matrix v = matmul(h, w[pre + "self_attn.v_proj.weight"], d, kvHeads * hd,
                      false, nullptr);
    applyRope(q, heads);
    applyRope(k, kvHeads);
    Matrix a = causalAttention(q, k, v, heads, kvHeads, hd, bugs);
    Matrix o = matmul(a, w[pre + "self_attn.o_proj.weight"], heads * hd, d,
                      false, nullptr);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < d; ++j)
        x[p][j] += o[p][j];
    Matrix h2 = rmsNormRows(x, w[pre + "post_attention_layernorm.weight"], eps);
    Matrix gate =
        matmul(h2, w[pre + "mlp.gate_proj.weight"], d, f, false, nullptr);
    Matrix up = matmul(h2, w[pre + "mlp.up_proj.weight"], d, f, false, nullptr);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < f; ++j)
        gate[p][j] = gate[p][j] / (1 + std::exp(-gate[p][j])) * up[p][j];
    Matrix down =
        matmul(gate, w[pre + "mlp.down_proj.weight"], f, d, false, nullptr);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < d; ++j)
        x[p][j] += down[p][j];
  }
  x = rmsNormRows(x, w["model.norm.weight"], eps);
  const std::vector<float> &head =
      spec.tieEmbeddings ? w["model.embed_tokens.weight"] : w["lm_head.weight"];
  return flatten(matmul(x, head, d, spec.vocab, false, nullptr));
}

/// The reference rounds every op result to float (relative 6e-8) where the
/// independent pass keeps double; through two layers that measured 5e-8 to
/// 1.1e-7 of the largest logit, so 1e-6 leaves a 10x margin. Layout, RoPE,
/// GQA or mask bugs move logits by O(1) of that scale (see BugsAreVisible).
const double kIndependentTolerance = 1e-6;

/// The qwen3 presets as the reference reads them, and --sharp weights that
/// catch its bugs by argmax on the e2e tests' 40-token prompts: RoPE keeps
/// each head's RMS, so a qk-norm applied after RoPE instead of before only
/// differs through how the q_norm / k_norm gains vary across a head. With
/// every gain replaced by its vector's mean (the scale kept, the spread
/// gone) the two orders agree; the argmaxes must then move.
TEST(ModelWriter, Qwen3PresetsCatchTheirBugs) {
  TempDir dir;
  const int64_t n = 40;
  struct Case {
    const char *preset;
    std::vector<bool> sliding;
    bool bias;
  };
  const Case cases[] = {{"tiny-qwen3", {false, false, false}, false},
                        {"tiny-qwen3-swa", {false, true, true}, false},
                        {"tiny-qwen3-bias", {true, false, true}, true}};
  for (const Case &c : cases) {
    ModelSpec spec = preset(c.preset);
    spec.sharp = true;
    std::string path = writeOrDie(spec, dir.sub(c.preset));
    std::vector<std::string> warnings;
    auto model = loadOrDie(path, &warnings);
    ASSERT_TRUE(model) << c.preset;
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    const ref::ModelConfig &config = model->config();
    EXPECT_EQ(config.architecture, ref::Architecture::Qwen3);
    EXPECT_TRUE(config.qkNorm);
    EXPECT_EQ(config.headDim, 32);
    EXPECT_EQ(config.kvHeads, 2);
    EXPECT_EQ(config.ropeTheta, 1e6);
    EXPECT_EQ(config.slidingLayers, c.sliding) << c.preset;
    EXPECT_EQ(config.slidingWindow, c.sliding[1] || c.sliding[0] ? 8 : 0);
    EXPECT_EQ(config.attentionBias, c.bias);
    std::vector<int64_t> tokens = someTokens(n, spec.vocab);
    std::vector<float> good = forwardOrDie(*model, tokens);
    std::vector<float> cached;
    std::string error;
    ASSERT_TRUE(model->forwardCached(tokens, 9, cached, error)) << error;
    EXPECT_EQ(cached, good) << c.preset;

    std::map<std::string, ref::StoredTensor> tensors;
    ASSERT_TRUE(
        ref::readSafetensors(path + "/model.safetensors", tensors, error))
        << error;
    auto variant = [&](ref::ModelConfig changed,
                       const std::function<void(std::vector<float> &)> &edit) {
      std::map<std::string, ref::StoredTensor> t = tensors;
      for (auto &[name, tensor] : t)
        if (name.find("_norm.weight") != std::string::npos &&
            name.find("self_attn.") != std::string::npos)
          edit(tensor.data);
      auto m = ModelReference::create(changed, t, error);
      EXPECT_TRUE(m) << error;
      return forwardOrDie(*m, tokens);
    };
    std::vector<float> flat = variant(config, [](std::vector<float> &g) {
      double mean = 0;
      for (float x : g)
        mean += x / static_cast<double>(g.size());
      std::fill(g.begin(), g.end(), static_cast<float>(mean));
    });
    auto expectFlips = [&](const std::vector<float> &bad, const char *what) {
      int64_t flips = countArgmaxDifferences(good, bad, spec.vocab);
      EXPECT_GE(flips, n / 4) << c.preset << ": " << what;
      RecordProperty(std::string(c.preset) + " " + what,
                     static_cast<int>(flips));
    };
    expectFlips(flat, "gain spread");
    std::vector<float> unit = variant(config, [](std::vector<float> &g) {
      std::fill(g.begin(), g.end(), 1.0f);
    });
    expectFlips(unit, "gain scale");
    if (c.sliding != std::vector<bool>(3, false)) {
      ref::ModelConfig noWindow = config;
      noWindow.slidingLayers.assign(3, false);
      std::vector<float> full = variant(noWindow, [](std::vector<float> &) {});
      // Positions below the window see the same keys either way.
      EXPECT_EQ(std::memcmp(full.data(), good.data(), 8 * spec.vocab * 4), 0);
      expectFlips(full, "window");
    }
  }
}

/// The smollm3 presets as the reference reads them (tied, GQA 4/2,
/// head_dim 16, theta 2e6; NoPE layer 1 by no_rope_layer_interval 2 of
/// three layers, or by the list of four), cached decode bit for bit, and --sharp weights on which
/// each NoPE misreading flips argmaxes on 40-token prompts: the NoPE layer
/// rotated, the first RoPE layer not, the interval applied as i % 2 (the
/// list variant: the list ignored for the interval).
TEST(ModelWriter, SmolLM3PresetsCatchTheirBugs) {
  TempDir dir;
  const int64_t n = 40;
  struct Case {
    const char *preset;
    std::vector<bool> rope, misread;
  };
  const Case cases[] = {
      {"tiny-smollm3", {true, false, true}, {false, true, false}},
      {"tiny-smollm3-list",
       {true, false, true, true},
       {true, true, true, false}},
  };
  for (const Case &c : cases) {
    ModelSpec spec = preset(c.preset);
    spec.sharp = true;
    std::string path = writeOrDie(spec, dir.sub(c.preset));
    std::vector<std::string> warnings;
    auto model = loadOrDie(path, &warnings);
    ASSERT_TRUE(model) << c.preset;
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    const ref::ModelConfig &config = model->config();
    EXPECT_EQ(config.architecture, ref::Architecture::SmolLM3);
    EXPECT_EQ(config.headDim, 16);
    EXPECT_EQ(config.kvHeads, 2);
    EXPECT_EQ(config.ropeTheta, 2e6);
    EXPECT_TRUE(config.tieEmbeddings);
    EXPECT_FALSE(config.attentionBias);
    EXPECT_EQ(config.slidingWindow, 0);
    EXPECT_EQ(config.ropeLayers, c.rope) << c.preset;
    std::vector<int64_t> tokens = someTokens(n, spec.vocab);
    std::vector<float> good = forwardOrDie(*model, tokens);
    std::vector<float> cached;
    std::string error;
    ASSERT_TRUE(model->forwardCached(tokens, 9, cached, error)) << error;
    EXPECT_EQ(cached, good) << c.preset;

    std::map<std::string, ref::StoredTensor> tensors;
    ASSERT_TRUE(
        ref::readSafetensors(path + "/model.safetensors", tensors, error))
        << error;
    auto withRope = [&](const std::vector<bool> &rope) {
      ref::ModelConfig changed = config;
      changed.ropeLayers = rope;
      auto m = ModelReference::create(changed, tensors, error);
      EXPECT_TRUE(m) << error;
      return forwardOrDie(*m, tokens);
    };
    auto expectFlips = [&](const std::vector<bool> &rope, const char *what) {
      int64_t flips = countArgmaxDifferences(good, withRope(rope), spec.vocab);
      EXPECT_GE(flips, n / 4) << c.preset << ": " << what;
      RecordProperty(std::string(c.preset) + " " + what,
                     static_cast<int>(flips));
    };
    expectFlips(std::vector<bool>(c.rope.size(), true), "NoPE layer rotated");
    std::vector<bool> firstUnrotated = c.rope;
    firstUnrotated[0] = false;
    expectFlips(firstUnrotated, "RoPE layer 0 not rotated");
    expectFlips(c.misread, "NoPE layers misplaced");
  }
}

/// The gemma2 and gemma3 presets as the reference reads them, and their
/// --sharp weights catching each feature's bug on 40-token prompts: by
/// argmax, except the final softcap, which is monotonic (argmaxes must stay)
/// and moves the logits instead. tiny-gemma3-mm runs tiny-gemma3's text
/// model bit for bit.
TEST(ModelWriter, Gemma2And3PresetsCatchTheirBugs) {
  TempDir dir;
  const int64_t n = 40;
  std::vector<float> gemma3Logits;
  for (const char *name : {"tiny-gemma2", "tiny-gemma3", "tiny-gemma3-mm"}) {
    ModelSpec spec = preset(name);
    spec.sharp = true;
    const bool g2 = spec.family == Family::Gemma2;
    std::string path = writeOrDie(spec, dir.sub(name));
    std::vector<std::string> warnings;
    auto model = loadOrDie(path, &warnings);
    ASSERT_TRUE(model) << name;
    // The multimodal form: one note that the image part is not used.
    ASSERT_EQ(warnings.size(), spec.multimodal ? 1u : 0u) << warnings.front();
    const ref::ModelConfig &config = model->config();
    EXPECT_EQ(config.architecture,
              g2 ? ref::Architecture::Gemma2 : ref::Architecture::Gemma3);
    EXPECT_EQ(config.multimodal, spec.multimodal);
    EXPECT_EQ(config.headDim, 32);
    EXPECT_EQ(config.queryPreAttnScalar, g2 ? 16.0 : 24.0);
    EXPECT_EQ(config.attnSoftcap, g2 ? 5.0 : 0.0);
    EXPECT_EQ(config.finalSoftcap, g2 ? 3.0 : 0.0);
    EXPECT_EQ(config.slidingWindow, 8);
    const std::vector<bool> sliding =
        g2 ? std::vector<bool>{true, false, true}
           : std::vector<bool>{true, true, false, true, true, false};
    EXPECT_EQ(config.slidingLayers, sliding);
    EXPECT_EQ(config.qkNorm, !g2);
    EXPECT_EQ(config.tieEmbeddings, !g2);
    if (!g2) {
      EXPECT_EQ(config.ropeTheta, 1e6);
      EXPECT_EQ(config.localRopeTheta, 1e4);
      EXPECT_EQ(config.ropeScaling.type, ref::RopeScaling::Type::Linear);
      EXPECT_EQ(config.localRopeScaling.type, ref::RopeScaling::Type::None);
    }
    std::vector<int64_t> tokens = someTokens(n, spec.vocab);
    std::vector<float> good = forwardOrDie(*model, tokens);
    std::vector<float> cached;
    std::string error;
    ASSERT_TRUE(model->forwardCached(tokens, 9, cached, error)) << error;
    EXPECT_EQ(cached, good) << name;
    if (!g2 && gemma3Logits.empty())
      gemma3Logits = good;
    else if (!g2)
      EXPECT_EQ(good, gemma3Logits) << "the multimodal form's text model";

    std::map<std::string, ref::StoredTensor> tensors;
    ASSERT_TRUE(
        ref::readSafetensors(path + "/model.safetensors", tensors, error))
        << error;
    // The model with a changed config, and its q/k norm gains edited.
    auto variant = [&](const std::function<void(ref::ModelConfig &)> &change,
                       const std::function<void(std::vector<float> &)> &edit =
                           nullptr) {
      ref::ModelConfig changed = config;
      change(changed);
      std::map<std::string, ref::StoredTensor> t = tensors;
      if (edit)
        for (auto &[tensorName, tensor] : t)
          if (tensorName.find("self_attn.q_norm.weight") != std::string::npos ||
              tensorName.find("self_attn.k_norm.weight") != std::string::npos)
            edit(tensor.data);
      auto m = ModelReference::create(changed, t, error);
      EXPECT_TRUE(m) << error;
      return forwardOrDie(*m, tokens);
    };
    auto expectFlips = [&](const std::vector<float> &bad, const char *what,
                           int64_t atLeast = n / 4) {
      int64_t flips = countArgmaxDifferences(good, bad, spec.vocab);
      EXPECT_GE(flips, atLeast) << name << ": " << what;
      RecordProperty(std::string(name) + " " + what, static_cast<int>(flips));
    };
    // A wrong scale is a softmax temperature the softcap partly absorbs.
    expectFlips(variant([](ref::ModelConfig &c) { c.queryPreAttnScalar = 0; }),
                "query_pre_attn_scalar ignored", n / 8);
    expectFlips(variant([](ref::ModelConfig &c) {
                  c.slidingLayers.assign(c.layers, false);
                }),
                "no window");
    expectFlips(variant([](ref::ModelConfig &c) {
                  for (int64_t i = 0; i < c.layers; ++i) // i % p, not i + 1
                    c.slidingLayers[i] = i % (c.layers == 3 ? 2 : 3) != 0;
                }),
                "windows on the wrong layers");
    if (g2) {
      expectFlips(variant([](ref::ModelConfig &c) { c.attnSoftcap = 0; }),
                  "attention softcap off");
      std::vector<float> uncapped =
          variant([](ref::ModelConfig &c) { c.finalSoftcap = 0; });
      EXPECT_EQ(countArgmaxDifferences(good, uncapped, spec.vocab), 0);
      double moved = ref::maxRelError(good, uncapped);
      EXPECT_GT(moved, 0.1) << "final softcap off";
      RecordProperty("tiny-gemma2 final softcap off (max rel)",
                     std::to_string(moved));
      continue;
    }
    expectFlips(variant([](ref::ModelConfig &c) {
                  c.localRopeTheta = c.ropeTheta;
                  c.localRopeScaling = c.ropeScaling;
                }),
                "local layers with the global RoPE");
    expectFlips(variant([](ref::ModelConfig &c) {
                  c.ropeScaling = ref::RopeScaling();
                }),
                "global RoPE unscaled");
    expectFlips(variant([](ref::ModelConfig &c) { c.qkNorm = false; },
                        [](std::vector<float> &) {}),
                "qk-norm skipped");
    // RoPE keeps each head's RMS: with every (1 + w) made its mean, a
    // qk-norm after RoPE equals one before; the argmaxes must then move.
    expectFlips(variant([](ref::ModelConfig &) {},
                        [](std::vector<float> &g) {
                          double mean = 0;
                          for (float x : g)
                            mean += x / static_cast<double>(g.size());
                          std::fill(g.begin(), g.end(),
                                    static_cast<float>(mean));
                        }),
                "qk-norm gain spread");
  }
}

/// tiny-phi3-longrope as the reference reads it (phi3, 12 of 16 dims
/// rotating, longrope with original 16 of 64, the writer's tables, factor
/// 4 from the ratio: attention factor sqrt(1.5)), HF's per-call table in
/// cached decode across the switch, and --sharp weights on which each
/// longrope misreading flips argmaxes on the e2e tests' 40-token prompts
/// (the switch at >= flips the 16-token prompt that ends at the original).
TEST(ModelWriter, Phi3LongRopePresetCatchesItsBugs) {
  TempDir dir;
  const int64_t n = 40;
  ModelSpec spec = preset("tiny-phi3-longrope");
  spec.sharp = true;
  std::string path = writeOrDie(spec, dir.sub("lr"));
  std::vector<std::string> warnings;
  auto model = loadOrDie(path, &warnings);
  ASSERT_TRUE(model);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const ref::ModelConfig &config = model->config();
  EXPECT_EQ(config.architecture, ref::Architecture::Phi3);
  EXPECT_EQ(config.headDim, 16);
  EXPECT_EQ(config.rotaryDim, 12);
  EXPECT_EQ(config.maxPositions, 64);
  const ref::RopeScaling &sc = config.ropeScaling;
  ASSERT_EQ(sc.type, ref::RopeScaling::Type::LongRope);
  EXPECT_EQ(sc.originalMaxPositions, 16);
  EXPECT_EQ(sc.factor, 4.0);
  EXPECT_TRUE(std::isnan(sc.attentionFactor));
  std::vector<double> shortF, longF;
  modelgen::effectiveLongRopeFactors(spec, shortF, longF);
  EXPECT_EQ(sc.shortFactor, shortF);
  EXPECT_EQ(sc.longFactor, longF);
  double af = 0;
  ref::ropeScaledFrequencies(config.ropeTheta, 12, sc, 17, af);
  EXPECT_NEAR(af, std::sqrt(1.5), 1e-15);

  std::vector<int64_t> tokens = someTokens(n, spec.vocab);
  std::vector<int64_t> first16(tokens.begin(), tokens.begin() + 16);
  std::vector<float> good = forwardOrDie(*model, tokens);
  std::vector<float> good16 = forwardOrDie(*model, first16);
  std::string error;
  std::vector<float> cached;
  ASSERT_TRUE(model->forwardCached(tokens, 9, cached, error)) << error;
  // Calls ending at 16 or before: the short table, a forward of 16 tokens.
  EXPECT_EQ(std::memcmp(cached.data(), good16.data(), good16.size() * 4), 0);
  // Later calls: long queries against the short keys cached before.
  int64_t cachedFlips = countArgmaxDifferences(cached, good, spec.vocab);
  EXPECT_GE(cachedFlips, 1);
  RecordProperty("cached across the switch vs one forward",
                 static_cast<int>(cachedFlips));
  std::vector<float> cached16;
  ASSERT_TRUE(model->forwardCached(first16, 5, cached16, error)) << error;
  EXPECT_EQ(cached16, good16) << "within the original length";

  std::map<std::string, ref::StoredTensor> tensors;
  ASSERT_TRUE(ref::readSafetensors(path + "/model.safetensors", tensors, error))
      << error;
  auto variant = [&](const std::function<void(ref::RopeScaling &)> &change,
                     const std::vector<int64_t> &input) {
    ref::ModelConfig changed = config;
    change(changed.ropeScaling);
    auto m = ModelReference::create(changed, tensors, error);
    EXPECT_TRUE(m) << error;
    return forwardOrDie(*m, input);
  };
  // The default attention factor is sqrt(1.5): giving it changes nothing.
  EXPECT_EQ(variant([](ref::RopeScaling &r) { r.attentionFactor = std::sqrt(1.5); },
                    tokens),
            good);
  auto expectFlips = [&](const std::vector<float> &bad,
                         const std::vector<float> &ok, const char *what,
                         int64_t atLeast) {
    int64_t flips = countArgmaxDifferences(ok, bad, spec.vocab);
    EXPECT_GE(flips, atLeast) << what;
    RecordProperty(std::string("tiny-phi3-longrope ") + what,
                   static_cast<int>(flips));
    std::printf("  %s: %lld of %zu argmaxes flip\n", what,
                static_cast<long long>(flips), ok.size() / spec.vocab);
  };
  expectFlips(variant([](ref::RopeScaling &r) { std::swap(r.shortFactor, r.longFactor); },
                      tokens),
              good, "short and long swapped", n / 5); // measured 10
  expectFlips(variant([](ref::RopeScaling &r) { r.attentionFactor = 1.0; },
                      tokens),
              good, "attention factor left out", n / 4);
  // Switching at L >= 16 (original 15, the attention factor kept).
  expectFlips(variant(
                  [](ref::RopeScaling &r) {
                    r.originalMaxPositions = 15;
                    r.attentionFactor = std::sqrt(1.5);
                  },
                  first16),
              good16, "long at L >= original (16 tokens)", 3); // measured 4
  expectFlips(variant([](ref::RopeScaling &r) { r.longFactor = r.shortFactor; },
                      tokens),
              good, "short table past the original", n / 5); // measured 10
}

//===----------------------------------------------------------------------===//
// The writer
//===----------------------------------------------------------------------===//

TEST(ModelWriter, PresetsAreValid) {
  for (const std::string &name : modelgen::presetNames()) {
    ModelSpec spec = preset(name);
    EXPECT_EQ(modelgen::validateSpec(spec), "") << name;
  }
  ModelSpec spec;
  EXPECT_FALSE(modelgen::presetSpec("tiny-bert", spec));

  ModelSpec g = preset("tiny-gpt2");
  EXPECT_EQ(g.family, Family::GPT2);
  EXPECT_EQ(g.layers, 2);
  EXPECT_EQ(g.hidden, 64);
  EXPECT_EQ(g.heads, 4);
  EXPECT_EQ(g.ffn, 0); // n_inner null
  EXPECT_EQ(g.vocab, 97);
  EXPECT_EQ(g.maxPositions, 64);
  ModelSpec l = preset("tiny-llama");
  EXPECT_EQ(modelgen::effectiveKvHeads(l), 2);
  EXPECT_EQ(l.ffn, 172);
  EXPECT_EQ(l.vocab, 101);
  EXPECT_FALSE(l.tieEmbeddings);
  ModelSpec t = preset("tiny-llama-tied");
  EXPECT_EQ(modelgen::effectiveKvHeads(t), 1);
  EXPECT_TRUE(t.tieEmbeddings);
  ModelSpec s = preset("gpt2-small");
  EXPECT_EQ(s.layers * s.hidden * s.heads, 12 * 768 * 12);
  EXPECT_EQ(s.vocab, 50257);
  EXPECT_EQ(s.maxPositions, 1024);
  ModelSpec m = preset("llama-110m");
  EXPECT_EQ(m.layers * m.hidden * m.heads, 12 * 768 * 12);
  EXPECT_EQ(modelgen::effectiveKvHeads(m), 12);
  EXPECT_EQ(m.ffn, 2048);
  EXPECT_EQ(m.vocab, 32000);
  EXPECT_EQ(m.maxPositions, 1024);
  EXPECT_FALSE(m.tieEmbeddings);
}

TEST(ModelWriter, InvalidSpecsAreOneLineErrors) {
  struct Case {
    std::string preset;
    std::function<void(ModelSpec &)> edit;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"tiny-llama", [](ModelSpec &s) { s.kvHeads = 3; },
       "kv heads (3) must divide heads (4)"},
      {"tiny-llama", [](ModelSpec &s) { s.headDim = 7; },
       "head dim (7) must be even"},
      {"tiny-llama", [](ModelSpec &s) { s.prefix = "transformer."; },
       "prefix applies only to gpt2"},
      {"tiny-gpt2", [](ModelSpec &s) { s.heads = 5; },
       "heads (5) must divide the hidden size (64)"},
      {"tiny-gpt2", [](ModelSpec &s) { s.kvHeads = 2; },
       "gpt2 has no grouped-query attention"},
      {"tiny-gpt2", [](ModelSpec &s) { s.activation = "relu"; },
       "unsupported gpt2 activation_function 'relu'"},
      {"tiny-gpt2", [](ModelSpec &s) { s.layers = 0; },
       "layers must be in [1, "},
      {"tiny-gpt2", [](ModelSpec &s) { s.omitTensors = {"h.9.ln_1.weight"}; },
       "cannot omit 'h.9.ln_1.weight'"},
      {"tiny-gpt2", [](ModelSpec &s) { s.extraTensors = {"wte.weight"}; },
       "extra tensor 'wte.weight' is already in the model"},
  };
  TempDir dir;
  for (const Case &c : cases) {
    ModelSpec spec = preset(c.preset);
    c.edit(spec);
    std::string error;
    EXPECT_FALSE(modelgen::writeModel(spec, dir.sub("m"), error));
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "error: " << error << "\nexpected: " << c.expected;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_FALSE(fs::exists(dir.sub("m/model.safetensors")));
}

TEST(ModelWriter, SafetensorsLayout) {
  TempDir dir;
  ModelSpec spec = preset("tiny-gpt2");
  spec.extraBuffers = true;
  writeOrDie(spec, dir.sub("m"));
  std::string bytes = readFile(dir.sub("m/model.safetensors"));
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ((8 + n) % 8, 0u);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.rfind("{\"__metadata__\":{\"format\":\"pt\"},", 0), 0u);
  size_t close = header.find_last_not_of(' ');
  EXPECT_EQ(header[close], '}');
  EXPECT_LT(header.size() - close - 1, 8u) << "pads with at most 7 spaces";

  std::string error;
  auto file = ref::SafetensorsFile::open(dir.sub("m/model.safetensors"), error);
  ASSERT_TRUE(file) << error;
  std::vector<TensorDesc> plan;
  ASSERT_TRUE(modelgen::planTensors(spec, plan, error)) << error;
  ASSERT_EQ(file->entries().size(), plan.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto &e = file->entries()[i];
    EXPECT_EQ(e.name, plan[i].name) << "header order is plan order";
    EXPECT_EQ(e.shape, plan[i].shape) << e.name;
    EXPECT_EQ(e.begin, offset) << e.name << ": tensors back to back";
    offset = e.end;
  }
  EXPECT_EQ(8 + n + offset, bytes.size()) << "no trailing bytes";

  // The non-weight buffers: the causal mask and the scalar masked_bias.
  std::map<std::string, ref::StoredTensor> tensors;
  ASSERT_TRUE(
      ref::readSafetensors(dir.sub("m/model.safetensors"), tensors, error))
      << error;
  const ref::StoredTensor &mask = tensors.at("h.1.attn.bias");
  EXPECT_EQ(mask.shape, (std::vector<int64_t>{1, 1, 64, 64}));
  EXPECT_EQ(mask.data[0 * 64 + 0], 1.0f);
  EXPECT_EQ(mask.data[5 * 64 + 5], 1.0f);
  EXPECT_EQ(mask.data[5 * 64 + 4], 1.0f);
  EXPECT_EQ(mask.data[5 * 64 + 6], 0.0f);
  const ref::StoredTensor &masked = tensors.at("h.0.attn.masked_bias");
  EXPECT_TRUE(masked.shape.empty());
  EXPECT_EQ(masked.data, std::vector<float>{-1e4f});
}

TEST(ModelWriter, RoundTripsThroughTheReader) {
  TempDir dir;
  for (const char *name : {"tiny-gpt2", "tiny-llama", "tiny-llama-tied"}) {
    ModelSpec spec = preset(name);
    spec.extraBuffers = true;
    spec.seed = 7;
    std::string path = writeOrDie(spec, dir.sub(name));
    std::map<std::string, ref::StoredTensor> tensors;
    std::string error;
    ASSERT_TRUE(
        ref::readSafetensors(path + "/model.safetensors", tensors, error))
        << error;
    std::vector<TensorDesc> plan;
    ASSERT_TRUE(modelgen::planTensors(spec, plan, error)) << error;
    EXPECT_EQ(tensors.size(), plan.size()) << name;
    for (const TensorDesc &t : plan) {
      auto it = tensors.find(t.name);
      ASSERT_NE(it, tensors.end()) << name << ": " << t.name;
      EXPECT_EQ(it->second.dtype, "F32");
      EXPECT_EQ(it->second.shape, t.shape) << t.name;
      std::vector<float> expected = modelgen::tensorValues(spec, t);
      ASSERT_EQ(it->second.data.size(), expected.size()) << t.name;
      EXPECT_EQ(std::memcmp(it->second.data.data(), expected.data(),
                            expected.size() * 4),
                0)
          << t.name << " differs";
    }
    bool untied = spec.family == Family::Llama && !spec.tieEmbeddings;
    EXPECT_EQ(tensors.count("lm_head.weight"), untied ? 1u : 0u) << name;
  }
}

TEST(ModelWriter, ConfigMatchesTheReadersLayout) {
  TempDir dir;
  std::vector<ModelSpec> specs = {preset("tiny-gpt2"), preset("tiny-llama"),
                                  preset("tiny-llama-tied")};
  ModelSpec custom = preset("tiny-llama");
  custom.headDim = 8; // 4 heads x 8 != hidden 64: q_proj is [32, 64]
  custom.ropeTheta = 500000.0;
  custom.normEps = 1e-6;
  specs.push_back(custom);
  ModelSpec inner = preset("tiny-gpt2");
  inner.ffn = 100;
  inner.activation = "gelu";
  specs.push_back(inner);
  for (size_t i = 0; i < specs.size(); ++i) {
    const ModelSpec &spec = specs[i];
    std::string path = writeOrDie(spec, dir.sub(std::to_string(i)));
    ref::ModelConfig config;
    std::string error;
    ASSERT_TRUE(ref::loadModelConfig(path + "/config.json", config, error))
        << error;
    bool gpt2 = spec.family == Family::GPT2;
    EXPECT_EQ(config.architecture,
              gpt2 ? ref::Architecture::GPT2 : ref::Architecture::Llama);
    EXPECT_EQ(config.layers, spec.layers);
    EXPECT_EQ(config.hidden, spec.hidden);
    EXPECT_EQ(config.heads, spec.heads);
    EXPECT_EQ(config.kvHeads, modelgen::effectiveKvHeads(spec));
    EXPECT_EQ(config.headDim, modelgen::effectiveHeadDim(spec));
    EXPECT_EQ(config.ffn, modelgen::effectiveFfn(spec));
    EXPECT_EQ(config.vocab, spec.vocab);
    EXPECT_EQ(config.maxPositions, spec.maxPositions);
    EXPECT_EQ(config.normEps, spec.normEps) << "shortest round-trip digits";
    if (!gpt2) {
      EXPECT_EQ(config.ropeTheta, spec.ropeTheta);
      EXPECT_EQ(config.tieEmbeddings, spec.tieEmbeddings);
    }
    if (gpt2)
      EXPECT_EQ(config.gelu, spec.activation == "gelu"
                                 ? ref::GeluApproximation::Erf
                                 : ref::GeluApproximation::Tanh);

    // The writer and the reader agree on every name and shape.
    std::vector<TensorDesc> plan;
    ASSERT_TRUE(modelgen::planTensors(spec, plan, error));
    auto expected = ModelReference::expectedWeights(config);
    ASSERT_EQ(plan.size(), expected.size());
    for (size_t j = 0; j < plan.size(); ++j) {
      EXPECT_EQ(plan[j].canonicalName, expected[j].first);
      EXPECT_EQ(plan[j].shape, expected[j].second) << expected[j].first;
    }
  }
  std::string gpt2Config = readFile(dir.sub("0/config.json"));
  EXPECT_NE(gpt2Config.find("\"n_inner\": null"), std::string::npos);
  EXPECT_NE(gpt2Config.find("\"architectures\": [\"GPT2LMHeadModel\"]"),
            std::string::npos);
  EXPECT_NE(gpt2Config.find("\"activation_function\": \"gelu_new\""),
            std::string::npos);
  std::string llamaConfig = readFile(dir.sub("1/config.json"));
  EXPECT_NE(llamaConfig.find("\"rope_theta\": 10000.0"), std::string::npos);
  EXPECT_EQ(llamaConfig.find("head_dim"), std::string::npos)
      << "head_dim only when asked";
  EXPECT_NE(readFile(dir.sub("3/config.json")).find("\"head_dim\": 8"),
            std::string::npos);
}

TEST(ModelWriter, Deterministic) {
  TempDir dir;
  ModelSpec spec = preset("tiny-llama");
  writeOrDie(spec, dir.sub("a"));
  writeOrDie(spec, dir.sub("b"));
  spec.seed = 1;
  writeOrDie(spec, dir.sub("c"));
  std::string a = readFile(dir.sub("a/model.safetensors"));
  EXPECT_EQ(a, readFile(dir.sub("b/model.safetensors")));
  EXPECT_NE(a, readFile(dir.sub("c/model.safetensors")));

  // Pinned values: the generator uses no libm transcendental and no
  // <random> distribution, so these hold on every platform. A change here
  // changes every generated model.
  std::vector<double> z = modelgen::standardNormals(1, 4);
  const double pinned[4] = {-0x1.aa5d15d61bbdep-1, -0x1.b868742fbcb4p-4,
                            -0x1.a277e54872b5p-1, 0x1.5457e1365c059p-1};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(z[i], pinned[i]) << i << ": " << std::hexfloat << z[i];
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : a)
    h = (h ^ c) * 0x100000001B3ull;
  EXPECT_EQ(h, 5879319043756680981ull) << "tiny-llama seed 0 model.safetensors";
}

TEST(ModelWriter, ValuesFollowTheStatedScales) {
  std::vector<double> z = modelgen::standardNormals(42, 200000);
  double mean = 0, var = 0, tail = 0;
  for (double v : z)
    mean += v;
  mean /= z.size();
  for (double v : z) {
    var += (v - mean) * (v - mean);
    tail += std::fabs(v) > 3.0;
  }
  var /= z.size();
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(tail / z.size(), 0.0027, 0.0006) << "normal tails";

  ModelSpec spec = preset("llama-110m");
  spec.layers = 1; // only the plan is used, never written
  std::vector<TensorDesc> plan;
  std::string error;
  ASSERT_TRUE(modelgen::planTensors(spec, plan, error));
  auto stats = [&](const std::string &name, double &m, double &sd) {
    auto it = std::find_if(plan.begin(), plan.end(),
                           [&](const TensorDesc &t) { return t.name == name; });
    ASSERT_NE(it, plan.end()) << name;
    std::vector<float> v = modelgen::tensorValues(spec, *it);
    m = 0, sd = 0;
    for (float x : v)
      m += x;
    m /= v.size();
    for (float x : v)
      sd += (x - m) * (x - m);
    sd = std::sqrt(sd / v.size());
  };
  double m, sd;
  stats("model.layers.0.self_attn.q_proj.weight", m, sd);
  EXPECT_NEAR(sd, 1.0 / std::sqrt(768.0), 0.01 / std::sqrt(768.0));
  stats("model.layers.0.mlp.down_proj.weight", m, sd);
  EXPECT_NEAR(sd, 1.0 / std::sqrt(2048.0), 0.01 / std::sqrt(2048.0));
  stats("model.embed_tokens.weight", m, sd);
  EXPECT_NEAR(sd, 1.0, 0.01);
  stats("model.layers.0.input_layernorm.weight", m, sd);
  EXPECT_NEAR(m, 1.0, 0.02);
  EXPECT_NEAR(sd, 0.1, 0.02);
}

TEST(ModelWriter, Float16RoundingOnKnownValues) {
  using modelgen::floatToHalf;
  struct Case {
    float in;
    uint16_t out;
  };
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3C00},
      {-2.0f, 0xC000},
      {0.5f, 0x3800},
      {65504.0f, 0x7BFF},                     // largest finite
      {65519.99f, 0x7BFF},                    // below the rounding boundary
      {65520.0f, 0x7C00},                     // halfway to 2^16: ties to inf
      {1e10f, 0x7C00},                        // overflow
      {1.0f / 3.0f, 0x3555},                  // 0.333251953125
      {0.1f, 0x2E66},                         // 0.0999755859375
      {std::ldexp(1.0f, -14), 0x0400},        // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},        // smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},        // halfway to it: ties to even 0
      {std::ldexp(1.5f, -25), 0x0001},        // above halfway
      {std::ldexp(3.0f, -25), 0x0002},        // 1.5 units: ties to even 2
      {std::ldexp(5.0f, -25), 0x0002},        // 2.5 units: ties to even 2
      {std::ldexp(1023.5f, -24), 0x0400},     // rounds up into the normals
      {1.0f + std::ldexp(1.0f, -11), 0x3C00}, // tie between 1 and next: even
      {1.0f + std::ldexp(3.0f, -11), 0x3C02}, // tie: up to even
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3C01},
      {2049.0f, 0x6800}, // 2048 + 1: ties to even 2048
      {2051.0f, 0x6802}, // 2050 + 1: ties to even 2052
      {std::numeric_limits<float>::infinity(), 0x7C00},
      {-std::numeric_limits<float>::infinity(), 0xFC00},
      {std::numeric_limits<float>::denorm_min(), 0x0000},
  };
  for (const Case &c : cases)
    EXPECT_EQ(floatToHalf(c.in), c.out)
        << std::hexfloat << c.in << " -> " << std::hex << floatToHalf(c.in);
  uint16_t nan = floatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  // A signalling NaN whose payload sits only in the low bits stays NaN.
  EXPECT_NE(floatToHalf(fromBits(0x7F800001)) & 0x03FF, 0);

  // Every finite half converts back to itself through float, and the
  // reader decodes every pattern to the value the writer encodes.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = ref::halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(h & 0x7C00, 0x7C00u);
      continue;
    }
    ASSERT_EQ(floatToHalf(f), h) << std::hex << h;
  }
  EXPECT_EQ(ref::halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(ref::halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(ref::halfToFloat(0xC000), -2.0f);
}

TEST(ModelWriter, BFloat16RoundingOnKnownValues) {
  using modelgen::floatToBFloat16;
  struct Case {
    uint32_t in;
    uint16_t out;
  };
  const Case cases[] = {
      {0x3F800000, 0x3F80}, // 1.0
      {0x3F808000, 0x3F80}, // tie: down to even
      {0x3F818000, 0x3F82}, // tie: up to even
      {0x3F808001, 0x3F81}, // above the tie
      {0x3F807FFF, 0x3F80}, // below the tie
      {0xBF800000, 0xBF80}, // -1.0
      {0x7F7FFFFF, 0x7F80}, // FLT_MAX rounds to inf
      {0x7F800000, 0x7F80}, // inf
      {0x00000001, 0x0000}, // float subnormal rounds to 0
      {0x00008000, 0x0000}, // tie at zero: even
      {0x00018000, 0x0002}, // tie: up to even
      {0x3DCCCCCD, 0x3DCD}, // 0.1
  };
  for (const Case &c : cases)
    EXPECT_EQ(floatToBFloat16(fromBits(c.in)), c.out) << std::hex << c.in;
  uint16_t nan = floatToBFloat16(fromBits(0x7F800001));
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0) << "a NaN never becomes inf";
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = ref::bfloat16ToFloat(static_cast<uint16_t>(b));
    EXPECT_EQ(bitsOf(f), b << 16);
    if (!std::isnan(f))
      ASSERT_EQ(floatToBFloat16(f), b) << std::hex << b;
  }
}

TEST(ModelWriter, DtypeFilesHoldTheRoundedValues) {
  TempDir dir;
  for (DType dtype : {DType::F16, DType::BF16}) {
    ModelSpec spec = preset("tiny-llama");
    spec.dtype = dtype;
    std::string path = writeOrDie(spec, dir.sub(modelgen::dtypeName(dtype)));
    std::map<std::string, ref::StoredTensor> tensors;
    std::string error;
    ASSERT_TRUE(
        ref::readSafetensors(path + "/model.safetensors", tensors, error));
    std::vector<TensorDesc> plan;
    ASSERT_TRUE(modelgen::planTensors(spec, plan, error));
    for (const TensorDesc &t : plan) {
      const ref::StoredTensor &stored = tensors.at(t.name);
      EXPECT_EQ(stored.dtype, modelgen::dtypeName(dtype));
      std::vector<float> v = modelgen::tensorValues(spec, t);
      for (size_t i = 0; i < v.size(); ++i) {
        float expected =
            dtype == DType::F16
                ? ref::halfToFloat(modelgen::floatToHalf(v[i]))
                : ref::bfloat16ToFloat(modelgen::floatToBFloat16(v[i]));
        ASSERT_EQ(bitsOf(stored.data[i]), bitsOf(expected))
            << t.name << "[" << i << "]";
      }
    }
    EXPECT_NE(readFile(path + "/config.json")
                  .find(dtype == DType::F16 ? "\"torch_dtype\": \"float16\""
                                            : "\"torch_dtype\": \"bfloat16\""),
              std::string::npos);
  }
}

TEST(ModelWriter, PrefixOmitAndExtraTensors) {
  TempDir dir;
  ModelSpec spec = preset("tiny-gpt2");
  spec.prefix = "transformer.";
  spec.omitTensors = {"h.1.mlp.c_fc.bias"}; // by name without the prefix
  spec.extraTensors = {"unexpected.thing"};
  std::string path = writeOrDie(spec, dir.sub("m"));
  std::map<std::string, ref::StoredTensor> tensors;
  std::string error;
  ASSERT_TRUE(
      ref::readSafetensors(path + "/model.safetensors", tensors, error));
  EXPECT_TRUE(tensors.count("transformer.wte.weight"));
  EXPECT_FALSE(tensors.count("wte.weight"));
  EXPECT_FALSE(tensors.count("transformer.h.1.mlp.c_fc.bias"));
  EXPECT_TRUE(tensors.count("transformer.h.0.mlp.c_fc.bias"));
  ASSERT_TRUE(tensors.count("unexpected.thing"));
  EXPECT_EQ(tensors.at("unexpected.thing").shape, std::vector<int64_t>{8});
}

TEST(ModelWriter, PoisonSetsOneElement) {
  // --poison: one element overwritten (NaN, Inf, a number), every other one
  // as without it; names with or without the prefix; bad targets are errors.
  TempDir dir;
  ModelSpec spec = preset("tiny-gpt2");
  spec.prefix = "transformer.";
  std::string clean = writeOrDie(spec, dir.sub("clean"));
  spec.poison = {{"h.0.ln_1.weight", 3, std::numeric_limits<float>::quiet_NaN()},
                 {"transformer.wpe.weight", 0,
                  -std::numeric_limits<float>::infinity()},
                 {"h.0.ln_1.weight", 5, 2.5f}};
  std::string poisoned = writeOrDie(spec, dir.sub("poisoned"));
  std::map<std::string, ref::StoredTensor> a, b;
  std::string error;
  ASSERT_TRUE(ref::readSafetensors(clean + "/model.safetensors", a, error));
  ASSERT_TRUE(ref::readSafetensors(poisoned + "/model.safetensors", b, error));
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[name, tensor] : a) {
    const std::vector<float> &x = tensor.data, &y = b.at(name).data;
    ASSERT_EQ(x.size(), y.size()) << name;
    for (size_t i = 0; i < x.size(); ++i) {
      if (name == "transformer.h.0.ln_1.weight" && i == 3)
        EXPECT_TRUE(std::isnan(y[i]));
      else if (name == "transformer.h.0.ln_1.weight" && i == 5)
        EXPECT_EQ(y[i], 2.5f);
      else if (name == "transformer.wpe.weight" && i == 0)
        EXPECT_EQ(y[i], -std::numeric_limits<float>::infinity());
      else
        ASSERT_EQ(x[i], y[i]) << name << "[" << i << "]";
    }
  }
  ModelSpec bad = preset("tiny-gpt2");
  bad.poison = {{"nope", 0, 0.0f}};
  EXPECT_FALSE(modelgen::writeModel(bad, dir.sub("bad"), error));
  EXPECT_EQ(error, "cannot poison 'nope': the model has no such tensor");
  bad.poison = {{"ln_f.bias", 64, 0.0f}};
  EXPECT_FALSE(modelgen::writeModel(bad, dir.sub("bad"), error));
  EXPECT_EQ(error, "cannot poison element 64 of 'ln_f.bias': it has 64 "
                   "elements");
}

//===----------------------------------------------------------------------===//
// The reference model
//===----------------------------------------------------------------------===//

void expectMatchesIndependent(const ModelSpec &spec, int64_t n) {
  TempDir dir;
  auto model = loadOrDie(writeOrDie(spec, dir.sub("m")));
  ASSERT_TRUE(model);
  std::vector<int64_t> tokens = someTokens(n, spec.vocab);
  std::vector<float> logits = forwardOrDie(*model, tokens);
  std::vector<float> expected = spec.family == Family::GPT2
                                    ? independentGpt2(spec, tokens)
                                    : independentLlama(spec, tokens);
  ASSERT_EQ(logits.size(), static_cast<size_t>(n * spec.vocab));
  double rel = ref::maxRelError(logits, expected);
  EXPECT_LE(rel, kIndependentTolerance);
  // Argmaxes agree wherever the top two are not a near tie.
  EXPECT_EQ(countArgmaxDifferences(logits, expected, spec.vocab), 0);
}

TEST(ModelReference, Gpt2MatchesIndependentForward) {
  expectMatchesIndependent(preset("tiny-gpt2"), 12);
}

TEST(ModelReference, Gpt2ErfGeluAndCustomInnerMatch) {
  ModelSpec spec = preset("tiny-gpt2");
  spec.layers = 1;
  spec.ffn = 100;
  TempDir dir;
  auto model = loadOrDie(writeOrDie(spec, dir.sub("tanh")));
  spec.activation = "gelu";
  auto erfModel = loadOrDie(writeOrDie(spec, dir.sub("erf")));
  ASSERT_TRUE(model && erfModel);
  EXPECT_EQ(model->config().gelu, ref::GeluApproximation::Tanh);
  EXPECT_EQ(erfModel->config().gelu, ref::GeluApproximation::Erf);
  std::vector<int64_t> tokens = someTokens(6, spec.vocab);
  // Same weights, different activation: close but not equal.
  double diff = ref::maxAbsError(forwardOrDie(*model, tokens),
                                 forwardOrDie(*erfModel, tokens));
  EXPECT_GT(diff, 0.0);
  EXPECT_LT(diff, 1.0);
}

TEST(ModelReference, LlamaMatchesIndependentForward) {
  expectMatchesIndependent(preset("tiny-llama"), 12);
}

TEST(ModelReference, TiedLlamaWithOneKvHeadMatchesIndependentForward) {
  expectMatchesIndependent(preset("tiny-llama-tied"), 12);
}

TEST(ModelReference, LlamaWithExplicitHeadDimMatchesIndependentForward) {
  ModelSpec spec = preset("tiny-llama");
  spec.headDim = 8;
  spec.kvHeads = 1;
  spec.ropeTheta = 500000.0;
  expectMatchesIndependent(spec, 9);
}

/// The point of the weight scales: each classic bug flips argmaxes.
///
/// Measured on 16 positions (flips out of 16 / max abs logit change):
///                        mask       RoPE pairing  GQA mapping  Conv1D layout
///   tiny-llama           11 / 3.1   6 / 1.5       11
///   tiny-gpt2 (std 1)     0 / 14    -             -            0 / 18
///   tiny-gpt2 (std 0.25)  7 / 5.0   -             -            14 / 6.2
///   tiny-llama-tied (1)   0 / 26    0 / 14        (1 kv head)
///   tiny-llama-tied (.25) 14 / 8.9  6 / 4.8       (1 kv head)
/// With a tied head and unit-variance token embeddings the logit of the
/// input token itself (|e_t|^2 ~ hidden) dominates every row, so the argmax
/// is the input token whatever the layers compute: bugs show in the logit
/// values but not in argmaxes. ModelSpec::embeddingStd (--embedding-std)
/// 0.25 restores argmax sensitivity for tied models.
TEST(ModelReference, BugsAreVisible) {
  const int64_t n = 16;
  Bugs rope;
  rope.interleavedRope = true;
  Bugs gqa;
  gqa.gqaModulo = true;
  Bugs mask;
  mask.noCausalMask = true;
  Bugs layout;
  layout.linearLayoutForConv1D = true;

  ModelSpec llama = preset("tiny-llama");
  std::vector<int64_t> tokens = someTokens(n, llama.vocab);
  std::vector<float> good = independentLlama(llama, tokens);
  for (auto [bugs, what] :
       {std::pair<const Bugs *, const char *>{&rope, "RoPE"},
        {&gqa, "GQA"},
        {&mask, "mask"}})
    EXPECT_GE(countArgmaxDifferences(
                  good, independentLlama(llama, tokens, *bugs), llama.vocab),
              n / 4)
        << what;

  for (double embeddingStd : {1.0, 0.25}) {
    ModelSpec gpt2 = preset("tiny-gpt2");
    gpt2.embeddingStd = embeddingStd;
    std::vector<int64_t> gptTokens = someTokens(n, gpt2.vocab);
    std::vector<float> goodGpt2 = independentGpt2(gpt2, gptTokens);
    ModelSpec tied = preset("tiny-llama-tied");
    tied.embeddingStd = embeddingStd;
    std::vector<float> goodTied = independentLlama(tied, tokens);
    for (auto [bugs, what] :
         {std::pair<const Bugs *, const char *>{&mask, "mask"},
          {&layout, "Conv1D layout"}}) {
      std::vector<float> bad = independentGpt2(gpt2, gptTokens, *bugs);
      EXPECT_GT(ref::maxAbsError(goodGpt2, bad), 1.0) << what;
      if (embeddingStd < 1)
        EXPECT_GE(countArgmaxDifferences(goodGpt2, bad, gpt2.vocab), n / 4)
            << what;
    }
    for (auto [bugs, what] :
         {std::pair<const Bugs *, const char *>{&rope, "RoPE"},
          {&mask, "mask"}}) {
      std::vector<float> bad = independentLlama(tied, tokens, *bugs);
      EXPECT_GT(ref::maxAbsError(goodTied, bad), 1.0) << what;
      if (embeddingStd < 1)
        EXPECT_GE(countArgmaxDifferences(goodTied, bad, tied.vocab), n / 4)
            << what;
    }
  }
}

TEST(ModelReference, Causal) {
  TempDir dir;
  for (const char *name : {"tiny-gpt2", "tiny-llama"}) {
    ModelSpec spec = preset(name);
    auto model = loadOrDie(writeOrDie(spec, dir.sub(name)));
    ASSERT_TRUE(model);
    const int64_t n = 10, split = 4, v = spec.vocab;
    std::vector<int64_t> a = someTokens(n, v), b = a;
    for (int64_t p = split; p < n; ++p)
      b[p] = (b[p] + 5) % v;
    std::vector<float> la = forwardOrDie(*model, a),
                       lb = forwardOrDie(*model, b);
    // Bitwise: no later token can touch an earlier row.
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), split * v * sizeof(float)), 0)
        << name;
    EXPECT_NE(std::memcmp(la.data() + split * v, lb.data() + split * v,
                          v * sizeof(float)),
              0)
        << name;
    // A prefix run gives the same rows as the full run.
    std::vector<float> prefix = forwardOrDie(
        *model, std::vector<int64_t>(a.begin(), a.begin() + split));
    EXPECT_EQ(std::memcmp(prefix.data(), la.data(), prefix.size() * 4), 0);
  }
}

TEST(ModelReference, TiedHeadIsTheEmbedding) {
  TempDir dir;
  ModelSpec untiedSpec = preset("tiny-llama");
  ModelSpec tiedSpec = untiedSpec;
  tiedSpec.tieEmbeddings = true;
  std::string untiedDir = writeOrDie(untiedSpec, dir.sub("untied"));
  auto tied = loadOrDie(writeOrDie(tiedSpec, dir.sub("tied")));
  auto untied = loadOrDie(untiedDir);
  ASSERT_TRUE(tied && untied);
  EXPECT_TRUE(tied->config().tieEmbeddings);
  EXPECT_EQ(tied->weight("lm_head.weight"), nullptr);
  ASSERT_NE(untied->weight("lm_head.weight"), nullptr);

  std::vector<int64_t> tokens = someTokens(8, untiedSpec.vocab);
  std::vector<float> tiedLogits = forwardOrDie(*tied, tokens);
  EXPECT_GT(ref::maxAbsError(tiedLogits, forwardOrDie(*untied, tokens)), 1.0);

  // The untied model with lm_head := embed_tokens is the tied model: every
  // other weight is identical because each tensor has its own stream.
  std::map<std::string, ref::StoredTensor> tensors;
  std::string error;
  ASSERT_TRUE(
      ref::readSafetensors(untiedDir + "/model.safetensors", tensors, error));
  tensors["lm_head.weight"].data = tensors["model.embed_tokens.weight"].data;
  auto rebuilt = ModelReference::create(untied->config(), tensors, error);
  ASSERT_TRUE(rebuilt) << error;
  std::vector<float> rebuiltLogits = forwardOrDie(*rebuilt, tokens);
  EXPECT_EQ(std::memcmp(rebuiltLogits.data(), tiedLogits.data(),
                        tiedLogits.size() * 4),
            0);
}

TEST(ModelReference, PrefixesAndBuffersLoadIdentically) {
  TempDir dir;
  ModelSpec bare = preset("tiny-gpt2");
  ModelSpec prefixed = bare;
  prefixed.prefix = "transformer.";
  prefixed.extraBuffers = true;
  std::vector<std::string> warnings;
  auto a = loadOrDie(writeOrDie(bare, dir.sub("bare")), &warnings);
  auto b = loadOrDie(writeOrDie(prefixed, dir.sub("prefixed")), &warnings);
  ModelSpec llama = preset("tiny-llama");
  ModelSpec llamaBuffers = llama;
  llamaBuffers.extraBuffers = true;
  auto c = loadOrDie(writeOrDie(llama, dir.sub("llama")), &warnings);
  auto d = loadOrDie(writeOrDie(llamaBuffers, dir.sub("llama-buf")), &warnings);
  ASSERT_TRUE(a && b && c && d);
  EXPECT_TRUE(warnings.empty()) << warnings.front();

  std::vector<int64_t> tokens = someTokens(7, 97);
  std::vector<float> la = forwardOrDie(*a, tokens),
                     lb = forwardOrDie(*b, tokens);
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * 4), 0);
  std::vector<float> lc = forwardOrDie(*c, tokens),
                     ld = forwardOrDie(*d, tokens);
  EXPECT_EQ(std::memcmp(lc.data(), ld.data(), lc.size() * 4), 0);

  // A GPT-2 file that also carries the tied head loads without a warning.
  std::map<std::string, ref::StoredTensor> tensors;
  std::string error;
  ASSERT_TRUE(
      ref::readSafetensors(dir.sub("bare/model.safetensors"), tensors, error));
  tensors["lm_head.weight"] = tensors["wte.weight"];
  ASSERT_TRUE(ModelReference::create(a->config(), tensors, error, &warnings))
      << error;
  EXPECT_TRUE(warnings.empty());
}

TEST(ModelReference, DtypeVariantsAreTheRoundedWeights) {
  TempDir dir;
  ModelSpec spec = preset("tiny-llama");
  std::string f32Dir = writeOrDie(spec, dir.sub("f32"));
  auto f32 = loadOrDie(f32Dir);
  ASSERT_TRUE(f32);
  std::vector<int64_t> tokens = someTokens(10, spec.vocab);
  std::vector<float> exact = forwardOrDie(*f32, tokens);
  double largest = 0;
  for (float v : exact)
    largest = std::max(largest, std::fabs(double(v)));

  std::map<std::string, ref::StoredTensor> f32Tensors;
  std::string error;
  ASSERT_TRUE(
      ref::readSafetensors(f32Dir + "/model.safetensors", f32Tensors, error));
  for (DType dtype : {DType::F16, DType::BF16}) {
    spec.dtype = dtype;
    auto model =
        loadOrDie(writeOrDie(spec, dir.sub(modelgen::dtypeName(dtype))));
    ASSERT_TRUE(model);
    std::vector<float> logits = forwardOrDie(*model, tokens);

    // Exactly the F32 model with its weights rounded to the dtype.
    auto rounded = f32Tensors;
    for (auto &[name, t] : rounded)
      for (float &v : t.data)
        v = dtype == DType::F16
                ? ref::halfToFloat(modelgen::floatToHalf(v))
                : ref::bfloat16ToFloat(modelgen::floatToBFloat16(v));
    auto roundedModel = ModelReference::create(f32->config(), rounded, error);
    ASSERT_TRUE(roundedModel) << error;
    std::vector<float> expected = forwardOrDie(*roundedModel, tokens);
    EXPECT_EQ(std::memcmp(logits.data(), expected.data(), logits.size() * 4), 0)
        << modelgen::dtypeName(dtype);

    // And close to the F32 logits: each weight carries a relative error of
    // at most u = 2^-11 (F16) or 2^-8 (BF16), mostly averaging out in the
    // dot products; measured 1.0-1.5 u of the largest logit, bound 4 u.
    double unit =
        dtype == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    double err = ref::maxAbsError(logits, exact);
    EXPECT_GT(err, 0.0);
    EXPECT_LE(err, 4 * unit * largest) << modelgen::dtypeName(dtype);
  }
}

TEST(ModelReference, LoadErrorsNameTheProblem) {
  TempDir dir;
  ModelSpec spec = preset("tiny-gpt2");
  std::string error;
  std::vector<std::string> warnings;

  spec.extraTensors = {"mystery.weight"};
  ASSERT_TRUE(loadOrDie(writeOrDie(spec, dir.sub("extra")), &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ignoring unknown tensor 'mystery.weight'"),
            std::string::npos)
      << warnings[0];

  spec.extraTensors.clear();
  spec.omitTensors = {"h.1.mlp.c_fc.bias"};
  writeOrDie(spec, dir.sub("omit"));
  EXPECT_FALSE(ModelReference::load(dir.sub("omit"), error));
  EXPECT_NE(error.find("missing tensor 'h.1.mlp.c_fc.bias'"), std::string::npos)
      << error;
  EXPECT_NE(error.find("model.safetensors"), std::string::npos) << error;

  // A config that disagrees with the weights: shapes are named.
  spec.omitTensors.clear();
  writeOrDie(spec, dir.sub("shape"));
  std::string config = readFile(dir.sub("shape/config.json"));
  size_t at = config.find("\"vocab_size\": 97");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 16, "\"vocab_size\": 98");
  std::ofstream(dir.sub("shape/config.json")) << config;
  EXPECT_FALSE(ModelReference::load(dir.sub("shape"), error));
  EXPECT_NE(error.find("tensor 'wte.weight' has shape [97, 64], expected [98, "
                       "64]"),
            std::string::npos)
      << error;

  // Broken files.
  std::ofstream(dir.sub("shape/config.json")) << "{\"model_type\": \"bert\"}";
  EXPECT_FALSE(ModelReference::load(dir.sub("shape"), error));
  EXPECT_NE(error.find("config.json: unsupported model_type \"bert\""),
            std::string::npos)
      << error;
  std::ofstream(dir.sub("shape/config.json")) << "{\"model_type\": \"gpt2\",";
  EXPECT_FALSE(ModelReference::load(dir.sub("shape"), error));
  EXPECT_NE(error.find("invalid JSON"), std::string::npos) << error;
  std::ofstream(dir.sub("shape/config.json"))
      << "{\"model_type\": \"llama\", \"hidden_size\": 64}";
  EXPECT_FALSE(ModelReference::load(dir.sub("shape"), error));
  EXPECT_NE(error.find("missing key \"num_hidden_layers\""), std::string::npos)
      << error;

  std::string st = readFile(dir.sub("omit/model.safetensors"));
  std::ofstream(dir.sub("omit/model.safetensors"), std::ios::binary)
      << st.substr(0, st.size() - 100);
  EXPECT_FALSE(ModelReference::load(dir.sub("omit"), error));
  EXPECT_NE(error.find("outside the"), std::string::npos) << error;
  std::ofstream(dir.sub("omit/model.safetensors"), std::ios::binary)
      << "garbage";
  EXPECT_FALSE(ModelReference::load(dir.sub("omit"), error));
  EXPECT_NE(error.find("too short"), std::string::npos) << error;

  // Both spellings of one weight, and an unsupported dtype.
  auto good = loadOrDie(writeOrDie(preset("tiny-gpt2"), dir.sub("good")));
  ASSERT_TRUE(good);
  std::map<std::string, ref::StoredTensor> tensors;
  ASSERT_TRUE(
      ref::readSafetensors(dir.sub("good/model.safetensors"), tensors, error));
  auto twice = tensors;
  twice["transformer.ln_f.bias"] = twice["ln_f.bias"];
  EXPECT_FALSE(ModelReference::create(good->config(), twice, error));
  EXPECT_NE(error.find("'ln_f.bias' is stored twice"), std::string::npos)
      << error;
  auto ints = tensors;
  ints["ln_f.bias"].dtype = "I64";
  EXPECT_FALSE(ModelReference::create(good->config(), ints, error));
  EXPECT_NE(error.find("'ln_f.bias' has dtype I64"), std::string::npos)
      << error;

  // Bad inputs to the forward pass.
  std::vector<float> logits;
  EXPECT_FALSE(good->forward({1, 97}, logits, error));
  EXPECT_NE(error.find("token 97 at position 1 is outside the vocabulary"),
            std::string::npos)
      << error;
  EXPECT_FALSE(good->forward(std::vector<int64_t>(65, 1), logits, error));
  EXPECT_NE(error.find("65 tokens"), std::string::npos) << error;
  EXPECT_FALSE(good->forward({}, logits, error));
}

//===----------------------------------------------------------------------===//
// .npy and the command lines
//===----------------------------------------------------------------------===//

TEST(ReferenceNpy, CorruptHeadersFailWithoutHugeAllocations) {
  // A shape that promises terabytes (found by the .npy fuzzer: the reader
  // once allocated before comparing with the file size), one whose product
  // overflows, and data that does not match the shape either way.
  TempDir dir;
  auto npy = [&](const std::string &shape, size_t dataBytes) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                         shape + ", }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xFF);
    bytes += static_cast<char>(header.size() >> 8);
    std::string path = dir.sub("c.npy");
    std::ofstream(path, std::ios::binary)
        << bytes << header << std::string(dataBytes, '\0');
    return path;
  };
  std::vector<float> data;
  std::vector<int64_t> shape;
  std::string error;
  EXPECT_FALSE(ref::readNpy(npy("(1, 22222222223)", 8), data, shape, error));
  EXPECT_NE(error.find("truncated data: expected 22222222223 float32 values"),
            std::string::npos)
      << error;
  EXPECT_FALSE(
      ref::readNpy(npy("(1099511627776, 1099511627776)", 8), data, shape, error));
  EXPECT_NE(error.find("shape too large"), std::string::npos) << error;
  EXPECT_FALSE(ref::readNpy(npy("(2, 3)", 28), data, shape, error));
  EXPECT_NE(error.find("trailing bytes after 6 values"), std::string::npos)
      << error;
  EXPECT_FALSE(ref::readNpy(npy("(2, 3)", 20), data, shape, error));
  EXPECT_NE(error.find("truncated data"), std::string::npos) << error;
  ASSERT_TRUE(ref::readNpy(npy("(2, 3)", 24), data, shape, error)) << error;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  // A key twice: rejected, not resolved one way or the other.
  EXPECT_FALSE(
      ref::readNpy(npy("(0, 5), 'shape': (4,)", 16), data, shape, error));
  EXPECT_NE(error.find("duplicate key 'shape'"), std::string::npos) << error;
}

TEST(ReferenceNpy, RoundTripAndAlignment) {
  TempDir dir;
  std::vector<float> data = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  std::string error;
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 3}, std::vector<int64_t>{6},
        std::vector<int64_t>{1, 2, 3}}) {
    std::string path = dir.sub("a.npy");
    ASSERT_TRUE(ref::writeNpy(path, data, shape, error)) << error;
    std::string bytes = readFile(path);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    size_t headerLen = static_cast<unsigned char>(bytes[8]) |
                       (static_cast<unsigned char>(bytes[9]) << 8);
    EXPECT_EQ((10 + headerLen) % 64, 0u);
    EXPECT_EQ(bytes[10 + headerLen - 1], '\n');
    EXPECT_EQ(bytes.size(), 10 + headerLen + data.size() * 4);
    std::vector<float> back;
    std::vector<int64_t> backShape;
    ASSERT_TRUE(ref::readNpy(path, back, backShape, error)) << error;
    EXPECT_EQ(back, data);
    EXPECT_EQ(backShape, shape);
  }
  EXPECT_NE(readFile(dir.sub("a.npy")).find("'shape': (1, 2, 3), }"),
            std::string::npos);
  EXPECT_FALSE(ref::writeNpy(dir.sub("b.npy"), data, {4, 2}, error));
}


std::string tool(const std::string &name) {
  return std::string(ATTN_TOOLS_DIR) + "/" + name;
}

std::string joinTokens(const std::vector<int64_t> &tokens) {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i)
    s += (i ? "," : "") + std::to_string(tokens[i]);
  return s;
}

TEST(ReferenceCli, MakeModelRefModelAndCompare) {
  TempDir dir;
  std::string model = dir.sub("m");
  CommandResult made =
      run(tool("attn-make-model") +
          " --preset tiny-llama --layers 1 --seed 3 --out " + model);
  ASSERT_EQ(made.exitCode, 0) << made.output;
  EXPECT_NE(made.output.find("wrote"), std::string::npos);

  // The CLI and the API write the same files.
  ModelSpec spec = preset("tiny-llama");
  spec.layers = 1;
  spec.seed = 3;
  writeOrDie(spec, dir.sub("api"));
  EXPECT_EQ(readFile(model + "/model.safetensors"),
            readFile(dir.sub("api/model.safetensors")));
  EXPECT_EQ(readFile(model + "/config.json"),
            readFile(dir.sub("api/config.json")));

  // Greedy continuation in process, then checked by the CLI.
  auto reference = loadOrDie(model);
  ASSERT_TRUE(reference);
  std::vector<int64_t> tokens = {3, 1, 4};
  for (int step = 0; step < 5; ++step) {
    std::vector<float> logits = forwardOrDie(*reference, tokens);
    tokens.push_back(
        ref::argmax(&logits[(tokens.size() - 1) * spec.vocab], spec.vocab));
  }
  std::string npy = dir.sub("ref.npy");
  CommandResult ok =
      run(tool("attn-ref-model") + " --model " + model + " --tokens " +
          joinTokens(tokens) +
          " --check-greedy 5 --print-argmax --dump-logits " + npy);
  ASSERT_EQ(ok.exitCode, 0) << ok.output;
  EXPECT_NE(ok.output.find("greedy: ok"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("argmax: "), std::string::npos) << ok.output;

  std::vector<float> dumped;
  std::vector<int64_t> shape;
  std::string error;
  ASSERT_TRUE(ref::readNpy(npy, dumped, shape, error)) << error;
  EXPECT_EQ(shape, (std::vector<int64_t>{8, spec.vocab}));
  EXPECT_EQ(dumped, forwardOrDie(*reference, tokens));

  std::vector<int64_t> wrong = tokens;
  wrong[6] = (wrong[6] + 1) % spec.vocab;
  CommandResult bad =
      run(tool("attn-ref-model") + " --model " + model + " --tokens " +
          joinTokens(wrong) + " --check-greedy 5");
  EXPECT_EQ(bad.exitCode, 1) << bad.output;
  EXPECT_NE(bad.output.find("greedy: mismatch at position 6: token " +
                            std::to_string(wrong[6])),
            std::string::npos)
      << bad.output;

  // attn-npy-compare: equal, within, above tolerance, NaN, shape mismatch.
  CommandResult same =
      run(tool("attn-npy-compare") + " " + npy + " " + npy + " --max-abs 0");
  EXPECT_EQ(same.exitCode, 0) << same.output;
  EXPECT_NE(same.output.find("max abs error: 0 at [0, 0]"), std::string::npos)
      << same.output;
  std::vector<float> perturbed = dumped;
  perturbed[2 * spec.vocab + 5] += 0.25f;
  std::string other = dir.sub("other.npy");
  ASSERT_TRUE(ref::writeNpy(other, perturbed, shape, error));
  CommandResult within = run(tool("attn-npy-compare") + " " + other + " " +
                             npy + " --max-abs 0.3");
  EXPECT_EQ(within.exitCode, 0) << within.output;
  EXPECT_NE(within.output.find("max abs error: 0.25 at [2, 5]"),
            std::string::npos)
      << within.output;
  CommandResult above = run(tool("attn-npy-compare") + " " + other + " " + npy +
                            " --max-abs 0.1");
  EXPECT_EQ(above.exitCode, 1) << above.output;
  perturbed[3 * spec.vocab + 1] = std::nanf("");
  ASSERT_TRUE(ref::writeNpy(other, perturbed, shape, error));
  CommandResult nan = run(tool("attn-npy-compare") + " " + other + " " + npy +
                          " --max-abs 1e30");
  EXPECT_EQ(nan.exitCode, 1) << nan.output;
  EXPECT_NE(nan.output.find("max abs error: nan at [3, 1]"), std::string::npos)
      << nan.output;
  ASSERT_TRUE(ref::writeNpy(
      other, std::vector<float>(dumped.begin(), dumped.end() - spec.vocab),
      {7, spec.vocab}, error));
  CommandResult shapes =
      run(tool("attn-npy-compare") + " " + other + " " + npy + " --max-abs 1");
  EXPECT_EQ(shapes.exitCode, 1) << shapes.output;
  EXPECT_NE(shapes.output.find("shape mismatch"), std::string::npos)
      << shapes.output;
}

} // namespace
