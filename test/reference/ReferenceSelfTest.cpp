//===- ReferenceSelfTest.cpp - Checks of the reference oracle -------------===//
//
// Checks attn::ref against worked examples and structural identities that are
// computed independently of the function under test. Prints "ok" and exits 0
// when every check passes. Uses its own CHECK (not assert) so that it still
// checks under NDEBUG.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
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
      std::cerr << __FILE__ << ":" << __LINE__                                 \
                << ": " #actual " vs " #expected << ": max abs error " << err_ \
                << " > " << (tol) << "\n";                                     \
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
  Tensor k = {0.5f, 0.2f, 0.3f, 0.1f, 0.8f, 0.1f,
              0.4f, 0.2f, 0.1f, 0.6f, 0.2f, 0.3f};
  Tensor v = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f,
              0.7f, 0.8f, 0.2f, 0.1f, 0.4f, 0.3f};
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
  CHECK_NEAR(
      rmsNorm(x, 1, 4, ones, 0.0),
      (Tensor{float(2 / rms), float(4 / rms), float(6 / rms), float(8 / rms)}),
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
        int64_t b =
            base + (pairing == RopePairing::RotateHalf ? i + half : 2 * i + 1);
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
  Tensor rh =
      rope(x, seq, features, headDim, 10000.0, RopePairing::RotateHalf, 5);
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
  CHECK_NEAR(pe,
             (Tensor{float(std::sin(1.0)), float(std::cos(1.0)),
                     float(std::sin(0.01)), float(std::cos(0.01))}),
             0.0);

  // Embedding, with clamping.
  Tensor table = {0, 1, 10, 11, 20, 21};
  CHECK(embedding(table, 3, 2, {2, 0, -5, 9}) ==
        (Tensor{20, 21, 0, 1, 0, 1, 20, 21}));

  // linear: both layouts of the same matrix agree, and match by hand.
  Tensor x = {1, 2, 3, 4, 5, 6};       // [2, 3]
  Tensor wOutIn = {1, 0, -1, 2, 1, 0}; // [2, 3]
  Tensor wInOut = {1, 2, 0, 1, -1, 0}; // its transpose, [3, 2]
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

AttentionParams heads(int64_t h, int64_t kv, int64_t headDim, bool causal) {
  AttentionParams p;
  p.heads = h;
  p.kvHeads = kv;
  p.headDim = headDim;
  p.scale = defaultScale(headDim);
  p.causal = causal;
  return p;
}

// Rows [first, last) of a [rows, width] matrix.
Tensor sliceRows(const Tensor &m, int64_t width, int64_t first, int64_t last) {
  return Tensor(m.begin() + first * width, m.begin() + last * width);
}

void testSlidingWindow() {
  const int64_t h = 2, kv = 1, hd = 4, seqKv = 9, seqQ = 4, W = 3;
  Tensor q = randomTensor(seqQ * h * hd, 1.5f, 30);
  Tensor k = randomTensor(seqKv * kv * hd, 1.5f, 31);
  Tensor v = randomTensor(seqKv * kv * hd, 1.0f, 32);
  AttentionParams p = heads(h, kv, hd, true);
  p.window = W;
  Tensor out = attention(q, seqQ, k, v, seqKv, p);
  // Second composition: query i (position seqKv - seqQ + i) alone against
  // the keys (pos - W, pos] sliced out, with no mask at all.
  AttentionParams open = heads(h, kv, hd, false);
  for (int64_t i = 0; i < seqQ; ++i) {
    int64_t pos = seqKv - seqQ + i;
    int64_t first = std::max<int64_t>(0, pos - W + 1);
    Tensor qi = sliceRows(q, h * hd, i, i + 1);
    Tensor expected =
        attention(qi, 1, sliceRows(k, kv * hd, first, pos + 1),
                  sliceRows(v, kv * hd, first, pos + 1), pos + 1 - first, open);
    CHECK_NEAR(sliceRows(out, h * hd, i, i + 1), expected, 0.0);
  }
  // A third: the mask as an additive -inf bias, the HF form
  // (kv_idx > q_idx - sliding_window and kv_idx <= q_idx).
  Tensor bias(seqQ * seqKv, 0.0f);
  for (int64_t i = 0; i < seqQ; ++i)
    for (int64_t j = 0; j < seqKv; ++j) {
      int64_t pos = seqKv - seqQ + i;
      if (!(j > pos - W && j <= pos))
        bias[i * seqKv + j] = -INFINITY;
    }
  AttentionParams biased = heads(h, kv, hd, false);
  biased.bias = bias.data();
  CHECK_NEAR(out, attention(q, seqQ, k, v, seqKv, biased), 1e-6);
  // Window 1: every query sees itself only.
  p.window = 1;
  Tensor self = attention(sliceRows(q, h * hd, 0, 1), 1, k, v, seqKv, p);
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t c = 0; c < hd; ++c)
      CHECK(self[hh * hd + c] == v[(seqKv - 1) * hd + c]);
  // A window as long as the sequence changes nothing.
  p.window = seqKv;
  AttentionParams plain = heads(h, kv, hd, true);
  CHECK_NEAR(attention(q, seqQ, k, v, seqKv, p),
             attention(q, seqQ, k, v, seqKv, plain), 0.0);
}

void testAlibiAttention() {
  // HF's slopes, hand-written from build_alibi_tensor: 8 heads are
  // 2^-1 .. 2^-8; 12 heads add float32(2^-0.5)^(1, 3, 5, 7) computed in
  // float32 (0x1.6a09e6p-1, 0x1.6a09e6p-2, 0x1.6a09e4p-3, 0x1.6a09e4p-4).
  std::vector<double> s12 = alibiSlopes(12);
  CHECK(s12.size() == 12);
  for (int hh = 0; hh < 8; ++hh)
    CHECK(s12[hh] == std::pow(2.0, -(hh + 1)));
  const double extra[4] = {0x1.6a09e6p-1, 0x1.6a09e6p-2, 0x1.6a09e4p-3,
                           0x1.6a09e4p-4};
  for (int hh = 0; hh < 4; ++hh)
    CHECK(s12[8 + hh] == extra[hh]);
  CHECK(alibiSlopes(1) == std::vector<double>{1.0 / 256});

  const int64_t h = 3, hd = 4, seqKv = 7, seqQ = 3;
  Tensor q = randomTensor(seqQ * h * hd, 1.0f, 40);
  Tensor k = randomTensor(seqKv * h * hd, 1.0f, 41);
  Tensor v = randomTensor(seqKv * h * hd, 1.0f, 42);
  std::vector<double> slopes = alibiSlopes(h);
  AttentionParams p = heads(h, h, hd, true);
  p.alibiSlopes = slopes.data();
  Tensor out = attention(q, seqQ, k, v, seqKv, p);
  // HF BLOOM adds slope * j (the key position) rather than
  // -slope * (pos - j): the same softmax.
  Tensor hfBias(h * seqQ * seqKv);
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t i = 0; i < seqQ; ++i)
      for (int64_t j = 0; j < seqKv; ++j)
        hfBias[(hh * seqQ + i) * seqKv + j] =
            static_cast<float>(slopes[hh] * j);
  AttentionParams biased = heads(h, h, hd, true);
  biased.bias = hfBias.data();
  biased.biasHeads = h;
  CHECK_NEAR(out, attention(q, seqQ, k, v, seqKv, biased), 1e-6);
  Tensor alibi = alibiBias(h, seqQ, seqKv, -1);
  biased.bias = alibi.data();
  CHECK_NEAR(out, attention(q, seqQ, k, v, seqKv, biased), 1e-6);
  // And it matters.
  CHECK(maxAbsError(out, attention(q, seqQ, k, v, seqKv,
                                   heads(h, h, hd, true))) > 1e-2);
}

void testRelativeBias() {
  // Hand-computed T5 buckets (relative position = key - query).
  struct Case {
    int64_t rp;
    bool bidirectional;
    int64_t bucket;
  };
  const Case cases[] = {
      {0, false, 0},     {-1, false, 1},     {-15, false, 15},
      {-16, false, 16},  {-20, false, 17},   {-127, false, 31},
      {-128, false, 31}, {-1000, false, 31}, {5, false, 0},
      {3, true, 19},     {-3, true, 3},      {8, true, 24},
      {-20, true, 10},   {200, true, 31},    {-200, true, 15},
  };
  for (const Case &c : cases)
    CHECK(t5RelativePositionBucket(c.rp, c.bidirectional, 32, 128) == c.bucket);
  // 16 buckets, max distance 32, decoder: exact below 8, then
  // 8 + int(log(n / 8) / log(4) * 8).
  CHECK(t5RelativePositionBucket(-9, false, 16, 32) == 8);
  CHECK(t5RelativePositionBucket(-16, false, 16, 32) == 12);
  CHECK(t5RelativePositionBucket(-31, false, 16, 32) == 15);

  const int64_t h = 2, hd = 4, seq = 24, buckets = 8, maxDistance = 16;
  Tensor q = randomTensor(seq * h * hd, 1.0f, 50);
  Tensor k = randomTensor(seq * h * hd, 1.0f, 51);
  Tensor v = randomTensor(seq * h * hd, 1.0f, 52);
  Tensor table = randomTensor(buckets * h, 2.0f, 53);
  AttentionParams p = heads(h, h, hd, true);
  p.relativeBias = table.data();
  p.relativeBuckets = buckets;
  p.relativeMaxDistance = maxDistance;
  Tensor out = attention(q, seq, k, v, seq, p);
  // Second composition: the bias tensor of HF T5Attention.compute_bias with
  // its buckets written out by hand for 8 buckets / distance 16 (decoder):
  // n < 4 -> n; else 4 + int(log(n / 4) / log(4) * 4), at most 7.
  auto handBucket = [](int64_t n) -> int64_t {
    if (n < 4)
      return n;
    if (n < 6)
      return 4; // log(n/4)/log(4)*4 < 1 for n < 5.66
    if (n < 8)
      return 5;
    if (n < 12)
      return 6; // 2 at n = 8; 3 at n = 11.31
    return 7;
  };
  Tensor bias(h * seq * seq);
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j)
        bias[(hh * seq + i) * seq + j] =
            table[handBucket(std::max<int64_t>(i - j, 0)) * h + hh];
  AttentionParams biased = heads(h, h, hd, true);
  biased.bias = bias.data();
  biased.biasHeads = h;
  CHECK_NEAR(out, attention(q, seq, k, v, seq, biased), 1e-6);
}

void testRopeFrequencies() {
  const int64_t seq = 5, headDim = 8, features = 24;
  Tensor x = randomTensor(seq * features, 1.0f, 60);
  // Full rotary, no scaling: exactly rope().
  for (RopePairing pairing :
       {RopePairing::RotateHalf, RopePairing::Interleaved})
    CHECK_NEAR(ropeWithFrequencies(x, seq, features, headDim,
                                   ropeFrequencies(500.0, headDim), 1.0,
                                   pairing, 3),
               rope(x, seq, features, headDim, 500.0, pairing, 3), 0.0);

  // Partial rotary: the first 4 features of each head rotate as rope() of a
  // 4-wide head would; the other 4 pass through untouched.
  const int64_t rot = 4, heads = features / headDim;
  auto part = [&](const Tensor &t, int64_t from, int64_t width) {
    Tensor out;
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t hh = 0; hh < heads; ++hh)
        for (int64_t c = 0; c < width; ++c)
          out.push_back(t[s * features + hh * headDim + from + c]);
    return out;
  };
  for (RopePairing pairing :
       {RopePairing::RotateHalf, RopePairing::Interleaved}) {
    Tensor y =
        ropeWithFrequencies(x, seq, features, headDim,
                            ropeFrequencies(100.0, rot), 1.0, pairing, 2);
    CHECK_NEAR(part(y, 0, rot),
               rope(part(x, 0, rot), seq, heads * rot, rot, 100.0, pairing, 2),
               0.0);
    CHECK(part(y, rot, headDim - rot) == part(x, rot, headDim - rot));
    // The attention factor scales the rotated features only.
    Tensor z =
        ropeWithFrequencies(x, seq, features, headDim,
                            ropeFrequencies(100.0, rot), 1.25, pairing, 2);
    Tensor scaled = part(y, 0, rot);
    for (float &value : scaled)
      value *= 1.25f;
    CHECK_NEAR(part(z, 0, rot), scaled, 1e-6);
    CHECK(part(z, rot, headDim - rot) == part(x, rot, headDim - rot));
  }
  // Position 4, frequency 1/4: exactly one radian.
  CHECK_NEAR(ropeWithFrequencies(Tensor{1, 0}, 1, 2, 2, {0.25}, 1.0,
                                 RopePairing::Interleaved, 4),
             (Tensor{float(std::cos(1.0)), float(std::sin(1.0))}), 0.0);
}

double relDiff(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

void testRopeScaling() {
  const double theta = 10000.0, kPi = std::acos(-1.0);
  const int64_t dim = 16;
  std::vector<double> plain(dim / 2);
  for (int i = 0; i < dim / 2; ++i)
    plain[i] = 1.0 / std::pow(theta, 2.0 * i / dim); // HF's 1 / base^(2i/d)
  double af = 0;

  RopeScaling none;
  std::vector<double> f = ropeScaledFrequencies(theta, dim, none, 0, af);
  for (int i = 0; i < dim / 2; ++i)
    CHECK(relDiff(f[i], plain[i]) < 1e-15);
  CHECK(af == 1.0);

  RopeScaling linear;
  linear.type = RopeScaling::Type::Linear;
  linear.factor = 4;
  f = ropeScaledFrequencies(theta, dim, linear, 0, af);
  for (int i = 0; i < dim / 2; ++i)
    CHECK(relDiff(f[i], plain[i] / 4) < 1e-15);
  CHECK(af == 1.0);

  // Dynamic NTK: nothing changes up to max_position_embeddings; beyond it
  // the base is theta * (factor * L / max - (factor - 1))^(d / (d - 2)).
  RopeScaling dynamic;
  dynamic.type = RopeScaling::Type::Dynamic;
  dynamic.factor = 2;
  dynamic.maxPositions = 32;
  for (int64_t len : {1, 31, 32}) {
    f = ropeScaledFrequencies(theta, dim, dynamic, len, af);
    for (int i = 0; i < dim / 2; ++i)
      CHECK(relDiff(f[i], plain[i]) < 1e-15);
  }
  f = ropeScaledFrequencies(theta, dim, dynamic, 64, af);
  double grown = theta * std::pow(2.0 * 64 / 32 - 1, 16.0 / 14.0); // 3^(8/7)
  for (int i = 0; i < dim / 2; ++i)
    CHECK(relDiff(f[i], std::pow(grown, -2.0 * i / dim)) < 1e-14);
  CHECK(af == 1.0);

  // YaRN, dim 16, theta 1e4, original 64, factor 4, beta 32/1:
  // correction dims 16 ln(64 / (b 2 pi)) / (2 ln 1e4) = -0.994 (b = 32) and
  // 2.016 (b = 1), truncated to [0, 3]: ramp i / 3; frequency i blends
  // plain / 4 (weight ramp) and plain (weight 1 - ramp).
  RopeScaling yarn;
  yarn.type = RopeScaling::Type::Yarn;
  yarn.factor = 4;
  yarn.originalMaxPositions = 64;
  f = ropeScaledFrequencies(theta, dim, yarn, 0, af);
  for (int i = 0; i < dim / 2; ++i) {
    double ramp = std::min(i / 3.0, 1.0);
    CHECK(relDiff(f[i], plain[i] / 4 * ramp + plain[i] * (1 - ramp)) < 1e-14);
  }
  CHECK(relDiff(af, 0.1 * std::log(4.0) + 1) < 1e-15);
  CHECK(f[0] == plain[0] || relDiff(f[0], plain[0]) < 1e-15);
  // Without truncation the ramp ends at 2.016 (= 16 ln(32 / pi) / (2 ln 1e4)).
  yarn.truncate = false;
  f = ropeScaledFrequencies(theta, dim, yarn, 0, af);
  double high = 16 * std::log(64 / (2 * kPi)) / (2 * std::log(theta));
  for (int i = 0; i < dim / 2; ++i) {
    double ramp = std::min(i / high, 1.0);
    CHECK(relDiff(f[i], plain[i] / 4 * ramp + plain[i] * (1 - ramp)) < 1e-14);
  }
  // mscale / mscale_all_dim: the ratio of 0.1 m ln(factor) + 1 (both set),
  // mscale alone is ignored; attention_factor wins when given.
  yarn.mscale = 0.707;
  ropeScaledFrequencies(theta, dim, yarn, 0, af);
  CHECK(relDiff(af, 0.1 * std::log(4.0) + 1) < 1e-15);
  yarn.mscaleAllDim = 1.0;
  ropeScaledFrequencies(theta, dim, yarn, 0, af);
  CHECK(relDiff(af, (0.0707 * std::log(4.0) + 1) / (0.1 * std::log(4.0) + 1)) <
        1e-15);
  yarn.attentionFactor = 0.5;
  ropeScaledFrequencies(theta, dim, yarn, 0, af);
  CHECK(af == 0.5);
  // factor <= 1: get_mscale is 1.
  RopeScaling unit = yarn;
  unit.factor = 1;
  unit.attentionFactor = std::numeric_limits<double>::quiet_NaN();
  unit.mscale = unit.mscaleAllDim = 0;
  ropeScaledFrequencies(theta, dim, unit, 0, af);
  CHECK(af == 1.0);

  // Llama 3.1, factor 8, low 1, high 4, original 64: wavelengths 2 pi
  // 1e4^(i/8) are 6.3, 19.9, 62.8, 199, ...: frequency 0 is high (kept),
  // 1 and 2 are medium (smoothed with s = (64 / wavelen - 1) / 3), 3.. low
  // (divided by 8).
  RopeScaling llama3;
  llama3.type = RopeScaling::Type::Llama3;
  llama3.factor = 8;
  llama3.lowFreqFactor = 1;
  llama3.highFreqFactor = 4;
  llama3.originalMaxPositions = 64;
  f = ropeScaledFrequencies(theta, dim, llama3, 0, af);
  CHECK(relDiff(f[0], plain[0]) < 1e-15);
  for (int i = 1; i <= 2; ++i) {
    double s = (64 / (2 * kPi / plain[i]) - 1) / 3;
    CHECK(relDiff(f[i], (1 - s) * plain[i] / 8 + s * plain[i]) < 1e-14);
  }
  for (int i = 3; i < dim / 2; ++i)
    CHECK(relDiff(f[i], plain[i] / 8) < 1e-15);
  CHECK(af == 1.0);
}

void testNewActivations() {
  Tensor x = {-2.0f, -0.0f, 0.5f, 3.0f};
  CHECK(relu(x) == (Tensor{0.0f, -0.0f, 0.5f, 3.0f}));
  Tensor up = {1.5f, 2.0f, -1.0f, 0.25f};
  for (GeluApproximation a :
       {GeluApproximation::Erf, GeluApproximation::Tanh}) {
    Tensor g = gelu(x, a);
    Tensor expected(4);
    for (int i = 0; i < 4; ++i)
      expected[i] = g[i] * up[i];
    CHECK_NEAR(geglu(x, up, a), expected, 1e-6);
  }
}
// Gemma 2's attn_logit_softcapping: cap * tanh(scale q.k / cap) before the
// mask, computed here per query from the dot products by hand.
void testSoftcap() {
  const int64_t h = 2, kv = 1, hd = 4, seq = 5;
  const double cap = 1.5, scale = 0.7;
  Tensor q = randomTensor(seq * h * hd, 2.0f, 40);
  Tensor k = randomTensor(seq * kv * hd, 2.0f, 41);
  Tensor v = randomTensor(seq * kv * hd, 1.0f, 42);
  AttentionParams p;
  p.heads = h, p.kvHeads = kv, p.headDim = hd, p.scale = scale;
  p.causal = true, p.window = 3, p.softcap = cap;
  Tensor out = attention(q, seq, k, v, seq, p);
  Tensor expected(out.size());
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t i = 0; i < seq; ++i) {
      std::vector<double> e;
      double sum = 0;
      for (int64_t j = 0; j < seq; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < hd; ++c)
          dot += static_cast<double>(q[(i * h + hh) * hd + c]) * k[j * hd + c];
        bool visible = j <= i && j > i - 3;
        e.push_back(visible ? std::exp(cap * std::tanh(scale * dot / cap)) : 0);
        sum += e.back();
      }
      for (int64_t c = 0; c < hd; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < seq; ++j)
          acc += e[j] / sum * v[j * hd + c];
        expected[(i * h + hh) * hd + c] = static_cast<float>(acc);
      }
    }
  CHECK_NEAR(out, expected, 1e-6);
  // The cap matters here (scores reach several times the cap), and a huge
  // cap is the identity.
  AttentionParams plain = p;
  plain.softcap = 0;
  CHECK(maxAbsError(attention(q, seq, k, v, seq, plain), out) > 1e-2);
  p.softcap = 1e9;
  CHECK_NEAR(attention(q, seq, k, v, seq, p),
             attention(q, seq, k, v, seq, plain), 1e-6);
}

// The routing and experts of qwen3_moe and mixtral (moeRouter with
// SoftmaxTopK, moeExperts with Swiglu) on a case worked by hand: two tokens
// x0 = [1, 0], x1 = [0, 1], four experts, top 2, router rows [2, 0],
// [1, 1], [1, 1], [0, 3] (logits [2, 1, 1, 0] and [0, 1, 1, 3]: experts 1
// and 2 tie for second place, and 1, the lower, is taken). With E = e^1:
// token 0 takes experts 0 and 1 with p = [E^2, E] / (E + 1)^2, or [E, 1] /
// (E + 1) renormalized; token 1 experts 3 and 1 with p = [E^3, E] / (1 + 2E
// + E^3), or [E^2, 1] / (E^2 + 1). Expert e has gate = down = I and up =
// (e + 1) I (ffn 2), so it maps [1, 0] to [silu(1) (e + 1), 0]; and the
// results, sum_j w_j silu(1) (e_j + 1), by explicit arithmetic.
void testMoeSoftmaxTopK() {
  const double E = std::exp(1.0), silu1 = E / (E + 1);
  Tensor x = {1, 0, 0, 1};
  Tensor router = {2, 0, 1, 1, 1, 1, 0, 3};
  Tensor gate, up, down;
  for (int e = 0; e < 4; ++e) {
    float u = static_cast<float>(e + 1);
    Tensor id = {1, 0, 0, 1}, scaled = {u, 0, 0, u};
    gate.insert(gate.end(), id.begin(), id.end());
    up.insert(up.end(), scaled.begin(), scaled.end());
    down.insert(down.end(), id.begin(), id.end());
  }
  for (bool normalize : {false, true}) {
    MoeRouting r = moeRouter(x, 2, 2, router, 4, nullptr, 2,
                             MoeScoring::SoftmaxTopK, normalize);
    CHECK(r.experts == (std::vector<int32_t>{0, 1, 3, 1}));
    double z0 = (E + 1) * (E + 1), z1 = 1 + 2 * E + E * E * E;
    double w[4] = {E * E / z0, E / z0, E * E * E / z1, E / z1};
    if (normalize) {
      double s0 = w[0] + w[1], s1 = w[2] + w[3];
      w[0] /= s0, w[1] /= s0, w[2] /= s1, w[3] /= s1;
      // The closed forms.
      CHECK(std::fabs(w[0] - E / (E + 1)) < 1e-15);
      CHECK(std::fabs(w[2] - E * E / (E * E + 1)) < 1e-15);
    }
    CHECK_NEAR(r.weights, (Tensor{float(w[0]), float(w[1]), float(w[2]),
                                  float(w[3])}),
               1e-7);
    Tensor y = moeExperts(x, 2, 2, r, 2, gate, up, down, 4, 2,
                          MoeActivation::Swiglu);
    double y0 = silu1 * (w[0] * 1 + w[1] * 2), y1 = silu1 * (w[2] * 4 + w[3] * 2);
    CHECK_NEAR(y, (Tensor{float(y0), 0, 0, float(y1)}), 1e-6);
    // Taking expert 2 at the tie (the higher index) is far from it.
    double other0 = silu1 * (w[0] * 1 + w[1] * 3);
    CHECK(std::fabs(other0 - y[0]) > 0.05);
  }
  // The renormalized weights sum to 1; top 1 is weight 1, exactly.
  MoeRouting top1 = moeRouter(x, 2, 2, router, 4, nullptr, 1,
                              MoeScoring::SoftmaxTopK, true);
  CHECK(top1.experts == (std::vector<int32_t>{0, 3}));
  CHECK(top1.weights == (Tensor{1.0f, 1.0f}));
  // NaN ranks above every number: a NaN logit (through the bias) is chosen
  // first when the top k is taken of the logits; after a softmax it makes
  // the whole row NaN, never hidden.
  const float bias[4] = {0, 0, std::nanf(""), 0};
  MoeRouting nan = moeRouter(x, 2, 2, router, 4, bias, 2,
                             MoeScoring::TopKSoftmax, false);
  CHECK(nan.experts[0] == 2 && nan.experts[2] == 2);
  MoeRouting nanSoftmax = moeRouter(x, 2, 2, router, 4, bias, 2,
                                    MoeScoring::SoftmaxTopK, true);
  CHECK(std::isnan(nanSoftmax.weights[0]) && std::isnan(nanSoftmax.weights[3]));
}

} // namespace

int main() {
  testWorkedAttention();
  testLayerNorm();
  testCausal();
  testGqa();
  testRope();
  testOthers();
  testSlidingWindow();
  testSoftcap();
  testAlibiAttention();
  testRelativeBias();
  testRopeFrequencies();
  testRopeScaling();
  testNewActivations();
  testMoeSoftmaxTopK();
  if (failures) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "ok\n";
  return 0;
}
