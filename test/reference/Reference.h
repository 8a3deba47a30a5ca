//===- Reference.h - Naive reference semantics of the attn ops --*- C++ -*-===//
//
// Plain C++17 implementations of every attn dialect op, used as the oracle
// of the end-to-end numeric tests. They are deliberately naive: loops in the
// order the op's definition reads, every sum and every transcendental in
// double, one rounding to float when a value is stored. Nothing here depends
// on MLIR or LLVM so that a bug in the compiler cannot leak into its oracle.
//
// Tensors are row-major std::vector<float> with explicit sizes. Shape
// mismatches throw std::invalid_argument (not assert) so that they are caught
// in release builds too.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_REFERENCE_REFERENCE_H
#define ATTN_TEST_REFERENCE_REFERENCE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn {
namespace ref {

//===----------------------------------------------------------------------===//
// Embeddings and projections
//===----------------------------------------------------------------------===//

/// result[s, :] = table[ids[s], :] for a [vocab, dim] table; result is
/// [ids.size(), dim]. Out-of-range ids are clamped into [0, vocab - 1], as
/// the lowering does.
std::vector<float> embedding(const std::vector<float> &table, int64_t vocab,
                             int64_t dim, const std::vector<int64_t> &ids);

enum class WeightLayout {
  OutIn, ///< weight is [n, k] (torch nn.Linear): y = x W^T.
  InOut, ///< weight is [k, n] (GPT-2 Conv1D): y = x W.
};

/// y[m, n] = sum_k x[m, k] W(k, n) (+ bias[n]) for x [m, k]. `bias` may be
/// null; otherwise it holds n values.
std::vector<float> linear(const std::vector<float> &x, int64_t m, int64_t k,
                          const std::vector<float> &weight, int64_t n,
                          WeightLayout layout, const float *bias = nullptr);

//===----------------------------------------------------------------------===//
// Normalization and the residual stream
//===----------------------------------------------------------------------===//

/// Per row of d: (x - mean) / sqrt(var + eps) * gamma + beta, with the
/// biased variance (divided by d, as torch). The op's epsilon is an f32
/// attribute: pass double(float(eps)) to match the compiled code bit for bit.
std::vector<float> layerNorm(const std::vector<float> &x, int64_t rows,
                             int64_t d, const std::vector<float> &gamma,
                             const std::vector<float> &beta, double eps);

/// Per row of d: x / sqrt(mean(x^2) + eps) * gamma.
std::vector<float> rmsNorm(const std::vector<float> &x, int64_t rows,
                           int64_t d, const std::vector<float> &gamma,
                           double eps);

/// Elementwise a + b.
std::vector<float> residualAdd(const std::vector<float> &a,
                               const std::vector<float> &b);

//===----------------------------------------------------------------------===//
// Positional encodings
//===----------------------------------------------------------------------===//

enum class RopePairing {
  RotateHalf,  ///< pair i is (x[i], x[i + headDim/2]) (HF LLaMA, GPT-NeoX).
  Interleaved, ///< pair i is (x[2i], x[2i + 1]) (RoFormer, Meta LLaMA).
};

/// Rotary embedding of x [seq, features], features = heads * headDim. Row s
/// has position p = offset + s; pair i of each head turns by
/// p * theta^(-2i / headDim): (a, b) -> (a cos - b sin, b cos + a sin).
std::vector<float> rope(const std::vector<float> &x, int64_t seq,
                        int64_t features, int64_t headDim, double theta,
                        RopePairing pairing, int64_t offset);

/// x [seq, d] plus the sinusoidal encoding of "Attention Is All You Need":
/// sin(p / base^(2i/d)) at column 2i, cos(...) at 2i + 1, p = offset + s.
std::vector<float> sinusoidalPE(const std::vector<float> &x, int64_t seq,
                                int64_t d, double base, int64_t offset);

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionParams {
  int64_t heads = 1;
  /// Must divide heads; query head h reads kv head h / (heads / kvHeads).
  int64_t kvHeads = 1;
  int64_t headDim = 1;
  /// Multiplies Q K^T; see defaultScale.
  double scale = 1.0;
  /// Queries are aligned to the end of the valid keys (see attention).
  bool causal = false;
  /// Number of valid keys; -1 means all seqKv keys.
  int64_t kvLen = -1;
  /// Optional additive bias [biasHeads, seqQ, seqKv] row-major; nullptr = none.
  const float *bias = nullptr;
  /// 1 (broadcast over heads) or heads.
  int64_t biasHeads = 1;
};

/// 1 / sqrt(headDim), the op's default scale.
double defaultScale(int64_t headDim);

/// Scaled dot-product attention. q is [seqQ, heads * headDim], k and v are
/// [seqKv, kvHeads * headDim]; the result is [seqQ, heads * headDim].
/// With L = min(kvLen, seqKv) (or seqKv), key j is visible to query i when
/// j < L and, if causal, j <= L - seqQ + i. A query row with no visible key
/// yields zeros, as the op defines.
std::vector<float> attention(const std::vector<float> &q, int64_t seqQ,
                             const std::vector<float> &k,
                             const std::vector<float> &v, int64_t seqKv,
                             const AttentionParams &params);

/// ALiBi bias [heads, seqQ, seqKv]: bias[h, i, j] = -m_h * (pos_i - j) with
/// pos_i = L - seqQ + i (L as in attention) and the slopes m_h of HF
/// `build_alibi_tensor` (2^(-8(h+1)/heads) for a power-of-two head count).
/// Entries with j > pos_i are positive; callers mask them with causal.
std::vector<float> alibiBias(int64_t heads, int64_t seqQ, int64_t seqKv,
                             int64_t kvLen);

/// The ALiBi slope of every head, in double.
std::vector<double> alibiSlopes(int64_t heads);

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

/// A copy of cache [maxSeq, features] with rows [position, position + rows)
/// replaced by update [rows, features]. Throws if the rows do not fit.
std::vector<float> kvCacheAppend(const std::vector<float> &cache,
                                 int64_t maxSeq, int64_t features,
                                 const std::vector<float> &update,
                                 int64_t rows, int64_t position);

/// The first `length` rows of cache [*, features].
std::vector<float> kvCacheRead(const std::vector<float> &cache,
                               int64_t features, int64_t length);

//===----------------------------------------------------------------------===//
// Activations and softmax
//===----------------------------------------------------------------------===//

enum class GeluApproximation {
  Erf,  ///< 0.5 x (1 + erf(x / sqrt(2))).
  Tanh, ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GPT-2 gelu_new).
};

std::vector<float> gelu(const std::vector<float> &x, GeluApproximation approx);

/// x / (1 + exp(-x)).
std::vector<float> silu(const std::vector<float> &x);

/// silu(gate) * up, elementwise.
std::vector<float> swiglu(const std::vector<float> &gate,
                          const std::vector<float> &up);

/// Softmax over the last dimension of x [rows, d], subtracting the row max.
std::vector<float> softmax(const std::vector<float> &x, int64_t rows,
                           int64_t d);

//===----------------------------------------------------------------------===//
// Test helpers
//===----------------------------------------------------------------------===//

/// max_i |a_i - b_i|. Returns +inf when the sizes differ or any difference is
/// NaN, so that a NaN in the compiled output can never pass a tolerance.
double maxAbsError(const std::vector<float> &a, const std::vector<float> &b);

/// max_i |actual_i - expected_i| / max(max_i |expected_i|, tiny): relative to
/// the largest expected magnitude so that near-zero elements do not dominate.
/// Same +inf convention as maxAbsError.
double maxRelError(const std::vector<float> &actual,
                   const std::vector<float> &expected);

/// n samples of N(0, stddev^2) from std::mt19937_64(seed). Deterministic for
/// a seed with a given standard library (std::normal_distribution's algorithm
/// is implementation-defined).
std::vector<float> randomTensor(size_t n, float stddev, uint64_t seed);

} // namespace ref
} // namespace attn

#endif // ATTN_TEST_REFERENCE_REFERENCE_H
