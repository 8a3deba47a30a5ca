//===- Reference.cpp - Naive reference semantics of the attn ops ----------===//
//
// See Reference.h. Every loop follows the op's definition literally; the
// only numeric policy is "double inside, float on store".
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace attn {
namespace ref {

namespace {

// Throws rather than asserts: the tests are often built with NDEBUG.
void check(bool condition, const char *what) {
  if (!condition)
    throw std::invalid_argument(std::string("attn::ref: ") + what);
}

bool hasSize(const std::vector<float> &v, int64_t n) {
  return n >= 0 && v.size() == static_cast<size_t>(n);
}

// The number of valid keys, shared by attention and alibiBias so that the
// causal alignment of the two always agrees.
int64_t validKeys(int64_t seqKv, int64_t kvLen) {
  return kvLen < 0 ? seqKv : std::min(kvLen, seqKv);
}

} // namespace

//===----------------------------------------------------------------------===//
// Embeddings and projections
//===----------------------------------------------------------------------===//

std::vector<float> embedding(const std::vector<float> &table, int64_t vocab,
                             int64_t dim, const std::vector<int64_t> &ids) {
  check(vocab > 0 && dim >= 0, "embedding: bad table shape");
  check(hasSize(table, vocab * dim), "embedding: table size != vocab * dim");
  std::vector<float> out(ids.size() * dim);
  for (size_t s = 0; s < ids.size(); ++s) {
    int64_t row = std::clamp<int64_t>(ids[s], 0, vocab - 1);
    std::copy_n(table.begin() + row * dim, dim, out.begin() + s * dim);
  }
  return out;
}

std::vector<float> linear(const std::vector<float> &x, int64_t m, int64_t k,
                          const std::vector<float> &weight, int64_t n,
                          WeightLayout layout, const float *bias) {
  check(hasSize(x, m * k), "linear: x size != m * k");
  check(hasSize(weight, k * n), "linear: weight size != k * n");
  std::vector<float> out(m * n);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double acc = bias ? static_cast<double>(bias[c]) : 0.0;
      for (int64_t i = 0; i < k; ++i) {
        float w = layout == WeightLayout::OutIn ? weight[c * k + i]
                                                : weight[i * n + c];
        acc += static_cast<double>(x[r * k + i]) * w;
      }
      out[r * n + c] = static_cast<float>(acc);
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Normalization and the residual stream
//===----------------------------------------------------------------------===//

std::vector<float> layerNorm(const std::vector<float> &x, int64_t rows,
                             int64_t d, const std::vector<float> &gamma,
                             const std::vector<float> &beta, double eps) {
  check(d > 0 && hasSize(x, rows * d), "layerNorm: x size != rows * d");
  check(hasSize(gamma, d) && hasSize(beta, d), "layerNorm: gamma/beta size");
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x.data() + r * d;
    double sum = 0.0;
    for (int64_t i = 0; i < d; ++i)
      sum += row[i];
    double mean = sum / d;
    // Two-pass variance: exact enough to be an oracle, unlike E[x^2]-E[x]^2.
    double sq = 0.0;
    for (int64_t i = 0; i < d; ++i)
      sq += (row[i] - mean) * (row[i] - mean);
    double inv = 1.0 / std::sqrt(sq / d + eps);
    for (int64_t i = 0; i < d; ++i)
      out[r * d + i] = static_cast<float>((row[i] - mean) * inv *
                                              static_cast<double>(gamma[i]) +
                                          beta[i]);
  }
  return out;
}

std::vector<float> rmsNorm(const std::vector<float> &x, int64_t rows,
                           int64_t d, const std::vector<float> &gamma,
                           double eps) {
  check(d > 0 && hasSize(x, rows * d), "rmsNorm: x size != rows * d");
  check(hasSize(gamma, d), "rmsNorm: gamma size != d");
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x.data() + r * d;
    double sq = 0.0;
    for (int64_t i = 0; i < d; ++i)
      sq += static_cast<double>(row[i]) * row[i];
    double inv = 1.0 / std::sqrt(sq / d + eps);
    for (int64_t i = 0; i < d; ++i)
      out[r * d + i] =
          static_cast<float>(row[i] * inv * static_cast<double>(gamma[i]));
  }
  return out;
}

std::vector<float> residualAdd(const std::vector<float> &a,
                               const std::vector<float> &b) {
  check(a.size() == b.size(), "residualAdd: size mismatch");
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = static_cast<float>(static_cast<double>(a[i]) + b[i]);
  return out;
}

//===----------------------------------------------------------------------===//
// Positional encodings
//===----------------------------------------------------------------------===//

std::vector<float> rope(const std::vector<float> &x, int64_t seq,
                        int64_t features, int64_t headDim, double theta,
                        RopePairing pairing, int64_t offset) {
  check(headDim > 0 && headDim % 2 == 0, "rope: headDim must be even");
  check(features % headDim == 0, "rope: headDim must divide features");
  check(theta > 0, "rope: theta must be positive");
  check(hasSize(x, seq * features), "rope: x size != seq * features");
  int64_t half = headDim / 2;
  std::vector<float> out(x);
  for (int64_t s = 0; s < seq; ++s) {
    double p = static_cast<double>(offset + s);
    for (int64_t base = s * features; base < (s + 1) * features;
         base += headDim) {
      for (int64_t i = 0; i < half; ++i) {
        double angle = p * std::pow(theta, -2.0 * i / headDim);
        double c = std::cos(angle), sn = std::sin(angle);
        int64_t ia = base + (pairing == RopePairing::RotateHalf ? i : 2 * i);
        int64_t ib =
            base + (pairing == RopePairing::RotateHalf ? i + half : 2 * i + 1);
        double a = x[ia], b = x[ib];
        out[ia] = static_cast<float>(a * c - b * sn);
        out[ib] = static_cast<float>(b * c + a * sn);
      }
    }
  }
  return out;
}

std::vector<float> sinusoidalPE(const std::vector<float> &x, int64_t seq,
                                int64_t d, double base, int64_t offset) {
  check(d > 0 && d % 2 == 0, "sinusoidalPE: d must be even");
  check(hasSize(x, seq * d), "sinusoidalPE: x size != seq * d");
  std::vector<float> out(x.size());
  for (int64_t s = 0; s < seq; ++s) {
    double p = static_cast<double>(offset + s);
    for (int64_t i = 0; i < d / 2; ++i) {
      double angle = p / std::pow(base, 2.0 * i / d);
      int64_t e = s * d + 2 * i;
      out[e] = static_cast<float>(x[e] + std::sin(angle));
      out[e + 1] = static_cast<float>(x[e + 1] + std::cos(angle));
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

double defaultScale(int64_t headDim) {
  check(headDim > 0, "defaultScale: headDim must be positive");
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

std::vector<float> attention(const std::vector<float> &q, int64_t seqQ,
                             const std::vector<float> &k,
                             const std::vector<float> &v, int64_t seqKv,
                             const AttentionParams &params) {
  int64_t heads = params.heads, kvHeads = params.kvHeads;
  int64_t headDim = params.headDim;
  check(heads > 0 && kvHeads > 0 && heads % kvHeads == 0,
        "attention: kvHeads must divide heads");
  check(headDim > 0, "attention: headDim must be positive");
  int64_t qWidth = heads * headDim, kvWidth = kvHeads * headDim;
  check(hasSize(q, seqQ * qWidth), "attention: q size");
  check(hasSize(k, seqKv * kvWidth), "attention: k size");
  check(hasSize(v, seqKv * kvWidth), "attention: v size");
  check(!params.bias || params.biasHeads == 1 || params.biasHeads == heads,
        "attention: biasHeads must be 1 or heads");

  int64_t group = heads / kvHeads;
  int64_t len = validKeys(seqKv, params.kvLen);
  std::vector<float> out(seqQ * qWidth, 0.0f);
  std::vector<double> scores(std::max<int64_t>(len, 0));
  for (int64_t h = 0; h < heads; ++h) {
    int64_t g = h / group;
    const float *bias =
        params.bias ? params.bias + (params.biasHeads == 1 ? 0 : h) * seqQ *
                                        seqKv
                    : nullptr;
    for (int64_t i = 0; i < seqQ; ++i) {
      // Visible keys are [0, visible).
      int64_t visible = len;
      if (params.causal)
        visible = std::min(len, len - seqQ + i + 1);
      if (visible <= 0)
        continue; // No visible key: the row stays zero.
      const float *qRow = q.data() + i * qWidth + h * headDim;
      double maxScore = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < visible; ++j) {
        const float *kRow = k.data() + j * kvWidth + g * headDim;
        double dot = 0.0;
        for (int64_t c = 0; c < headDim; ++c)
          dot += static_cast<double>(qRow[c]) * kRow[c];
        double s = params.scale * dot;
        if (bias)
          s += bias[i * seqKv + j];
        scores[j] = s;
        maxScore = std::max(maxScore, s);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < visible; ++j) {
        scores[j] = std::exp(scores[j] - maxScore);
        sum += scores[j];
      }
      for (int64_t c = 0; c < headDim; ++c) {
        double acc = 0.0;
        for (int64_t j = 0; j < visible; ++j)
          acc += scores[j] / sum * v[j * kvWidth + g * headDim + c];
        out[i * qWidth + h * headDim + c] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

std::vector<double> alibiSlopes(int64_t heads) {
  check(heads > 0, "alibiSlopes: heads must be positive");
  // HF build_alibi_tensor: slopes of the closest power of two n below heads,
  // base^1..base^n with base = 2^(-8/n); the remaining heads take the odd
  // powers of 2^(-4/n) (i.e. every other slope of 2n heads).
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  std::vector<double> slopes;
  double base = std::pow(2.0, -8.0 / n);
  for (int64_t p = 1; p <= n; ++p)
    slopes.push_back(std::pow(base, static_cast<double>(p)));
  double extraBase = std::pow(2.0, -4.0 / n);
  int64_t remaining = std::min(n, heads - n);
  for (int64_t p = 1; p < 1 + 2 * remaining; p += 2)
    slopes.push_back(std::pow(extraBase, static_cast<double>(p)));
  return slopes;
}

std::vector<float> alibiBias(int64_t heads, int64_t seqQ, int64_t seqKv,
                             int64_t kvLen) {
  check(seqQ >= 0 && seqKv >= 0, "alibiBias: negative size");
  std::vector<double> slopes = alibiSlopes(heads);
  int64_t len = validKeys(seqKv, kvLen);
  std::vector<float> out(heads * seqQ * seqKv);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < seqQ; ++i) {
      int64_t pos = len - seqQ + i;
      for (int64_t j = 0; j < seqKv; ++j)
        out[(h * seqQ + i) * seqKv + j] =
            static_cast<float>(-slopes[h] * static_cast<double>(pos - j));
    }
  return out;
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

std::vector<float> kvCacheAppend(const std::vector<float> &cache,
                                 int64_t maxSeq, int64_t features,
                                 const std::vector<float> &update,
                                 int64_t rows, int64_t position) {
  check(hasSize(cache, maxSeq * features), "kvCacheAppend: cache size");
  check(hasSize(update, rows * features), "kvCacheAppend: update size");
  check(position >= 0 && position + rows <= maxSeq,
        "kvCacheAppend: rows do not fit in the cache");
  std::vector<float> out(cache);
  std::copy(update.begin(), update.end(), out.begin() + position * features);
  return out;
}

std::vector<float> kvCacheRead(const std::vector<float> &cache,
                               int64_t features, int64_t length) {
  check(features > 0 && length >= 0 &&
            static_cast<size_t>(length * features) <= cache.size(),
        "kvCacheRead: length exceeds the cache");
  return std::vector<float>(cache.begin(), cache.begin() + length * features);
}

//===----------------------------------------------------------------------===//
// Activations and softmax
//===----------------------------------------------------------------------===//

std::vector<float> gelu(const std::vector<float> &x, GeluApproximation approx) {
  const double kInvSqrt2 = 1.0 / std::sqrt(2.0);
  // M_PI is not standard C++; acos(-1) is pi to the last bit.
  const double kSqrt2OverPi = std::sqrt(2.0 / std::acos(-1.0));
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double t = approx == GeluApproximation::Erf
                   ? std::erf(v * kInvSqrt2)
                   : std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v));
    out[i] = static_cast<float>(0.5 * v * (1.0 + t));
  }
  return out;
}

namespace {
double siluScalar(double v) { return v / (1.0 + std::exp(-v)); }
} // namespace

std::vector<float> silu(const std::vector<float> &x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = static_cast<float>(siluScalar(x[i]));
  return out;
}

std::vector<float> swiglu(const std::vector<float> &gate,
                          const std::vector<float> &up) {
  check(gate.size() == up.size(), "swiglu: size mismatch");
  std::vector<float> out(gate.size());
  for (size_t i = 0; i < gate.size(); ++i)
    out[i] = static_cast<float>(siluScalar(gate[i]) * up[i]);
  return out;
}

std::vector<float> softmax(const std::vector<float> &x, int64_t rows,
                           int64_t d) {
  check(d > 0 && hasSize(x, rows * d), "softmax: x size != rows * d");
  std::vector<float> out(x.size());
  std::vector<double> e(d);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x.data() + r * d;
    double maxVal = *std::max_element(row, row + d);
    double sum = 0.0;
    for (int64_t i = 0; i < d; ++i) {
      e[i] = std::exp(row[i] - maxVal);
      sum += e[i];
    }
    for (int64_t i = 0; i < d; ++i)
      out[r * d + i] = static_cast<float>(e[i] / sum);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Test helpers
//===----------------------------------------------------------------------===//

double maxAbsError(const std::vector<float> &a, const std::vector<float> &b) {
  const double kInf = std::numeric_limits<double>::infinity();
  if (a.size() != b.size())
    return kInf;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
    // Matching infinities are equal; anything else non-finite is a failure.
    if (a[i] == b[i])
      diff = 0.0;
    if (std::isnan(diff))
      return kInf;
    worst = std::max(worst, diff);
  }
  return worst;
}

double maxRelError(const std::vector<float> &actual,
                   const std::vector<float> &expected) {
  double err = maxAbsError(actual, expected);
  double largest = 0.0;
  for (float e : expected)
    largest = std::max(largest, std::fabs(static_cast<double>(e)));
  // Floor the denominator: an all-zero expectation makes this absolute.
  const double kTiny = std::numeric_limits<float>::min();
  return err / std::max(largest, kTiny);
}

std::vector<float> randomTensor(size_t n, float stddev, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<float> out(n);
  for (float &value : out)
    value = static_cast<float>(dist(engine));
  return out;
}

} // namespace ref
} // namespace attn
