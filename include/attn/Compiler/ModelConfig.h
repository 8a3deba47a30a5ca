//===- ModelConfig.h - a decoder-only model as data ------------*- C++ -*-===//
//
// Every model the compiler builds is one ModelConfig: a family-neutral
// description of a decoder-only transformer (norms and where they sit, the
// position scheme, the attention variant, the MLP, the residual wiring, the
// embedding and head) plus the names and layouts of its weights in a
// checkpoint. One block builder reads it (ModelBuilder.cpp), and so do the
// weight table, the manifest and the summary; nothing else knows a family.
//
// A Hugging Face config.json becomes one through the reader of its
// model_type (lib/Compiler/families/<Family>.cpp, one small file each), which
// rejects what the description cannot express with an error naming the key.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_MODELCONFIG_H
#define ATTN_COMPILER_MODELCONFIG_H

#include "attn/Dialect/Attn/IR/AttnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace attn {

enum class NormKind { LayerNorm, RmsNorm };

/// LayerNorm (gain and bias) or RMSNorm (gain); `gainOffset` is added to the
/// stored gain (Gemma stores w and multiplies by 1 + w).
struct NormSpec {
  NormKind kind = NormKind::RmsNorm;
  double epsilon = 1e-5;
  double gainOffset = 0;
  bool hasBias() const { return kind == NormKind::LayerNorm; }
};

/// Alibi: a per-head linear bias on the scores (BLOOM), no embedding.
enum class PositionKind { None, Learned, Sinusoidal, Rotary, Alibi };

/// How RoPE's inverse frequencies are scaled to reach past the positions a
/// model was trained on: Hugging Face's rope_type (ROPE_INIT_FUNCTIONS in
/// modeling_rope_utils.py). `r` below is the rotary dimension count and
/// `f_i = theta^(-2i / r)` the unscaled inverse frequency of pair i.
enum class RopeScalingKind {
  None,    ///< "default": f_i.
  Linear,  ///< f_i / factor.
  Dynamic, ///< NTK: theta grows with the positions of each call (runtime).
  Yarn,    ///< NTK-by-parts ramp between f_i / factor and f_i; cos and sin
           ///< scaled by an attention factor.
  Llama3,  ///< Llama 3.1: f_i / factor below the low-frequency wavelength,
           ///< f_i above the high one, a smooth blend between.
  LongRope, ///< Phi-3: f_i / short_i, or f_i / long_i in a call whose last
            ///< position is past originalMaxPositions (runtime); cos and sin
            ///< scaled by an attention factor.
};

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::None;
  double factor = 1.0;
  /// The positions the scaling is measured against: the pre-training length
  /// (original_max_position_embeddings) for yarn and llama3, the model's
  /// max_position_embeddings for dynamic.
  int64_t originalMaxPositions = 0;
  /// Yarn: the correction range in rotations, whether its ends are rounded
  /// to whole pairs, and the attention factor (absent: from mscale and
  /// mscale_all_dim, or 0.1 ln(factor) + 1).
  double betaFast = 32.0, betaSlow = 1.0;
  bool truncate = true;
  std::optional<double> attentionFactor;
  double mscale = 0.0, mscaleAllDim = 0.0;
  /// Llama3: wavelengths longer than original / low scale by 1 / factor,
  /// shorter than original / high stay.
  double lowFreqFactor = 1.0, highFreqFactor = 4.0;
  /// LongRope: each pair's divisor for calls within originalMaxPositions
  /// (short) and past it (long); the attention factor is `attentionFactor`,
  /// else derived from `factor`.
  std::vector<double> shortFactor, longFactor;
};

struct PositionSpec {
  PositionKind kind = PositionKind::None;
  /// Learned: row `offset + p` of the table holds position p (OPT: 2);
  /// sinusoidal: position p is encoded as `offset + p` (XGLM: 2).
  int64_t offset = 0;
  /// Sinusoidal: where the sines and cosines go; the base is `theta`.
  SinusoidalLayout sinusoidal = SinusoidalLayout::Interleaved;
  /// Rotary.
  RopePairing pairing = RopePairing::RotateHalf;
  /// Features of each head that rotate (the first ones); 0 = all.
  int64_t rotaryDims = 0;
  double theta = 10000.0;
  RopeScaling scaling;
  /// Rotary: the base of the layers with a sliding window when it differs
  /// (Gemma 3's rope_local_base_freq); those layers rotate unscaled. 0: every
  /// layer rotates with `theta` and `scaling`.
  double localTheta = 0;

  /// The rotating features of a head of `headDim`.
  int64_t rotaryDimsOf(int64_t headDim) const {
    return rotaryDims ? rotaryDims : headDim;
  }

  /// Rotary: the layers that do not rotate q and k at all (SmolLM3's NoPE
  /// layers), by index; empty: every layer rotates.
  std::vector<int64_t> unrotatedLayers;

  /// How the sliding-window layers rotate: with `localTheta`, unscaled.
  PositionSpec local() const {
    PositionSpec local = *this;
    local.theta = localTheta;
    local.scaling = RopeScaling();
    local.localTheta = 0;
    return local;
  }
};

/// The inverse frequency of each of the `rotaryDims / 2` pairs under a
/// static scaling (none, linear, yarn, llama3; longrope's short table, or
/// with `longTable` its long one), in f64, as Hugging Face's
/// ROPE_INIT_FUNCTIONS compute them (they do it in f32). Not for dynamic,
/// which depends on the positions of each call (the op computes it).
llvm::SmallVector<double> ropeInverseFrequencies(const PositionSpec &positions,
                                                 int64_t rotaryDims,
                                                 bool longTable = false);

/// What cos and sin are multiplied by: yarn's and longrope's attention
/// factor, else 1.
double ropeAttentionFactor(const RopeScaling &scaling);

/// down(act(up(x))) for Gelu and Relu; down(act(gate(x)) * up(x)) for the
/// gated SwiGlu (silu) and GeGlu (gelu, Gemma).
enum class MlpKind { Gelu, Relu, SwiGlu, GeGlu };

struct MlpSpec {
  MlpKind kind = MlpKind::SwiGlu;
  /// The GELU form of Gelu and GeGlu.
  GeluApproximation gelu = GeluApproximation::Tanh;
  bool bias = false;
  /// The gate and up projections as one weight, rows gate | up (Phi-3).
  bool fusedGateUp = false;
  /// Whether there is a gate projection.
  bool gated() const { return kind == MlpKind::SwiGlu || kind == MlpKind::GeGlu; }
};

/// A mixture-of-experts MLP (Mixtral, Qwen3-MoE): a router sends each token
/// to `topK` of `numExperts` SwiGLU MLPs of `expertFfn` features
/// (attn.moe_router, attn.moe_experts). The layers in `denseLayers` keep a
/// dense MlpSpec MLP of intermediateSize (Qwen3-MoE's mlp_only_layers and
/// decoder_sparse_step).
struct MoeSpec {
  int64_t numExperts = 0; ///< 0: no mixture of experts
  int64_t topK = 0;
  int64_t expertFfn = 0;
  MoeScoring scoring = MoeScoring::SoftmaxTopK;
  /// The chosen softmax weights divided by their sum (Mixtral always,
  /// Qwen3-MoE's norm_topk_prob).
  bool normalize = false;
  std::vector<int64_t> denseLayers;
  /// gpt-oss: a bias on the router's logits; biases on every expert
  /// projection; the clamped SwiGLU, g' = min(g, limit),
  /// u' = clamp(u, -limit, limit), g' sigmoid(alpha g') (u' + 1).
  bool routerBias = false;
  bool expertBias = false;
  MoeActivation activation = MoeActivation::Swiglu;
  double alpha = 0, limit = 0;
  /// How the checkpoint stores the experts: one module per expert
  /// (WeightNames::expert holds "{}"), or stacked tensors
  /// (WeightNames::expertGateUp [experts, hidden, 2 ffn] with gate and up
  /// in alternate columns, expertDown [experts, ffn, hidden]: gpt-oss's
  /// x @ W layout; their biases under the same names + "_bias").
  bool stacked = false;
  /// A shared expert every token runs beside the routed ones (Qwen2-MoE,
  /// Qwen3-Next): a SwiGLU MLP of this width (0: none), its output scaled
  /// by sigmoid(x . w) with WeightNames::sharedExpertGate's [1, hidden] w
  /// when `sharedGate`, and added to the routed sum.
  int64_t sharedFfn = 0;
  bool sharedGate = false;
};

/// Where q, k and v come from in the checkpoint.
enum class QkvStorage {
  Separate,     ///< three weights (LLaMA's q_proj, k_proj, v_proj)
  Fused,        ///< one weight, rows q | k | v (GPT-2's c_attn, Phi-3)
  FusedPerHead, ///< one weight, rows per head: [heads][q, k, v][head_dim]
                ///< (GPT-NeoX's and BLOOM's query_key_value)
};

struct AttentionSpec {
  QkvStorage qkv = QkvStorage::Separate;
  bool qkvBias = false;
  bool outputBias = false;
  /// The scores' scale; 0 = 1/sqrt(head_dim).
  double scale = 0;
  /// Caps the scaled scores at c tanh(s / c) before the mask (Gemma 2's
  /// attn_logit_softcapping); 0 = none.
  double softcap = 0;
  /// An RMSNorm (the model's epsilon and gain offset) over each head of q
  /// and of k, after the projection and before RoPE: the qk-norm of Qwen3
  /// and Gemma 3, with gains [head_dim] (WeightNames::queryNorm, keyNorm).
  bool qkNorm = false;
  /// A learned logit per query head in each row's softmax (gpt-oss's
  /// attention sinks, WeightNames::sinks, [heads]).
  bool sinks = false;
  /// The sliding window of each layer (0: full attention), or empty when no
  /// layer has one.
  std::vector<int64_t> windows;

  int64_t windowOf(int64_t layer) const {
    return windows.empty() ? 0 : windows[layer];
  }
};

/// How a block's sublayers read and write the residual stream.
struct BlockSpec {
  /// Norms before the sublayers (x + f(norm(x))); else after the residual
  /// add (norm(x + f(x)): the original transformer, OPT's
  /// do_layer_norm_before false).
  bool preNorm = true;
  /// Attention and MLP both read the block's input and add to it at once
  /// (GPT-J, GPT-NeoX); `sharedNorm`: from one norm (GPT-J's ln_1).
  bool parallel = false;
  bool sharedNorm = false;
  /// A norm after the last block (absent with post-norm OPT).
  bool finalNorm = true;
  /// With pre-norm sequential blocks, a norm also on each sublayer's output
  /// before its residual add: x + norm2(f(norm1(x))) (Gemma 2 and 3's
  /// "sandwich": post_attention_layernorm, post_feedforward_layernorm).
  bool outputNorms = false;
};

/// The checkpoint's weight names: `layer` holds "{}" for the layer index;
/// the others are complete names (without the optional prefixes).
struct WeightNames {
  std::string tokenEmbedding, positionEmbedding;
  std::string embeddingNorm; ///< a prefix (BLOOM's word_embeddings_layernorm)
  std::string layer; ///< e.g. "model.layers.{}."
  /// Within a layer (appended to `layer`): norm names are prefixes to which
  /// "weight" and "bias" are appended.
  std::string attentionNorm, mlpNorm;
  /// The sublayer output norms (BlockSpec::outputNorms).
  std::string attentionOutputNorm, mlpOutputNorm;
  std::string query, key, value, qkv, output;
  std::string queryNorm, keyNorm; ///< prefixes, as the norms (qkNorm)
  std::string gate, up, down;
  std::string gateUp; ///< the fused gate | up module (MlpSpec::fusedGateUp)
  /// Mixture of experts (within a layer): the router module, the expert
  /// modules' prefix with "{}" for the expert index, and within an expert
  /// its gate, up and down modules.
  std::string router, expert, expertGate, expertUp, expertDown;
  /// Stacked experts (MoeSpec::stacked): the fused gate|up tensor (the
  /// down one is expertDown), whole tensor names within `expert`.
  std::string expertGateUp;
  /// The shared expert's module (its projections named as an expert's:
  /// expertGate, expertUp, expertDown) and its gate's module, within a layer.
  std::string sharedExpert, sharedExpertGate;
  /// transformers 5's stacked experts (MixtralExperts, Qwen3MoeExperts),
  /// read where a checkpoint has no per-expert tensors: the module holding
  /// gate_up_proj [experts, 2 ffn, hidden] (gate rows, then up rows) and
  /// down_proj [experts, hidden, ffn] (`mlp.experts.`), and the router's
  /// name there when it differs from `router` (Mixtral's `mlp.gate.`).
  std::string stackedExperts, stackedRouter;
  /// The attention sinks tensor, a whole name within a layer.
  std::string sinks;
  std::string finalNorm; ///< a prefix, as the layer norms
  std::string head;      ///< the output projection when not tied
  /// Weights that are "weight" and "bias" of one module: appended suffixes.
  std::string weightSuffix = "weight", biasSuffix = "bias";
  /// Names a checkpoint may put before every name (GPT-2's "transformer.").
  std::vector<std::string> prefixes;
  /// Buffers checkpoints carry that are not weights (causal-mask buffers,
  /// rotary inv_freq, a tied lm_head copy).
  std::vector<std::string> ignoredSuffixes;
  /// Modules of the checkpoint the model does not run, by name prefix (a
  /// multimodal checkpoint's vision tower).
  std::vector<std::string> ignoredPrefixes;

  /// `layer` with the index filled in.
  std::string layerPrefix(int64_t index) const;
};

/// The dimensions and options of a decoder-only transformer.
struct ModelConfig {
  /// The family (model_type), for the manifest and messages.
  std::string architecture;
  /// What of the checkpoint's config the model does not compute, for the
  /// user (attn-compile prints them): one sentence each.
  std::vector<std::string> notes;
  /// The weight format a GGUF file's tensor types call for when none is
  /// asked for (attnrt::ggufWeightFormat); empty for a folder.
  std::string sourceWeightFormat;
  /// Its output tensor's, when that differs (a Q4_0 file's Q6_K output).
  std::string sourceHeadFormat;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  int64_t intermediateSize = 0;
  /// Positions the model was built for (n_positions, max_position_embeddings).
  int64_t maxPositions = 0;
  /// Whether positions past maxPositions are meaningless (a learned table),
  /// and the config key that sets it (for messages).
  bool positionsBounded = false;
  std::string maxPositionsKey;

  NormSpec norm;
  PositionSpec positions;
  AttentionSpec attention;
  MlpSpec mlp;
  MoeSpec moe;
  BlockSpec block;
  /// A norm (the model's kind) right after the token embedding.
  bool embeddingNorm = false;
  /// Multiplies the token embeddings (Gemma: sqrt(hidden_size)); 1 = none.
  double embeddingScale = 1.0;
  /// A bias on the output projection (GPT-J's lm_head).
  bool headBias = false;
  /// Caps the logits at c tanh(l / c) (Gemma 2's final_logit_softcapping);
  /// 0 = none.
  double logitSoftcap = 0;
  /// Checkpoint projections are nn.Linear [out, in] (else Conv1D [in, out]).
  bool linearOutIn = true;
  /// Whether the output projection reuses the token embedding.
  bool tieEmbeddings = true;
  WeightNames names;

  llvm::StringRef familyName() const { return architecture; }
  /// Features of all query heads (differs from hiddenSize when head_dim is set).
  int64_t queryFeatures() const { return numHeads * headDim; }
  int64_t kvFeatures() const { return numKvHeads * headDim; }
  /// Whether `layer` rotates q and k (rotary positions, not a NoPE layer).
  bool rotatesLayer(int64_t layer) const {
    return positions.kind == PositionKind::Rotary &&
           !llvm::is_contained(positions.unrotatedLayers, layer);
  }
  /// Whether `layer`'s MLP is a mixture of experts.
  bool isMoeLayer(int64_t layer) const {
    return moe.numExperts > 0 && !llvm::is_contained(moe.denseLayers, layer);
  }
  /// Whether some layer has a dense MLP (MlpSpec, intermediateSize).
  bool hasDenseMlp() const {
    return moe.numExperts == 0 || !moe.denseLayers.empty();
  }
  /// Expert parameters a token does not use: the gate, up and down of the
  /// (experts - top_k) experts of each MoE layer it does not run.
  int64_t idleExpertParameters() const {
    int64_t moeLayers = 0;
    for (int64_t layer = 0; layer < numLayers; ++layer)
      moeLayers += isMoeLayer(layer);
    int64_t perExpert = 3 * moe.expertFfn * hiddenSize +
                        (moe.expertBias ? 2 * moe.expertFfn + hiddenSize : 0);
    return moeLayers * (moe.numExperts - moe.topK) * perExpert;
  }
  /// Whether `layer` rotates with positions.local() (a sliding-window layer
  /// of a model with a local RoPE base).
  bool usesLocalRope(int64_t layer) const {
    return positions.localTheta > 0 && attention.windowOf(layer) > 0;
  }
};

/// `config` as a model description file (docs/model-description.md): JSON
/// that parseModelConfig reads back to the same description.
std::string describeModel(const ModelConfig &config);

/// Parses config.json text, an HF config or a model description (marked by
/// "attn_model_description"); `fileName` prefixes error messages.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json,
                                             llvm::StringRef fileName);

/// Reads `path`: a config.json, or a folder that contains one.
llvm::Expected<ModelConfig> loadModelConfig(llvm::StringRef path);

/// What a weight tensor is, for the parameter summary.
enum class WeightRole { Embedding, Attention, Mlp, Norm, Output };

/// One tensor the compiled model reads, named as the checkpoint names it.
struct WeightSpec {
  std::string name;
  llvm::SmallVector<int64_t, 2> shape;
  WeightRole role;
  /// Transformer layer, or -1 for embeddings, final norm and output.
  int64_t layer = -1;
  /// Where else a checkpoint may hold the weight, when `name` is absent: a
  /// contiguous run of `numElements()` elements from `offset` within the
  /// tensor `name` of shape `shape` (an expert's projection within the
  /// stacked experts tensors transformers 5 saves). Empty name: none.
  struct Slice {
    std::string name;
    llvm::SmallVector<int64_t, 3> shape;
    int64_t offset = 0;
  } orSliceOf;

  int64_t numElements() const;
};

/// Every weight of `config`, in the order the compiled entry points take
/// them: embeddings, then each layer's, then the final norm and the output
/// projection (when not tied).
std::vector<WeightSpec> modelWeights(const ModelConfig &config);

/// The modules of expert `expert` within a layer: `names.expert` with the
/// index filled in.
std::string expertPrefix(const WeightNames &names, int64_t expert);

/// Prefixes a checkpoint may put before the names above.
std::vector<std::string> weightNamePrefixes(const ModelConfig &config);

/// Name suffixes of buffers checkpoints carry that are not weights.
std::vector<std::string> ignoredTensorSuffixes(const ModelConfig &config);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_MODELCONFIG_H
