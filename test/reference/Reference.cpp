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
      out[r * d + i] = static_cast<float>(
          (row[i] - mean) * inv * static_cast<double>(gamma[i]) + beta[i]);
  }
  return out;
}

std::vector<float> rmsNorm(const std::vector<float> &x, int64_t rows, int64_t d,
                           const std::vector<float> &gamma, double eps) {
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

std::vector<double> ropeFrequencies(double theta, int64_t rotaryDim) {
  check(rotaryDim > 0 && rotaryDim % 2 == 0,
        "ropeFrequencies: rotaryDim must be positive and even");
  check(theta > 0, "ropeFrequencies: theta must be positive");
  std::vector<double> invFreq(rotaryDim / 2);
  // The same expression as rope(), so that the two agree bit for bit.
  for (int64_t i = 0; i < rotaryDim / 2; ++i)
    invFreq[i] = std::pow(theta, -2.0 * i / rotaryDim);
  return invFreq;
}

std::vector<float> ropeWithFrequencies(const std::vector<float> &x, int64_t seq,
                                       int64_t features, int64_t headDim,
                                       const std::vector<double> &invFreq,
                                       double attentionFactor,
                                       RopePairing pairing, int64_t offset) {
  int64_t half = static_cast<int64_t>(invFreq.size());
  int64_t rotaryDim = 2 * half;
  check(headDim > 0 && features % headDim == 0,
        "ropeWithFrequencies: headDim must divide features");
  check(half > 0 && rotaryDim <= headDim,
        "ropeWithFrequencies: need 1 <= invFreq.size() <= headDim / 2");
  check(hasSize(x, seq * features),
        "ropeWithFrequencies: x size != seq * features");
  std::vector<float> out(x);
  for (int64_t s = 0; s < seq; ++s) {
    double p = static_cast<double>(offset + s);
    for (int64_t base = s * features; base < (s + 1) * features;
         base += headDim) {
      for (int64_t i = 0; i < half; ++i) {
        double angle = p * invFreq[i];
        double c = std::cos(angle) * attentionFactor;
        double sn = std::sin(angle) * attentionFactor;
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

std::vector<double> ropeScaledFrequencies(double theta, int64_t rotaryDim,
                                          const RopeScaling &sc, int64_t seqLen,
                                          double &attentionFactor) {
  check(rotaryDim > 0 && rotaryDim % 2 == 0,
        "ropeScaledFrequencies: rotaryDim must be positive and even");
  check(theta > 0, "ropeScaledFrequencies: theta must be positive");
  const double kPi = std::acos(-1.0);
  const int64_t half = rotaryDim / 2;
  const double dim = static_cast<double>(rotaryDim);
  auto powers = [&](double base) {
    // 1 / base^(2i/dim), as _compute_default_rope_parameters.
    std::vector<double> f(half);
    for (int64_t i = 0; i < half; ++i)
      f[i] = 1.0 / std::pow(base, 2.0 * i / dim);
    return f;
  };
  attentionFactor = 1.0;
  switch (sc.type) {
  case RopeScaling::Type::None:
    return powers(theta);
  case RopeScaling::Type::Linear: {
    check(sc.factor > 0, "ropeScaledFrequencies: linear factor must be > 0");
    std::vector<double> f = powers(theta);
    for (double &v : f)
      v /= sc.factor;
    return f;
  }
  case RopeScaling::Type::Dynamic: {
    check(sc.maxPositions > 0, "ropeScaledFrequencies: dynamic needs "
                               "maxPositions");
    check(rotaryDim > 2, "ropeScaledFrequencies: dynamic needs rotaryDim > 2");
    // seq_len = max(seq_len, max_position_embeddings); at or below it the
    // base is theta * 1^(...) = theta.
    double len = static_cast<double>(std::max(seqLen, sc.maxPositions));
    double base =
        theta * std::pow(sc.factor * len / sc.maxPositions - (sc.factor - 1),
                         dim / (dim - 2));
    return powers(base);
  }
  case RopeScaling::Type::Yarn: {
    check(sc.originalMaxPositions > 0,
          "ropeScaledFrequencies: yarn needs originalMaxPositions");
    double factor = sc.factor;
    auto getMscale = [](double scale, double mscale) {
      return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
    };
    if (!std::isnan(sc.attentionFactor))
      attentionFactor = sc.attentionFactor;
    else if (sc.mscale != 0 && sc.mscaleAllDim != 0)
      attentionFactor =
          getMscale(factor, sc.mscale) / getMscale(factor, sc.mscaleAllDim);
    else
      attentionFactor = getMscale(factor, 1.0);
    double betaFast = sc.betaFast != 0 ? sc.betaFast : 32.0;
    double betaSlow = sc.betaSlow != 0 ? sc.betaSlow : 1.0;
    auto correctionDim = [&](double rotations) {
      return dim * std::log(sc.originalMaxPositions / (rotations * 2 * kPi)) /
             (2 * std::log(theta));
    };
    double low = correctionDim(betaFast), high = correctionDim(betaSlow);
    if (sc.truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, dim - 1);
    if (low == high)
      high += 0.001; // "Prevent singularity"
    std::vector<double> f(half);
    for (int64_t i = 0; i < half; ++i) {
      double posFreq = std::pow(theta, 2.0 * i / dim);
      double extrapolation = 1.0 / posFreq;
      double interpolation = 1.0 / (factor * posFreq);
      double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      double extrapolationFactor = 1.0 - ramp;
      f[i] = interpolation * (1 - extrapolationFactor) +
             extrapolation * extrapolationFactor;
    }
    return f;
  }
  case RopeScaling::Type::LongRope: {
    check(sc.originalMaxPositions > 0,
          "ropeScaledFrequencies: longrope needs originalMaxPositions");
    check(static_cast<int64_t>(sc.shortFactor.size()) == half &&
              static_cast<int64_t>(sc.longFactor.size()) == half,
          "ropeScaledFrequencies: longrope needs rotaryDim / 2 short and "
          "long factors");
    // _compute_longrope_parameters: the explicit attention_factor, else
    // derived from factor and the original length.
    if (!std::isnan(sc.attentionFactor))
      attentionFactor = sc.attentionFactor;
    else if (sc.factor <= 1.0)
      attentionFactor = 1.0;
    else
      attentionFactor =
          std::sqrt(1.0 + std::log(sc.factor) /
                              std::log(static_cast<double>(
                                  sc.originalMaxPositions)));
    // `if seq_len and seq_len > original_max_position_embeddings`: strictly
    // greater; a call ending exactly at the original length stays short.
    const std::vector<double> &ext =
        seqLen > sc.originalMaxPositions ? sc.longFactor : sc.shortFactor;
    std::vector<double> f = powers(theta);
    for (int64_t i = 0; i < half; ++i)
      f[i] /= ext[i];
    return f;
  }
  case RopeScaling::Type::Llama3: {
    check(sc.originalMaxPositions > 0,
          "ropeScaledFrequencies: llama3 needs originalMaxPositions");
    check(sc.highFreqFactor != sc.lowFreqFactor,
          "ropeScaledFrequencies: llama3 needs high_freq_factor != "
          "low_freq_factor");
    double oldContext = static_cast<double>(sc.originalMaxPositions);
    double lowFreqWavelen = oldContext / sc.lowFreqFactor;
    double highFreqWavelen = oldContext / sc.highFreqFactor;
    std::vector<double> f = powers(theta);
    for (double &v : f) {
      double wavelen = 2 * kPi / v;
      double scaled = wavelen > lowFreqWavelen ? v / sc.factor : v;
      bool medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
      if (medium) {
        double smooth = (oldContext / wavelen - sc.lowFreqFactor) /
                        (sc.highFreqFactor - sc.lowFreqFactor);
        scaled = (1 - smooth) * scaled / sc.factor + smooth * scaled;
      }
      v = scaled;
    }
    return f;
  }
  }
  return powers(theta);
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

std::vector<float> sinusoidalPEHalves(const std::vector<float> &x, int64_t seq,
                                      int64_t d, double base, int64_t offset) {
  check(d >= 4 && d % 2 == 0, "sinusoidalPEHalves: d must be even and >= 4");
  check(hasSize(x, seq * d), "sinusoidalPEHalves: x size != seq * d");
  const int64_t half = d / 2;
  std::vector<float> out(x.size());
  for (int64_t s = 0; s < seq; ++s) {
    double p = static_cast<double>(offset + s);
    for (int64_t k = 0; k < half; ++k) {
      double angle = p * std::exp(-static_cast<double>(k) * std::log(base) /
                                  static_cast<double>(half - 1));
      int64_t e = s * d + k;
      out[e] = static_cast<float>(x[e] + std::sin(angle));
      out[e + half] = static_cast<float>(x[e + half] + std::cos(angle));
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
                             const AttentionParams &params,
                             std::vector<float> *weights) {
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

  check(params.window >= 0, "attention: window must be >= 0");
  check(params.softcap >= 0, "attention: softcap must be >= 0");
  if (params.relativeBias) {
    int64_t buckets = params.relativeBidirectional ? params.relativeBuckets / 2
                                                   : params.relativeBuckets;
    check(buckets >= 2 && params.relativeMaxDistance > buckets / 2,
          "attention: relative bias needs buckets >= 2 (per direction) and "
          "maxDistance > buckets / 2");
  }

  int64_t group = heads / kvHeads;
  int64_t len = validKeys(seqKv, params.kvLen);
  std::vector<float> out(seqQ * qWidth, 0.0f);
  std::vector<double> scores(std::max<int64_t>(len, 0));
  if (weights)
    weights->assign(heads * seqQ * seqKv, 0.0f);
  for (int64_t h = 0; h < heads; ++h) {
    int64_t g = h / group;
    const float *bias =
        params.bias
            ? params.bias + (params.biasHeads == 1 ? 0 : h) * seqQ * seqKv
            : nullptr;
    for (int64_t i = 0; i < seqQ; ++i) {
      int64_t pos = len - seqQ + i;
      // Visible keys are [first, visible).
      int64_t visible = len;
      if (params.causal)
        visible = std::min(len, pos + 1);
      int64_t first = 0;
      if (params.window > 0)
        first = std::max<int64_t>(0, pos - params.window + 1);
      if (visible <= first)
        continue; // No visible key: the row stays zero.
      const float *qRow = q.data() + i * qWidth + h * headDim;
      double maxScore = -std::numeric_limits<double>::infinity();
      for (int64_t j = first; j < visible; ++j) {
        const float *kRow = k.data() + j * kvWidth + g * headDim;
        double dot = 0.0;
        for (int64_t c = 0; c < headDim; ++c)
          dot += static_cast<double>(qRow[c]) * kRow[c];
        double s = params.scale * dot;
        if (params.softcap > 0)
          s = params.softcap * std::tanh(s / params.softcap);
        if (bias)
          s += bias[i * seqKv + j];
        if (params.alibiSlopes)
          s += params.alibiSlopes[h] * static_cast<double>(j - pos);
        if (params.relativeBias)
          s += params.relativeBias[t5RelativePositionBucket(
                                       j - pos, params.relativeBidirectional,
                                       params.relativeBuckets,
                                       params.relativeMaxDistance) *
                                       heads +
                                   h];
        scores[j] = s;
        maxScore = std::max(maxScore, s);
      }
      double sum = 0.0;
      if (params.sinks) {
        maxScore = std::max(maxScore, static_cast<double>(params.sinks[h]));
        sum = std::exp(params.sinks[h] - maxScore);
      }
      for (int64_t j = first; j < visible; ++j) {
        scores[j] = std::exp(scores[j] - maxScore);
        sum += scores[j];
      }
      if (weights)
        for (int64_t j = first; j < visible; ++j)
          (*weights)[(h * seqQ + i) * seqKv + j] = static_cast<float>(scores[j] / sum);
      for (int64_t c = 0; c < headDim; ++c) {
        double acc = 0.0;
        for (int64_t j = first; j < visible; ++j)
          acc += scores[j] / sum * v[j * kvWidth + g * headDim + c];
        out[i * qWidth + h * headDim + c] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

std::vector<double> alibiSlopes(int64_t heads) {
  check(heads > 0, "alibiSlopes: heads must be positive");
  // HF build_alibi_tensor: closest_power_of_2 = 2^floor(log2(heads));
  // base = float32(2^(-(2^-(log2(n) - 3)))) = float32(2^(-8/n)) and slopes
  // torch.pow(base, 1..n) in float32; the remaining heads take the odd
  // powers of extra_base = float32(2^(-4/n)).
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  auto powerOf = [](float base, int64_t p) {
    // float32 pow: the exact power of the float base, rounded once.
    return static_cast<double>(static_cast<float>(
        std::pow(static_cast<double>(base), static_cast<double>(p))));
  };
  std::vector<double> slopes;
  float base = static_cast<float>(std::pow(2.0, -8.0 / n));
  for (int64_t p = 1; p <= n; ++p)
    slopes.push_back(powerOf(base, p));
  float extraBase = static_cast<float>(std::pow(2.0, -4.0 / n));
  int64_t remaining = std::min(n, heads - n);
  for (int64_t p = 1; p < 1 + 2 * remaining; p += 2)
    slopes.push_back(powerOf(extraBase, p));
  return slopes;
}

int64_t t5RelativePositionBucket(int64_t relativePosition, bool bidirectional,
                                 int64_t numBuckets, int64_t maxDistance) {
  int64_t buckets = 0;
  int64_t n = numBuckets;
  int64_t rp = relativePosition;
  if (bidirectional) {
    n /= 2;
    if (rp > 0)
      buckets += n;
    rp = rp < 0 ? -rp : rp;
  } else {
    rp = -std::min<int64_t>(rp, 0);
  }
  int64_t maxExact = n / 2;
  check(maxExact >= 1 && maxDistance > maxExact,
        "t5RelativePositionBucket: need buckets >= 2 and maxDistance > "
        "buckets / 2");
  if (rp < maxExact)
    return buckets + rp;
  // torch: log(rp.float() / max_exact) / math.log(max_distance / max_exact)
  // * (num_buckets - max_exact), every step in float32, then .to(long).
  float ratio = static_cast<float>(rp) / static_cast<float>(maxExact);
  float logRatio = std::log(ratio);
  float logRange = static_cast<float>(std::log(
      static_cast<double>(maxDistance) / static_cast<double>(maxExact)));
  float scaled = logRatio / logRange * static_cast<float>(n - maxExact);
  int64_t large = maxExact + static_cast<int64_t>(scaled);
  return buckets + std::min(large, n - 1);
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
                                 const std::vector<float> &update, int64_t rows,
                                 int64_t position) {
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

std::vector<float> geglu(const std::vector<float> &gate,
                         const std::vector<float> &up,
                         GeluApproximation approx) {
  check(gate.size() == up.size(), "geglu: size mismatch");
  std::vector<float> out(gate.size());
  const double kInvSqrt2 = 1.0 / std::sqrt(2.0);
  const double kSqrt2OverPi = std::sqrt(2.0 / std::acos(-1.0));
  for (size_t i = 0; i < gate.size(); ++i) {
    double v = gate[i];
    double t = approx == GeluApproximation::Erf
                   ? std::erf(v * kInvSqrt2)
                   : std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v));
    out[i] = static_cast<float>(0.5 * v * (1.0 + t) * up[i]);
  }
  return out;
}

std::vector<float> relu(const std::vector<float> &x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = x[i] < 0.0f ? 0.0f : x[i]; // NaN stays NaN, as torch.relu
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
// Mixture of experts
//===----------------------------------------------------------------------===//

MoeRouting moeRouter(const std::vector<float> &x, int64_t tokens,
                     int64_t hidden, const std::vector<float> &weight,
                     int64_t experts, const float *bias, int64_t topK,
                     MoeScoring scoring, bool normalize) {
  check(hasSize(x, tokens * hidden), "moeRouter: x size != tokens * hidden");
  check(hasSize(weight, experts * hidden),
        "moeRouter: weight size != experts * hidden");
  check(topK >= 1 && topK <= experts, "moeRouter: top_k not in [1, experts]");
  MoeRouting routing{std::vector<float>(tokens * topK),
                     std::vector<int32_t>(tokens * topK)};
  std::vector<double> score(experts);
  std::vector<int64_t> order(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t e = 0; e < experts; ++e) {
      double acc = bias ? static_cast<double>(bias[e]) : 0.0;
      for (int64_t k = 0; k < hidden; ++k)
        acc += static_cast<double>(x[t * hidden + k]) * weight[e * hidden + k];
      score[e] = acc;
    }
    if (scoring == MoeScoring::SoftmaxTopK) {
      double maxVal = *std::max_element(score.begin(), score.end()), sum = 0.0;
      for (double &v : score)
        sum += (v = std::exp(v - maxVal));
      for (double &v : score)
        v /= sum;
    }
    for (int64_t e = 0; e < experts; ++e)
      order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      bool aNan = std::isnan(score[a]), bNan = std::isnan(score[b]);
      return (aNan && !bNan) || score[a] > score[b];
    });
    std::vector<double> chosen(topK);
    for (int64_t j = 0; j < topK; ++j)
      chosen[j] = score[order[j]];
    if (scoring == MoeScoring::TopKSoftmax) {
      double best = chosen[0], sum = 0.0;
      for (double &v : chosen)
        sum += (v = std::exp(v - best));
      for (double &v : chosen)
        v /= sum;
    } else if (normalize) {
      double sum = 0.0;
      for (double v : chosen)
        sum += v;
      for (double &v : chosen)
        v /= sum;
    }
    for (int64_t j = 0; j < topK; ++j) {
      routing.weights[t * topK + j] = static_cast<float>(chosen[j]);
      routing.experts[t * topK + j] = static_cast<int32_t>(order[j]);
    }
  }
  return routing;
}

std::vector<float> moeExperts(const std::vector<float> &x, int64_t tokens,
                              int64_t hidden, const MoeRouting &routing,
                              int64_t topK, const std::vector<float> &gate,
                              const std::vector<float> &up,
                              const std::vector<float> &down,
                              int64_t numExperts, int64_t ffn,
                              MoeActivation activation, double alpha,
                              double limit, MoeBiases biases,
                              const RowRounding &roundInputs,
                              const RowRounding &roundActivations) {
  check(hasSize(x, tokens * hidden), "moeExperts: x size != tokens * hidden");
  check(hasSize(routing.weights, tokens * topK) &&
            routing.experts.size() == routing.weights.size(),
        "moeExperts: routing size != tokens * top_k");
  check(hasSize(gate, numExperts * ffn * hidden) &&
            hasSize(up, numExperts * ffn * hidden) &&
            hasSize(down, numExperts * hidden * ffn),
        "moeExperts: expert weight sizes");
  std::vector<float> out(tokens * hidden);
  std::vector<double> h(ffn), sum(hidden);
  const std::vector<float> rounded =
      roundInputs ? roundInputs(x, tokens, hidden) : x;
  for (int64_t t = 0; t < tokens; ++t) {
    std::fill(sum.begin(), sum.end(), 0.0);
    const float *row = rounded.data() + t * hidden;
    for (int64_t j = 0; j < topK; ++j) {
      int64_t e = std::clamp<int64_t>(routing.experts[t * topK + j], 0,
                                      numExperts - 1);
      for (int64_t f = 0; f < ffn; ++f) {
        double g = biases.gate ? (*biases.gate)[e * ffn + f] : 0.0;
        double u = biases.up ? (*biases.up)[e * ffn + f] : 0.0;
        const float *gw = gate.data() + (e * ffn + f) * hidden;
        const float *uw = up.data() + (e * ffn + f) * hidden;
        for (int64_t k = 0; k < hidden; ++k) {
          g += static_cast<double>(row[k]) * gw[k];
          u += static_cast<double>(row[k]) * uw[k];
        }
        if (activation == MoeActivation::Swiglu) {
          h[f] = g / (1.0 + std::exp(-g)) * u;
        } else {
          g = std::min(g, limit);
          u = std::clamp(u, -limit, limit);
          h[f] = g / (1.0 + std::exp(-alpha * g)) * (u + 1.0);
        }
      }
      if (roundActivations) {
        std::vector<float> acts(h.begin(), h.end());
        acts = roundActivations(acts, 1, ffn);
        std::copy(acts.begin(), acts.end(), h.begin());
      }
      double w = routing.weights[t * topK + j];
      for (int64_t d = 0; d < hidden; ++d) {
        double acc = biases.down ? (*biases.down)[e * hidden + d] : 0.0;
        const float *dw = down.data() + (e * hidden + d) * ffn;
        for (int64_t f = 0; f < ffn; ++f)
          acc += h[f] * dw[f];
        sum[d] += w * acc;
      }
    }
    for (int64_t d = 0; d < hidden; ++d)
      out[t * hidden + d] = static_cast<float>(sum[d]);
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
