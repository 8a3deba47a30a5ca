//===- Sampler.cpp - token sampling ---------------------------------------===//
//
// Deterministic across standard libraries: candidates are ranked by a strict
// total order (higher logit first, then lower id), so the kept set is unique;
// the order the draw walks it in comes from std::sort under that order or
// from our own partitioning code, never from an unspecified std:: detail.
//
// Cost per token is O(vocab) plus O(vocab log k) for top-k: a bounded heap
// for top-k and a quickselect on probability mass for top-p, instead of
// sorting the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "Sampler.h"

#include "Support.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>

namespace attnrt {

uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float expNonPositive(float x) {
  // Cephes expf: exp(x) = 2^k * exp(r), |r| <= ln2 / 2, with exp(r) a
  // degree-6 polynomial. Clamping first keeps k in int range (and makes NaN
  // harmless); -87 keeps 2^k a normal float.
  x = x >= -87.0f ? x : -87.0f;
  x = x <= 0.0f ? x : 0.0f;
  // Round x / ln2 to nearest with the 1.5 * 2^23 trick: SSE2 has no
  // vector round.
  constexpr float shifter = 12582912.0f;
  float k = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  uint32_t scaleBits = static_cast<uint32_t>(static_cast<int32_t>(k) + 127)
                       << 23;
  float scale;
  std::memcpy(&scale, &scaleBits, sizeof(scale));
  return p * scale;
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t &word : s)
    word = splitMix64(state);
}

static inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t Xoshiro256::next() {
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

} // namespace attnrt

using namespace attnrt;

/// True when `a` ranks before `b`: the strict total order of sampling.
static inline bool ranksBefore(const Candidate &a, const Candidate &b) {
  return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
}

/// Keeps the `k` best-ranked finite logits in c[0, k), sorted by rank, and
/// returns how many there are (fewer when fewer logits are finite).
static int64_t selectTopK(const float *logits, int64_t vocab, int64_t k,
                          Candidate *c) {
  // A heap whose top is the worst candidate kept so far: most logits lose
  // one comparison against it and cost nothing more.
  int64_t n = 0;
  constexpr float minusInf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < vocab; ++i) {
    float l = logits[i];
    if (!(l > minusInf)) // NaN and -inf never compete.
      continue;
    Candidate x = {l, 0.0f, static_cast<int32_t>(i)};
    if (n < k) {
      c[n++] = x;
      std::push_heap(c, c + n, ranksBefore);
    } else if (ranksBefore(x, c[0])) {
      std::pop_heap(c, c + n, ranksBefore);
      c[n - 1] = x;
      std::push_heap(c, c + n, ranksBefore);
    }
  }
  std::sort(c, c + n, ranksBefore);
  return n;
}

/// Reorders c[0, n) so that its first `keep` entries are the smallest set of
/// best-ranked candidates whose weights add up to `target`, and returns
/// keep. A quickselect on mass (expected O(n)): partition around a pivot,
/// then continue on the side where the cut lies.
static int64_t selectNucleus(Candidate *c, int64_t n, double target) {
  int64_t lo = 0, hi = n;
  double massBefore = 0; // Mass of c[0, lo), all kept.
  while (hi - lo > 16) {
    // Median of three by rank, moved to hi - 1.
    int64_t mid = lo + (hi - lo) / 2;
    if (ranksBefore(c[mid], c[lo]))
      std::swap(c[mid], c[lo]);
    if (ranksBefore(c[hi - 1], c[lo]))
      std::swap(c[hi - 1], c[lo]);
    if (ranksBefore(c[mid], c[hi - 1]))
      std::swap(c[mid], c[hi - 1]);
    Candidate pivot = c[hi - 1];
    int64_t split = lo;
    double mass = 0;
    for (int64_t j = lo; j < hi - 1; ++j) {
      if (ranksBefore(c[j], pivot)) {
        mass += c[j].weight;
        std::swap(c[split++], c[j]);
      }
    }
    std::swap(c[split], c[hi - 1]); // The pivot, after everything better.
    if (massBefore + mass >= target) {
      hi = split;
    } else if (massBefore + mass + pivot.weight >= target) {
      return split + 1;
    } else {
      massBefore += mass + pivot.weight;
      lo = split + 1;
    }
  }
  std::sort(c + lo, c + hi, ranksBefore);
  for (int64_t j = lo; j < hi; ++j) {
    massBefore += c[j].weight;
    if (massBefore >= target)
      return j + 1;
  }
  return hi; // Rounding: everything left is kept.
}

/// Draws from c[0, n) (n >= 1) with probabilities weight / total.
static int32_t drawCandidate(Xoshiro256 &rng, const Candidate *c, int64_t n,
                             double total) {
  double r = rng.nextDouble() * total;
  double cumulative = 0;
  for (int64_t j = 0; j < n; ++j) {
    cumulative += c[j].weight;
    if (r < cumulative)
      return c[j].id;
  }
  return c[n - 1].id; // Rounding left r at the very top.
}

extern "C" {

attnrt_sampler_params attnrt_sampler_default_params(void) {
  attnrt_sampler_params params;
  params.temperature = 0.0f;
  params.top_k = 0;
  params.top_p = 1.0f;
  params.seed = 0;
  return params;
}

attnrt_sampler *attnrt_sampler_create(const attnrt_sampler_params *params,
                                      int64_t max_vocab, char *error,
                                      size_t error_size) {
  return guarded<attnrt_sampler *>(
      error, error_size, nullptr, [&]() -> attnrt_sampler * {
        if (!params) {
          copyError("attnrt_sampler_create: null params", error, error_size);
          return nullptr;
        }
        std::string message;
        if (!(params->temperature >= 0.0f)) // Also rejects NaN.
          message = format("temperature %g must be >= 0", params->temperature);
        else if (params->top_k < 0)
          message =
              format("top-k %d must be >= 0 (0 disables it)", params->top_k);
        else if (!(params->top_p > 0.0f && params->top_p <= 1.0f))
          message = format("top-p %g must be in (0, 1]", params->top_p);
        else if (max_vocab < 1 || max_vocab > INT32_MAX)
          message = format("vocabulary size %lld must be in [1, 2^31)",
                           static_cast<long long>(max_vocab));
        if (!message.empty()) {
          copyError(message, error, error_size);
          return nullptr;
        }
        auto sampler = std::make_unique<attnrt_sampler>(*params, max_vocab);
        sampler->candidates.assign(static_cast<size_t>(max_vocab), Candidate());
        sampler->weights.assign(static_cast<size_t>(max_vocab), 0.0f);
        return sampler.release();
      });
}

void attnrt_sampler_free(attnrt_sampler *sampler) { delete sampler; }

int32_t attnrt_sample(attnrt_sampler *sampler, const float *logits,
                      int64_t vocab) {
  if (!sampler || !logits || vocab < 1 || vocab > sampler->maxVocab)
    return -1;
  const attnrt_sampler_params &params = sampler->params;
  constexpr float inf = std::numeric_limits<float>::infinity();

  // Greedy: the first index holding the maximum. `l > m` is false for NaN,
  // so NaN is skipped; eight lanes let the loop become vector max
  // instructions.
  float lanes[8];
  for (float &lane : lanes)
    lane = -inf;
  int64_t i = 0;
  for (; i + 8 <= vocab; i += 8)
    for (int l = 0; l < 8; ++l)
      lanes[l] = logits[i + l] > lanes[l] ? logits[i + l] : lanes[l];
  for (; i < vocab; ++i)
    lanes[0] = logits[i] > lanes[0] ? logits[i] : lanes[0];
  float best = lanes[0];
  for (float lane : lanes)
    best = lane > best ? lane : best;
  int64_t bestIndex = -1;
  for (i = 0; i < vocab; ++i) {
    if (logits[i] == best) {
      bestIndex = i;
      break;
    }
  }
  if (bestIndex < 0) // Every logit is NaN.
    return -1;
  // With every logit -inf there is nothing to weigh: stay greedy.
  if (params.temperature <= 0.0f || best == -inf)
    return static_cast<int32_t>(bestIndex);

  Candidate *c = sampler->candidates.data();
  if (best == inf) {
    // Infinite logits outweigh everything: draw uniformly among them. They
    // tie, so they rank by id: top-k keeps the first k of them, and top-p
    // the first ones whose equal shares reach top_p.
    int64_t n = 0;
    for (i = 0; i < vocab; ++i)
      if (logits[i] == inf)
        c[n++].id = static_cast<int32_t>(i);
    if (params.top_k > 0 && params.top_k < n)
      n = params.top_k;
    if (params.top_p < 1.0f) {
      int64_t keep = 1;
      while (keep < n && static_cast<double>(keep) / static_cast<double>(n) <
                             static_cast<double>(params.top_p))
        ++keep;
      n = keep;
    }
    auto pick = static_cast<int64_t>(sampler->rng.nextDouble() *
                                     static_cast<double>(n));
    return c[std::min(pick, n - 1)].id;
  }

  // Weights relative to the best logit: the best weighs 1, none overflows.
  // A temperature below ~3e-39 has no finite inverse, and inf * 0 would make
  // the best token's weight NaN (then clamped like every other: a uniform
  // draw). FLT_MAX keeps it at exp(0) = 1 and the others at about exp(-87):
  // greedy, which is the limit as the temperature goes to 0.
  float invTemperature =
      std::min(1.0f / params.temperature, std::numeric_limits<float>::max());
  if (params.top_k > 0 && params.top_k < vocab) {
    int64_t n = selectTopK(logits, vocab, params.top_k, c);
    double total = 0;
    for (int64_t j = 0; j < n; ++j) {
      c[j].weight = expNonPositive((c[j].logit - best) * invTemperature);
      total += c[j].weight;
    }
    if (params.top_p < 1.0f) {
      // Ranked already: the nucleus is a prefix.
      double target = static_cast<double>(params.top_p) * total;
      int64_t keep = 0;
      total = 0;
      while (keep < n && total < target)
        total += c[keep++].weight;
      n = keep;
    }
    return drawCandidate(sampler->rng, c, n, total);
  }

  // The whole row: weights (NaN and -inf weigh 0) and their total, in loops
  // that vectorize.
  float *w = sampler->weights.data();
  for (i = 0; i < vocab; ++i)
    w[i] = logits[i] > -inf
               ? expNonPositive((logits[i] - best) * invTemperature)
               : 0.0f;
  double sums[4] = {0, 0, 0, 0};
  for (i = 0; i + 4 <= vocab; i += 4)
    for (int l = 0; l < 4; ++l)
      sums[l] += w[i + l];
  for (; i < vocab; ++i)
    sums[0] += w[i];
  double total = (sums[0] + sums[1]) + (sums[2] + sums[3]);

  if (params.top_p < 1.0f) {
    // Tokens lighter than (1 - top_p) * total / vocab weigh at most
    // (1 - top_p) * total together, so the heavier ones alone reach the
    // target and the nucleus lies among them: only those (usually a small
    // part of the vocabulary) become candidates.
    double target = static_cast<double>(params.top_p) * total;
    double floor = (1.0 - static_cast<double>(params.top_p)) * total /
                   static_cast<double>(vocab);
    int64_t n = 0;
    for (i = 0; i < vocab; ++i)
      if (w[i] > 0.0f && w[i] >= floor)
        c[n++] = {logits[i], w[i], static_cast<int32_t>(i)};
    n = selectNucleus(c, n, target);
    total = 0;
    for (int64_t j = 0; j < n; ++j)
      total += c[j].weight;
    return drawCandidate(sampler->rng, c, n, total);
  }

  // Plain temperature: draw over the row in id order.
  double r = sampler->rng.nextDouble() * total;
  double cumulative = 0;
  int64_t lastPositive = bestIndex;
  for (i = 0; i < vocab; ++i) {
    if (w[i] <= 0.0f)
      continue;
    cumulative += w[i];
    lastPositive = i;
    if (r < cumulative)
      return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(lastPositive); // Rounding left r at the top.
}

} // extern "C"
