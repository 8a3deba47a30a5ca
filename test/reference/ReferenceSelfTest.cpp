//===- ReferenceSelfTest.cpp - Checks of the reference oracle -------------===//
//
// Checks attn::ref against worked examples and structural identities that are
// computed independently of the function under test. Prints "ok" and exits 0
// when every check passes. Uses its own CHECK (not assert) so that it still
// checks under NDEBUG.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

using namespace attn::ref;

namespace {

int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::cerr << __FILE__ << ":" << __LINE__ << ": check failed: " #cond     \
                << "\n";                                                       \
      ++failures;                                                              \
    }                                                                          \
  } while (false)

#define CHECK_NEAR(actual, expected, tol)                                      \
  do {                                                                         \
    double err_ = maxAbsError((actual), (expected));                           \
    if (!(err_ <= (tol))) {                                                    \
      std::cerr << __FILE__ << ":" << __LINE__ << ": " #actual " vs " #expected \
                << ": max abs error " << err_ << " > " << (tol) << "\n";       \
      ++failures;                                                              \
    }                                                                          \
  } while (false)

using Tensor = std::vector<float>;

AttentionParams singleHead(int64_t headDim) {
  AttentionParams p;
  p.heads = 1;
  p.kvHeads = 1;
  p.headDim = headDim;
  p.scale = defaultScale(headDim);
  return p;
}

// Columns [col, col + width) of a [rows, stride] matrix.
Tensor sliceCols(const Tensor &m, int64_t rows, int64_t stride, int64_t col,
                 int64_t width) {
  Tensor out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      out.push_back(m[r * stride + col + c]);
  return out;
}

void testWorkedAttention() {
  Tensor q = {1, 0, 0.5f, 0};
  Tensor k = {0.5f, 0.2f, 0.3f, 0.1f, 0.8f, 0.1f, 0.4f, 0.2f,
              0.1f, 0.6f, 0.2f, 0.3f};
  Tensor v = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f,
              0.2f, 0.1f, 0.4f, 0.3f};
  AttentionParams p = singleHead(4);
  Tensor out = attention(q, 1, k, v, 3, p);
  CHECK_NEAR(out, (Tensor{0.287f, 0.333f, 0.486f, 0.533f}), 2e-3);

  // The output must be the mix of V rows with the published weights.
  const double weights[3] = {0.334, 0.399, 0.267};
  Tensor mixed(4);
  for (int c = 0; c < 4; ++c)
    mixed[c] = static_cast<float>(weights[0] * v[c] + weights[1] * v[4 + c] +
                                  weights[2] * v[8 + c]);
  CHECK_NEAR(out, mixed, 2e-3);

  // With one-hot value rows the output is the weights themselves.
  Tensor oneHot = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
  Tensor w = attention(q, 1, k, oneHot, 3, p);
  CHECK_NEAR(w, (Tensor{0.334f, 0.399f, 0.267f, 0.0f}), 1e-3);
}

void testLayerNorm() {
  Tensor x = {2, 4, 6, 8};
  Tensor ones(4, 1.0f), zeros(4, 0.0f), twos(4, 2.0f);
  CHECK_NEAR(layerNorm(x, 1, 4, ones, zeros, 1e-5),
             (Tensor{-1.342f, -0.447f, 0.447f, 1.342f}), 1e-3);
  CHECK_NEAR(layerNorm(x, 1, 4, twos, ones, 1e-5),
             (Tensor{-1.683f, 0.106f, 1.894f, 3.683f}), 1e-3);
  // rms of [2,4,6,8] is sqrt(30).
  double rms = std::sqrt(30.0);
  CHECK_NEAR(rmsNorm(x, 1, 4, ones, 0.0),
             (Tensor{float(2 / rms), float(4 / rms), float(6 / rms),
                     float(8 / rms)}),
             1e-6);
}

void testCausal() {
  const int64_t heads = 2, headDim = 4, seq = 3, width = heads * headDim;
  Tensor q = randomTensor(seq * width, 1.0f, 1);
  Tensor k = randomTensor(seq * width, 1.0f, 2);
  Tensor v = randomTensor(seq * width, 1.0f, 3);
  AttentionParams p;
  p.heads = heads;
  p.kvHeads = heads;
  p.headDim = headDim;
  p.scale = defaultScale(headDim);
  p.causal = true;
  Tensor out = attention(q, seq, k, v, seq, p);
  // Row 0 sees key 0 only: its weight is exactly 1.
  for (int64_t c = 0; c < width; ++c)
    CHECK(out[c] == v[c]);

  // The last row sees every key, as without the mask.
  p.causal = false;
  Tensor full = attention(q, seq, k, v, seq, p);
  for (int64_t c = 0; c < width; ++c)
    CHECK(out[(seq - 1) * width + c] == full[(seq - 1) * width + c]);

  // A decode step (one query at the end of the valid keys) is unmasked.
  Tensor lastQ(q.end() - width, q.end());
  p.causal = true;
  Tensor decode = attention(lastQ, 1, k, v, seq, p);
  CHECK_NEAR(decode, Tensor(full.end() - width, full.end()), 0.0);

  // kvLen hides trailing keys: same as truncating k and v.
  p.causal = false;
  p.kvLen = 2;
  Tensor shortK(k.begin(), k.begin() + 2 * width);
  Tensor shortV(v.begin(), v.begin() + 2 * width);
  AttentionParams pAll = p;
  pAll.kvLen = -1;
  CHECK_NEAR(attention(q, seq, k, v, seq, p),
             attention(q, seq, shortK, shortV, 2, pAll), 0.0);

  // Causal with more queries than valid keys: row 0 sees nothing -> zeros.
  p.causal = true;
  p.kvLen = 2;
  Tensor starved = attention(q, seq, k, v, seq, p);
  for (int64_t c = 0; c < width; ++c)
    CHECK(starved[c] == 0.0f);
  CHECK(maxAbsError(starved, starved) == 0.0); // no NaN anywhere
}

void testGqa() {
  const int64_t heads = 4, kvHeads = 2, headDim = 8, seqQ = 5, seqKv = 7;
  Tensor q = randomTensor(seqQ * heads * headDim, 1.0f, 10);
  Tensor k = randomTensor(seqKv * kvHeads * headDim, 1.0f, 11);
  Tensor v = randomTensor(seqKv * kvHeads * headDim, 1.0f, 12);
  for (bool causal : {false, true}) {
    AttentionParams p;
    p.heads = heads;
    p.kvHeads = kvHeads;
    p.headDim = headDim;
    p.scale = defaultScale(headDim);
    p.causal = causal;
    p.kvLen = 6;
    Tensor out = attention(q, seqQ, k, v, seqKv, p);
    for (int64_t h = 0; h < heads; ++h) {
      int64_t g = h / (heads / kvHeads);
      AttentionParams one = p;
      one.heads = one.kvHeads = 1;
      Tensor expected = attention(
          sliceCols(q, seqQ, heads * headDim, h * headDim, headDim), seqQ,
          sliceCols(k, seqKv, kvHeads * headDim, g * headDim, headDim),
          sliceCols(v, seqKv, kvHeads * headDim, g * headDim, headDim), seqKv,
          one);
      CHECK_NEAR(sliceCols(out, seqQ, heads * headDim, h * headDim, headDim),
                 expected, 1e-6);
    }
  }
}

void testRope() {
  const int64_t seq = 4, headDim = 8, features = 16, half = headDim / 2;
  Tensor x = randomTensor(seq * features, 1.0f, 20);
  for (RopePairing pairing :
       {RopePairing::RotateHalf, RopePairing::Interleaved}) {
    // Position 0 does not rotate.
    Tensor row0(x.begin(), x.begin() + features);
    CHECK(rope(row0, 1, features, headDim, 10000.0, pairing, 0) == row0);

    // Every pair keeps its norm.
    Tensor y = rope(x, seq, features, headDim, 10000.0, pairing, 3);
    for (int64_t base = 0; base < seq * features; base += headDim)
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = base + (pairing == RopePairing::RotateHalf ? i : 2 * i);
        int64_t b = base + (pairing == RopePairing::RotateHalf ? i + half
                                                               : 2 * i + 1);
        double before = double(x[a]) * x[a] + double(x[b]) * x[b];
        double after = double(y[a]) * y[a] + double(y[b]) * y[b];
        CHECK(std::fabs(after - before) <= 1e-5 * (1.0 + before));
      }
  }

  // Interleaved on permuted features equals rotate_half: feature i of a head
  // goes to 2i and feature i + half to 2i + 1.
  auto toInterleaved = [&](const Tensor &t) {
    Tensor out(t.size());
    for (int64_t base = 0; base < int64_t(t.size()); base += headDim)
      for (int64_t i = 0; i < half; ++i) {
        out[base + 2 * i] = t[base + i];
        out[base + 2 * i + 1] = t[base + i + half];
      }
    return out;
  };
  Tensor rh = rope(x, seq, features, headDim, 10000.0,
                   RopePairing::RotateHalf, 5);
  Tensor il = rope(toInterleaved(x), seq, features, headDim, 10000.0,
                   RopePairing::Interleaved, 5);
  CHECK_NEAR(toInterleaved(rh), il, 0.0);

  // Position 1, pair 0 turns by exactly 1 radian.
  Tensor unit = {1, 0};
  CHECK_NEAR(rope(unit, 1, 2, 2, 10000.0, RopePairing::Interleaved, 1),
             (Tensor{float(std::cos(1.0)), float(std::sin(1.0))}), 0.0);
}

void testOthers() {
  // sinusoidalPE at p = 0 adds (0, 1) to each pair.
  Tensor zeros4(4, 0.0f);
  CHECK(sinusoidalPE(zeros4, 1, 4, 10000.0, 0) == (Tensor{0, 1, 0, 1}));
  // At p = 1, pair 1 of d = 4 has angle 1 / 10000^(2/4) = 0.01.
  Tensor pe = sinusoidalPE(zeros4, 1, 4, 10000.0, 1);
  CHECK_NEAR(pe, (Tensor{float(std::sin(1.0)), float(std::cos(1.0)),
                         float(std::sin(0.01)), float(std::cos(0.01))}),
             0.0);

  // Embedding, with clamping.
  Tensor table = {0, 1, 10, 11, 20, 21};
  CHECK(embedding(table, 3, 2, {2, 0, -5, 9}) ==
        (Tensor{20, 21, 0, 1, 0, 1, 20, 21}));

  // linear: both layouts of the same matrix agree, and match by hand.
  Tensor x = {1, 2, 3, 4, 5, 6};           // [2, 3]
  Tensor wOutIn = {1, 0, -1, 2, 1, 0};     // [2, 3]
  Tensor wInOut = {1, 2, 0, 1, -1, 0};     // its transpose, [3, 2]
  float bias[2] = {0.5f, -1.0f};
  Tensor expected = {-2 + 0.5f, 4 - 1.0f, -2 + 0.5f, 13 - 1.0f};
  CHECK(linear(x, 2, 3, wOutIn, 2, WeightLayout::OutIn, bias) == expected);
  CHECK(linear(x, 2, 3, wInOut, 2, WeightLayout::InOut, bias) == expected);

  // Activations at 1.
  Tensor one = {1.0f};
  CHECK_NEAR(gelu(one, GeluApproximation::Erf), (Tensor{0.8413447f}), 1e-6);
  CHECK_NEAR(gelu(one, GeluApproximation::Tanh), (Tensor{0.8411920f}), 1e-6);
  CHECK_NEAR(silu(one), (Tensor{0.7310586f}), 1e-6);
  CHECK_NEAR(swiglu(one, Tensor{2.0f}), (Tensor{1.4621172f}), 1e-6);

  // Softmax: large inputs do not overflow, rows sum to 1.
  Tensor logits = {1000, 1000, 0, 0};
  CHECK_NEAR(softmax(logits, 2, 2), (Tensor{0.5f, 0.5f, 0.5f, 0.5f}), 0.0);

  // KV cache.
  Tensor cache(4 * 2, 0.0f);
  Tensor appended = kvCacheAppend(cache, 4, 2, {1, 2, 3, 4}, 2, 1);
  CHECK(appended == (Tensor{0, 0, 1, 2, 3, 4, 0, 0}));
  CHECK(kvCacheRead(appended, 2, 2) == (Tensor{0, 0, 1, 2}));

  // ALiBi slopes (HF build_alibi_tensor).
  std::vector<double> s8 = alibiSlopes(8);
  for (int h = 0; h < 8; ++h)
    CHECK(s8[h] == std::pow(2.0, -(h + 1)));
  std::vector<double> s6 = alibiSlopes(6);
  const double e6[6] = {1. / 4, 1. / 16, 1. / 64, 1. / 256, 1. / 2, 1. / 8};
  for (int h = 0; h < 6; ++h)
    CHECK(std::fabs(s6[h] - e6[h]) < 1e-15);
  // Two heads: slopes 2^-4 and 2^-8; query rows sit at positions 1 and 2.
  const float m0 = 1.0f / 16, m1 = 1.0f / 256;
  CHECK(alibiBias(2, 2, 3, -1) == (Tensor{-m0, 0, m0, -2 * m0, -m0, 0, //
                                          -m1, 0, m1, -2 * m1, -m1, 0}));

  // Metrics and determinism.
  CHECK(maxRelError(Tensor{1, 2.5f}, Tensor{1, 2}) == 0.25);
  CHECK(maxAbsError(Tensor{NAN}, Tensor{0}) == INFINITY);
  CHECK(randomTensor(16, 1.0f, 7) == randomTensor(16, 1.0f, 7));
  CHECK(randomTensor(16, 1.0f, 7) != randomTensor(16, 1.0f, 8));
}

} // namespace

int main() {
  testWorkedAttention();
  testLayerNorm();
  testCausal();
  testGqa();
  testRope();
  testOthers();
  if (failures) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "ok\n";
  return 0;
}
