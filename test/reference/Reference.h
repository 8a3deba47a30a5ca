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
#include <functional>
#include <limits>
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
std::vector<float> rmsNorm(const std::vector<float> &x, int64_t rows, int64_t d,
                           const std::vector<float> &gamma, double eps);

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

/// The inverse frequencies of unscaled RoPE over `rotaryDim` features:
/// invFreq[i] = theta^(-2i / rotaryDim), i < rotaryDim / 2 (HF
/// `_compute_default_rope_parameters`, in double).
std::vector<double> ropeFrequencies(double theta, int64_t rotaryDim);

/// Rotary embedding with explicit inverse frequencies, for partial rotary
/// and scaled RoPE. The first rotaryDim = 2 * invFreq.size() features of
/// each head rotate and the other headDim - rotaryDim pass through unchanged
/// (HF `q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]`). Pair i
/// of the rotary part (RotateHalf: (i, i + rotaryDim/2); Interleaved:
/// (2i, 2i + 1)) at position p = offset + s turns by angle p * invFreq[i],
/// and both rotated outputs are multiplied by attentionFactor (HF multiplies
/// cos and sin by `attention_scaling`; the pass-through features are not
/// scaled): (a, b) -> af * (a cos - b sin, b cos + a sin). With
/// invFreq = ropeFrequencies(theta, headDim) and af = 1 this is rope().
std::vector<float> ropeWithFrequencies(const std::vector<float> &x, int64_t seq,
                                       int64_t features, int64_t headDim,
                                       const std::vector<double> &invFreq,
                                       double attentionFactor,
                                       RopePairing pairing, int64_t offset);

/// rope_scaling of HF transformers' modeling_rope_utils.py (v5 semantics,
/// see docs/reference.md for where older versions differ).
struct RopeScaling {
  enum class Type { None, Linear, Dynamic, Yarn, Llama3, LongRope };
  Type type = Type::None;
  /// `factor`. Linear divides every frequency by it; dynamic grows the base
  /// with it; yarn interpolates by it; llama3 divides low frequencies by it;
  /// longrope derives its default attention factor from it (the config
  /// reader resolves an absent factor to max_position_embeddings /
  /// original_max_position_embeddings).
  double factor = 1.0;
  /// config.max_position_embeddings (dynamic: the length beyond which the
  /// base grows).
  int64_t maxPositions = 0;
  /// `original_max_position_embeddings` (yarn, llama3, longrope; HF
  /// defaults it to max_position_embeddings, Phi3Config to 4096).
  int64_t originalMaxPositions = 0;
  /// yarn, longrope: `attention_factor`; NaN when absent (then derived from
  /// factor, and yarn's mscale and mscale_all_dim).
  double attentionFactor = std::numeric_limits<double>::quiet_NaN();
  /// yarn: `beta_fast` (32 when absent or 0) and `beta_slow` (1).
  double betaFast = 32.0, betaSlow = 1.0;
  /// yarn: `mscale`, `mscale_all_dim`; 0 when absent (both must be non-zero
  /// to be used).
  double mscale = 0.0, mscaleAllDim = 0.0;
  /// yarn: `truncate` (floor/ceil the correction range; default true).
  bool truncate = true;
  /// llama3: `low_freq_factor`, `high_freq_factor`.
  double lowFreqFactor = 1.0, highFreqFactor = 4.0;
  /// longrope: `short_factor` and `long_factor`, rotaryDim / 2 numbers
  /// each; frequency i is divided by one of them.
  std::vector<double> shortFactor, longFactor;
};

/// The inverse frequencies (rotaryDim / 2 values) and the attention factor
/// HF computes for `scaling` (`ROPE_INIT_FUNCTIONS[rope_type]`), in double
/// from theta as written in the config. seqLen matters only for dynamic and
/// longrope: it is max(position_ids) + 1 of the forward call
/// (dynamic_rope_update). Dynamic grows the base only when it exceeds
/// maxPositions:
///   base' = theta * (factor * L / maxPositions - (factor - 1))^(d / (d - 2)),
///   L = max(seqLen, maxPositions).
/// Longrope: f_i = 1 / (ext_i * theta^(2i / d)), ext = longFactor when
/// seqLen > originalMaxPositions, else shortFactor; the attention factor is
/// attentionFactor when given, else 1 for factor <= 1, else
/// sqrt(1 + ln(factor) / ln(originalMaxPositions)), whatever seqLen.
std::vector<double> ropeScaledFrequencies(double theta, int64_t rotaryDim,
                                          const RopeScaling &scaling,
                                          int64_t seqLen,
                                          double &attentionFactor);

/// x [seq, d] plus the sinusoidal encoding of "Attention Is All You Need":
/// sin(p / base^(2i/d)) at column 2i, cos(...) at 2i + 1, p = offset + s.
std::vector<float> sinusoidalPE(const std::vector<float> &x, int64_t seq,
                                int64_t d, double base, int64_t offset);

/// x [seq, d] plus fairseq's sinusoidal encoding (XGLM): with h = d / 2 and
/// w_k = exp(-k ln(base) / (h - 1)), sin(p w_k) at column k and cos(p w_k)
/// at column h + k, p = offset + s.
std::vector<float> sinusoidalPEHalves(const std::vector<float> &x, int64_t seq,
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
  /// Sliding window: with window > 0, query i (at position pos_i, see
  /// attention) sees key j only when j > pos_i - window, i.e. itself and
  /// the window - 1 keys before it (HF masking_utils sliding_window_overlay:
  /// kv_idx > q_idx - sliding_window). 0 = no window.
  int64_t window = 0;
  /// ALiBi: per-head slopes [heads] (e.g. alibiSlopes(heads)); adds
  /// slope_h * (j - pos_i) to the score of key j. nullptr = none.
  const double *alibiSlopes = nullptr;
  /// T5 relative position bias: the table [relativeBuckets, heads] (HF
  /// `relative_attention_bias.weight`); adds
  /// table[t5RelativePositionBucket(j - pos_i, ...), h]. nullptr = none.
  const float *relativeBias = nullptr;
  int64_t relativeBuckets = 32;
  int64_t relativeMaxDistance = 128;
  /// false for a decoder (causal) stack, as T5's decoder.
  bool relativeBidirectional = false;
  /// Logit softcapping (Gemma 2's attn_logit_softcapping): with softcap > 0
  /// the scaled score s becomes softcap * tanh(s / softcap) before any bias,
  /// ALiBi or mask is added (HF eager_attention_forward). 0 = none.
  double softcap = 0.0;
  /// Attention sinks (gpt-oss): one logit per head [heads] that joins each
  /// row's softmax as a key without a value, HF's eager_attention_forward
  /// concatenating `sinks` to the scores and dropping its column after the
  /// softmax. nullptr = none.
  const float *sinks = nullptr;
};

/// 1 / sqrt(headDim), the op's default scale.
double defaultScale(int64_t headDim);

/// Scaled dot-product attention. q is [seqQ, heads * headDim], k and v are
/// [seqKv, kvHeads * headDim]; the result is [seqQ, heads * headDim].
/// With L = min(kvLen, seqKv) (or seqKv), query i sits at position
/// pos_i = L - seqQ + i and key j at position j; key j is visible to query
/// i when j < L, if causal j <= pos_i, and with a window j > pos_i - window.
/// The score of a visible key is scale * q.k (softcapped when softcap > 0)
/// + bias + ALiBi + relative bias (whichever are given). A query row with no visible key yields zeros, as
/// the op defines. `weights`, when given, receives the softmax weights
/// [heads, seqQ, seqKv] (0 for keys a query does not see), as
/// attn.attention_probabilities defines them.
std::vector<float> attention(const std::vector<float> &q, int64_t seqQ,
                             const std::vector<float> &k,
                             const std::vector<float> &v, int64_t seqKv,
                             const AttentionParams &params,
                             std::vector<float> *weights = nullptr);

/// ALiBi bias [heads, seqQ, seqKv]: bias[h, i, j] = -m_h * (pos_i - j) with
/// pos_i = L - seqQ + i (L as in attention) and the slopes m_h of
/// alibiSlopes. Entries with j > pos_i are positive; callers mask them with
/// causal. (HF BLOOM adds m_h * j instead: the same softmax, since the two
/// differ by m_h * pos_i, constant along a row.)
std::vector<float> alibiBias(int64_t heads, int64_t seqQ, int64_t seqKv,
                             int64_t kvLen);

/// The ALiBi slope of every head as HF `build_alibi_tensor` computes it in
/// float32: with n the largest power of two <= heads, slope h < n is
/// base^(h+1), base = float(2^(-8/n)); the remaining heads - n take the odd
/// powers 1, 3, 5, ... of extraBase = float(2^(-4/n)). Each slope is the
/// float nearest to the exact power of the float base (torch.pow in
/// float32), returned as double. Powers of two are exact: 8 heads give
/// 2^-1 .. 2^-8; 12 heads give 2^-1 .. 2^-8 then float(2^-0.5)^1,3,5,7.
std::vector<double> alibiSlopes(int64_t heads);

/// T5's `_relative_position_bucket` (HF modeling_t5.py) for one relative
/// position (key position - query position), including its float32
/// arithmetic in the logarithmic branch:
///   bidirectional: buckets /= 2, +buckets when rp > 0, rp = |rp|;
///   otherwise rp = max(-rp, 0) (a decoder: distance to earlier keys);
///   maxExact = buckets / 2; rp < maxExact -> rp; else
///   min(maxExact + long(float(log(float(rp) / maxExact)
///        / log(maxDistance / maxExact) * (buckets - maxExact))), buckets - 1).
int64_t t5RelativePositionBucket(int64_t relativePosition, bool bidirectional,
                                 int64_t numBuckets, int64_t maxDistance);

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

/// A copy of cache [maxSeq, features] with rows [position, position + rows)
/// replaced by update [rows, features]. Throws if the rows do not fit.
std::vector<float> kvCacheAppend(const std::vector<float> &cache,
                                 int64_t maxSeq, int64_t features,
                                 const std::vector<float> &update, int64_t rows,
                                 int64_t position);

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

/// gelu(gate) * up, elementwise, one rounding (Gemma's GeGLU MLP).
std::vector<float> geglu(const std::vector<float> &gate,
                         const std::vector<float> &up,
                         GeluApproximation approx);

/// max(x, 0) (OPT's MLP).
std::vector<float> relu(const std::vector<float> &x);

/// Softmax over the last dimension of x [rows, d], subtracting the row max.
std::vector<float> softmax(const std::vector<float> &x, int64_t rows,
                           int64_t d);

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

enum class MoeScoring {
  SoftmaxTopK, ///< softmax over every expert, then the top k (Mixtral, Qwen3-MoE).
  TopKSoftmax, ///< the top k logits, then a softmax over them (gpt-oss).
};

struct MoeRouting {
  std::vector<float> weights;   ///< [tokens, topK], best first
  std::vector<int32_t> experts; ///< [tokens, topK]
};

/// Each token's top-k experts: logits x W^T (+ bias) for W [experts,
/// hidden], scored as `scoring` says (`normalize`: the chosen softmax
/// probabilities divided by their sum). Equal scores rank the lower expert
/// first; NaN ranks above every number (torch.topk).
MoeRouting moeRouter(const std::vector<float> &x, int64_t tokens,
                     int64_t hidden, const std::vector<float> &weight,
                     int64_t experts, const float *bias, int64_t topK,
                     MoeScoring scoring, bool normalize);

enum class MoeActivation {
  Swiglu,        ///< silu(g) * u.
  ClampedSwiglu, ///< gpt-oss: g' sigmoid(alpha g') (u' + 1), g' = min(g, limit),
                 ///< u' = clamp(u, -limit, limit).
};

/// The biases of gpt-oss's experts: [experts, ffn], [experts, ffn],
/// [experts, hidden].
struct MoeBiases {
  const std::vector<float> *gate = nullptr, *up = nullptr, *down = nullptr;
};

/// Rounds `count` rows of `width` values as a kernel reads them (the int8
/// kernels' per-row input quantization, for one).
using RowRounding = std::function<std::vector<float>(
    const std::vector<float> &rows, int64_t count, int64_t width)>;

/// result[t] = sum_j weights[t, j] (down[e] act(gate[e] x + gb, up[e] x + ub)
/// + db), e = experts[t, j] clamped into [0, numExperts); gate and up are
/// [numExperts, ffn, hidden], down [numExperts, hidden, ffn]. The rows the
/// products read may be rounded first: x by `roundInputs` (for gate and up),
/// each act(...) by `roundActivations` after rounding it to float (the
/// packed kernels' f32 activations, quantized again for a quantized down).
std::vector<float> moeExperts(const std::vector<float> &x, int64_t tokens,
                              int64_t hidden, const MoeRouting &routing,
                              int64_t topK, const std::vector<float> &gate,
                              const std::vector<float> &up,
                              const std::vector<float> &down,
                              int64_t numExperts, int64_t ffn,
                              MoeActivation activation, double alpha = 0.0,
                              double limit = 0.0, MoeBiases biases = {},
                              const RowRounding &roundInputs = {},
                              const RowRounding &roundActivations = {});

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
