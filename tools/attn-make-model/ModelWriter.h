//===- ModelWriter.h - Random Hugging Face style test models ----*- C++ -*-===//
//
// Writes a model folder (config.json + model.safetensors) in the layout of a
// real Hugging Face checkpoint of one of the families below (GPT-2, LLaMA,
// Mistral, Qwen2, Qwen3, SmolLM3, Gemma, Gemma 2, Gemma 3, Phi-3, GPT-NeoX,
// GPT-J, OPT, BLOOM, XGLM),
// filled with deterministic random weights, so that the compiler, the
// runtime and the reference model can be tested on any shape without
// downloading anything.
//
// The weights are drawn from a generator written here (splitmix64 seeding,
// xoshiro256**, Box-Muller with our own log/sin/cos in plain IEEE double
// arithmetic) rather than <random>, so that a (spec, seed) pair gives the
// same bytes on every platform and standard library. Every tensor has its
// own stream, seeded from the seed and the tensor's name without any
// checkpoint prefix: adding, omitting or renaming a tensor never changes the
// values of the others, and the bare and `transformer.`-prefixed variants of
// a model hold identical weights.
//
// Scales are chosen so that bugs show: with projections N(0, 1/sqrt(fan_in))
// and unit-variance embeddings the attention scores have unit variance, far
// from uniform, so a wrong RoPE pairing, GQA mapping or mask flips argmaxes.
//
// Which tensors a family has and how they are named is not said here: the
// tensor plan is the compiler's description of the config written here
// (DescriptionWeights.cpp), so a family is written once. The test reference
// reads the files with its own names, so a naming mistake in a description
// still cannot agree with itself.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_MAKEMODEL_MODELWRITER_H
#define ATTN_TOOLS_MAKEMODEL_MODELWRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace attn {
namespace modelgen {

/// The model families, each written in the layout of its Hugging Face
/// checkpoints (README.md has the table of names, shapes and layouts).
enum class Family {
  GPT2,    ///< "gpt2": Conv1D [in, out] weights, learned positions.
  Llama,   ///< "llama": nn.Linear [out, in] weights, RoPE, GQA.
  Mistral, ///< "mistral": LLaMA + sliding_window, head_dim always written.
  Qwen2,   ///< "qwen2": LLaMA + q/k/v biases, use_sliding_window.
  Qwen3,   ///< "qwen3": LLaMA + per-head q_norm / k_norm, head_dim written,
           ///< attention_bias (q/k/v/o), use_sliding_window, layer_types.
  Qwen3Moe, ///< "qwen3_moe": qwen3 with a mixture of experts (mlp.gate,
            ///< mlp.experts.{e}.{gate,up,down}_proj), dense layers by
            ///< mlp_only_layers and decoder_sparse_step.
  Qwen2Moe, ///< "qwen2_moe": qwen2's attention (qkv_bias), qwen3_moe's
            ///< experts, and a shared expert (mlp.shared_expert.*_proj)
            ///< scaled by sigmoid(mlp.shared_expert_gate).
  Mixtral, ///< "mixtral": mistral with a mixture of experts in every layer
           ///< (block_sparse_moe.gate, block_sparse_moe.experts.{e}.w1/w2/w3).
  GptOss,  ///< "gpt_oss": q/k/v/o biases, attention sinks, windows on the
           ///< even layers, yarn, stacked experts with biases (mlp.router,
           ///< mlp.experts.gate_up_proj interleaved, down_proj), clamped SwiGLU.
  SmolLM3, ///< "smollm3": LLaMA whose NoPE layers (no_rope_layers, else
           ///< every no_rope_layer_interval-th) skip RoPE; tied by
           ///< default, attention_bias (q/k/v/o), windows on NoPE layers.
  Gemma,   ///< "gemma": GeGLU, (1 + w) RMSNorm, sqrt(hidden) embed scale.
  Gemma2,  ///< "gemma2": gemma + four sandwich norms per layer,
           ///< query_pre_attn_scalar, softcaps, windows on even layers.
  Gemma3,  ///< "gemma3_text": gemma2 + (1 + w) q_norm / k_norm, 5 local : 1
           ///< global layers, rope_local_base_freq; `multimodal` writes the
           ///< "gemma3" form (text_config, language_model.* names).
  Phi3,    ///< "phi3": fused qkv_proj and gate_up_proj, partial rotary.
  GPTNeoX, ///< "gpt_neox": per-head fused query_key_value, parallel residual.
  GPTJ,    ///< "gptj": interleaved partial rotary, parallel block.
  OPT,     ///< "opt": learned positions at offset 2, ReLU.
  Bloom,   ///< "bloom": ALiBi, embedding LayerNorm, per-head fused qkv.
  XGLM,    ///< "xglm": sinusoidal positions at offset 2, scaled embeddings.
};

/// The family's "model_type" ("gpt2", "gpt_neox", ...).
const char *familyName(Family family);

/// rope_scaling of the RoPE families that support it (llama, mistral,
/// qwen2, qwen3, gemma), written as transformers writes it:
/// {"factor": F, "rope_type": "linear"}, dynamic likewise,
/// {"factor": F, "original_max_position_embeddings": N, "rope_type": "yarn"}
/// (N, beta_fast, beta_slow and attention_factor only when set) and
/// {"factor", "high_freq_factor", "low_freq_factor",
/// "original_max_position_embeddings", "rope_type": "llama3"}; phi3's
/// longrope as Phi-3.5-mini and Phi-4-mini write it: {"long_factor": [...],
/// "short_factor": [...], "type": "longrope"} and a top-level
/// "original_max_position_embeddings" (no factor: transformers derives
/// max_position_embeddings / original for the attention factor).
struct RopeScaling {
  enum class Type { None, Linear, Dynamic, Yarn, Llama3, LongRope };
  Type type = Type::None;
  double factor = 1.0;
  /// yarn (optional, 0 = omitted), llama3 and longrope (required).
  int64_t originalMaxPositions = 0;
  /// llama3.
  double lowFreqFactor = 0.0, highFreqFactor = 0.0;
  /// yarn, optional: 0 = omitted (transformers' defaults 32, 1 and
  /// 0.1 ln(factor) + 1 then apply).
  double betaFast = 0.0, betaSlow = 0.0, attentionFactor = 0.0;
  /// yarn: whether the correction range is rounded to whole pairs
  /// (false: written as "truncate": false, as gpt-oss's configs do).
  bool truncate = true;
  /// longrope: short_factor and long_factor, rotary dims / 2 positive
  /// numbers each; both empty = longRopeDefaultFactors for the spec's dims.
  std::vector<double> shortFactor, longFactor;
};

/// Generated longrope tables for `pairs` rotary pairs, shaped like the real
/// ones (short near 1, long growing over the pairs) but far from each other
/// and from 1: short_i = 1 + 0.5 i / (pairs - 1) (1 to 1.5), long_i =
/// 20^(i / (pairs - 1)) (1 to 20).
void longRopeDefaultFactors(int64_t pairs, std::vector<double> &shortFactor,
                            std::vector<double> &longFactor);

/// Parses "linear:F", "dynamic:F", "yarn:F[:ORIGINAL_MAX]" with optional
/// ",beta_fast=X", ",beta_slow=X", ",attention_factor=X",
/// "llama3:F:LOW:HIGH:ORIGINAL_MAX", or "longrope:ORIGINAL_MAX" with
/// optional ",short=A/B/...", ",long=A/B/..." (both or neither; without
/// them longRopeDefaultFactors). Returns false and sets `error` (one line)
/// on a malformed text; values are range-checked by validateSpec.
bool parseRopeScaling(const std::string &text, RopeScaling &out,
                      std::string &error);
/// "linear", "dynamic", "yarn", "llama3", "longrope" ("" for none).
const char *ropeScalingName(RopeScaling::Type type);

enum class DType { F32, F16, BF16 };

/// Everything that determines a generated model. Zero means "the family's
/// default" for the fields that say so.
struct ModelSpec {
  Family family = Family::Llama;
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  /// Key/value heads (llama, mistral, qwen2, qwen3, the gemmas, phi3); must divide
  /// heads. 0 = heads. The other families: 0 or heads.
  int64_t kvHeads = 0;
  /// MLP width. 0 = `n_inner: null` (4 * hidden) for gpt2 and gptj, and
  /// bloom's fixed 4 * hidden; the other families need one.
  int64_t ffn = 0;
  int64_t vocab = 97;
  /// n_positions / max_position_embeddings (bloom, with ALiBi, has none).
  int64_t maxPositions = 64;
  /// llama, qwen2: 0 = hidden / heads, and config.json has no head_dim key.
  /// mistral, qwen3, the gemmas: 0 = hidden / heads, head_dim always written
  /// (a qwen3 config without it would mean 128, a gemma one 256). The other
  /// families: 0 or hidden / heads.
  int64_t headDim = 0;
  /// rope_theta (gpt_neox rotary_emb_base; gptj fixes 10000).
  double ropeTheta = 10000.0;
  /// layer_norm_epsilon / rms_norm_eps / layer_norm_eps (opt and xglm fix
  /// nn.LayerNorm's 1e-5).
  double normEps = 1e-5;
  /// tie_word_embeddings (no lm_head.weight / embed_out.weight when set).
  /// Ignored for GPT-2, which always ties.
  bool tieEmbeddings = false;
  /// activation_function (gpt2, gptj, opt, xglm) or hidden_act (gpt_neox);
  /// empty = the family's default. Gated and bloom MLPs have a fixed one.
  std::string activation;
  /// GPT-2 only: prepended to every tensor name (e.g. "transformer.").
  std::string prefix;
  /// Add the non-weight buffers real checkpoints carry: GPT-2
  /// h.{i}.attn.bias (causal mask [1, 1, P, P]) and h.{i}.attn.masked_bias
  /// (scalar), LLaMA model.layers.{i}.self_attn.rotary_emb.inv_freq [hd/2].
  bool extraBuffers = false;
  /// Unknown tensors to add (shape [8], N(0, 1)), for warning tests.
  std::vector<std::string> extraTensors;
  /// Tensors to leave out, by stored name or by name without the prefix.
  std::vector<std::string> omitTensors;
  /// Single elements to overwrite after generation (e.g. with NaN or Inf,
  /// for the runtime's non-finite weight checks): tensor by stored name or
  /// by name without the prefix, flat element index, value.
  struct Poison {
    std::string tensor;
    int64_t index = 0;
    float value = 0.0f;
  };
  std::vector<Poison> poison;
  DType dtype = DType::F32;
  uint64_t seed = 0;
  /// 0: one model.safetensors. N >= 1: N shards in Hugging Face naming
  /// (model-00001-of-0000N.safetensors, the plan's tensors split in order
  /// into N runs of nearly equal count) and model.safetensors.index.json.
  int64_t shards = 0;
  /// mistral sliding_window, qwen2 and qwen3 sliding_window with
  /// use_sliding_window true, gemma2 and gemma3 sliding_window (on the
  /// layers their pattern or layer_types make sliding). 0 = none (mistral,
  /// gemma2, gemma3 write null; qwen2 writes use_sliding_window false and
  /// sliding_window = max positions, qwen3 false and null, as their
  /// checkpoints do).
  int64_t slidingWindow = 0;
  /// qwen2, qwen3 max_window_layers: layers with index >= this use the
  /// window. -1 = the default: 0 with a sliding window (every layer
  /// slides), the layer count without.
  int64_t maxWindowLayers = -1;
  /// qwen3, gemma2, gemma3 layer_types, one "full_attention" or
  /// "sliding_attention" per layer; when given it decides which layers
  /// slide (over qwen3's max_window_layers, gemma2's even layers and
  /// gemma3's sliding_window_pattern). Empty = not written.
  std::vector<std::string> layerTypes;
  /// qwen3, smollm3, gemma2, gemma3 attention_bias: biases on q_proj,
  /// k_proj, v_proj and o_proj.
  bool attentionBias = false;
  /// smollm3 no_rope_layers: one 0 (NoPE: q and k not rotated) or 1 (RoPE)
  /// per layer. Empty = not written, and no_rope_layer_interval decides.
  std::vector<int> noRopeLayers;
  /// smollm3 no_rope_layer_interval: layer i is NoPE when (i + 1) % N == 0.
  /// 0 = not written (SmolLM3Config's 4).
  int64_t noRopeLayerInterval = 0;
  /// gemma2, gemma3 query_pre_attn_scalar (scores are scaled by its
  /// ^-0.5), always written. 0 = the head dim.
  double queryPreAttnScalar = 0.0;
  /// gemma2, gemma3 attn_logit_softcapping and final_logit_softcapping;
  /// 0 = null (off). (transformers' Gemma3Attention ignores the first.)
  double attnSoftcap = 0.0, finalSoftcap = 0.0;
  /// gemma3 sliding_window_pattern, always written: layer i is global when
  /// (i + 1) % pattern == 0. 0 = 6, transformers' default.
  int64_t slidingWindowPattern = 0;
  /// gemma3 rope_local_base_freq: the RoPE base of the sliding layers
  /// (ropeTheta and ropeScaling are the global layers').
  double ropeLocalTheta = 10000.0;
  /// gemma3: write Gemma3ForConditionalGeneration's checkpoint, as Gemma 3
  /// 4B-27B's: config model_type "gemma3" with the text model's keys in
  /// text_config and a small vision_config; tensors named
  /// language_model.model.* (language_model.lm_head.weight when untied)
  /// plus two dummy vision tensors a text-only reader must skip. The text
  /// weights are those of the same spec without it, bit for bit.
  bool multimodal = false;
  /// With `multimodal`: the names transformers >= 4.52 saves instead
  /// (model.language_model.*, lm_head.weight, model.vision_tower.*).
  bool multimodalCurrentNames = false;
  /// qwen3_moe, qwen2_moe, mixtral: the experts as transformers 5 saves
  /// them, mlp.experts.gate_up_proj [experts, 2 ffn, hidden] (each
  /// expert's gate rows, then its up rows) and mlp.experts.down_proj
  /// [experts, hidden, ffn] (and mixtral's router as mlp.gate), holding the
  /// same values as the per-expert tensors.
  bool stackedExperts = false;
  /// llama, mistral, qwen2, qwen3, gemma, gemma2 rope_scaling; gemma3's
  /// applies to its global layers only; phi3: longrope only.
  RopeScaling ropeScaling;
  /// The fraction of each head's dims that rotate: gpt_neox rotary_pct
  /// (0 = 0.25, always written), phi3 partial_rotary_factor (0 = the key
  /// is not written, all dims rotate).
  double rotaryFraction = 0.0;
  /// gptj rotary_dim, always written. 0 = the head dim.
  int64_t rotaryDim = 0;
  /// qwen3_moe and mixtral: num_experts (num_local_experts),
  /// num_experts_per_tok, and qwen3_moe's moe_intermediate_size (mixtral's
  /// experts are `ffn` wide), norm_topk_prob, decoder_sparse_step (0 = not
  /// written: 1) and mlp_only_layers (dense layers of `ffn`).
  int64_t experts = 0, expertsPerToken = 0, moeFfn = 0;
  /// qwen2_moe shared_expert_intermediate_size.
  int64_t sharedExpertFfn = 0;
  bool normTopkProb = false;
  int64_t decoderSparseStep = 0;
  std::vector<int64_t> mlpOnlyLayers;
  /// gpt_oss swiglu_limit (its experts' clamp).
  double swigluLimit = 7.0;
  /// gpt_neox use_parallel_residual.
  bool parallelResidual = true;
  /// opt do_layer_norm_before (false: OPT-350m's post-LN blocks, and no
  /// decoder final_layer_norm).
  bool layerNormBefore = true;
  /// xglm scale_embedding (embeddings times sqrt(d_model)).
  bool scaleEmbedding = true;
  /// Peaked attention and large biases, so that a missing bias, a wrong
  /// q/k/v layout or a wrong position offset or pairing flips argmaxes:
  /// query and key projections (and the q/k parts of fused ones) get std
  /// 2/sqrt(fan_in), qwen3's and gemma3's q_norm / k_norm gains (which
  /// undo any projection scale) twice their usual size, and every bias
  /// N(0, 0.5).
  /// Off in every preset.
  bool sharp = false;
  /// Standard deviation of the token embedding (wte / embed_tokens).
  /// With a tied head (every GPT-2, tied LLaMA) and the default 1, the
  /// logit of the input token itself (|e_t|^2 ~ hidden) dominates, so the
  /// argmax of every position is its input token whatever the layers do:
  /// bugs change logit values but not argmaxes, and greedy generation
  /// repeats the last token. 0.25 makes argmaxes depend on the layers
  /// (gemma and xglm, which multiply embeddings by sqrt(hidden): 0.25 /
  /// sqrt(hidden)). bloom normalizes its embeddings first, so there this is
  /// the scale of word_embeddings_layernorm (gain S (1 + N(0, 0.1)), bias
  /// N(0, 0.1 S)) and the embeddings are N(0, 1).
  double embeddingStd = 1.0;
};

/// The effective dimensions of a spec, after defaults.
int64_t effectiveKvHeads(const ModelSpec &spec);
int64_t effectiveFfn(const ModelSpec &spec);
int64_t effectiveHeadDim(const ModelSpec &spec);
std::string effectiveActivation(const ModelSpec &spec);
/// The rotated dims of each head for the RoPE families (head dim, or its
/// partial part for gpt_neox, gptj and a phi3 partial_rotary_factor); 0
/// for the others.
int64_t effectiveRotaryDims(const ModelSpec &spec);
/// phi3 longrope: the short and long factor tables written (the spec's,
/// else longRopeDefaultFactors for effectiveRotaryDims / 2 pairs); empty
/// without longrope.
void effectiveLongRopeFactors(const ModelSpec &spec,
                              std::vector<double> &shortFactor,
                              std::vector<double> &longFactor);
/// qwen2, qwen3 max_window_layers after the default.
int64_t effectiveMaxWindowLayers(const ModelSpec &spec);
/// gemma2, gemma3: which layers slide (layer_types, else gemma2's even
/// layers or gemma3's sliding_window_pattern); empty for other families.
std::vector<bool> effectiveSlidingLayers(const ModelSpec &spec);
/// smollm3: whether each layer rotates q and k (no_rope_layers, else the
/// interval's); empty for other families.
std::vector<bool> effectiveRopeLayers(const ModelSpec &spec);
/// gemma2, gemma3 query_pre_attn_scalar after the default.
double effectiveQueryPreAttnScalar(const ModelSpec &spec);
/// Whether the family's config class ties by default (a tied model of such
/// a family has no tie_word_embeddings key, as save_pretrained writes it).
bool familyTiesByDefault(Family family);

/// The presets: tiny-gpt2, tiny-llama, tiny-llama-tied, gpt2-small,
/// llama-15m, llama-110m, then tiny-<model_type> (and variants) of every
/// other family, qwen3-0.6b, gemma3-1b and phi4-mini.
std::vector<std::string> presetNames();
/// Sets `spec` to the named preset (seed and options at their defaults).
/// Returns false for an unknown name.
bool presetSpec(const std::string &name, ModelSpec &spec);

/// Checks dimensions and options; returns an empty string or one line
/// describing the first problem.
std::string validateSpec(const ModelSpec &spec);

/// How a tensor's values are made.
enum class TensorInit {
  Normal,     ///< mean + stddev * N(0, 1) from the tensor's stream.
  CausalMask, ///< GPT-2 attn.bias: 1 on and below the diagonal, else 0.
  Constant,   ///< every element = mean (GPT-2 attn.masked_bias, -1e4).
  InvFreq,    ///< LLaMA rotary inv_freq: theta^(-2i / headDim).
};

struct TensorDesc {
  /// The name stored in the file (prefix included).
  std::string name;
  /// The name without the prefix; seeds the tensor's stream.
  std::string canonicalName;
  std::vector<int64_t> shape;
  TensorInit init = TensorInit::Normal;
  double mean = 0.0;
  double stddev = 1.0;
  /// When non-empty, the std of each row (lineAxis 0, first dim) or column
  /// (lineAxis 1, last dim) instead of `stddev`: --sharp's larger q/k parts
  /// of fused projections.
  std::vector<double> lineStd;
  int lineAxis = 0;
  /// A bias: an element that would be stored as exactly zero in the file's
  /// dtype is replaced by +-2^-14, so that a dropped bias always shows.
  bool nonZero = false;
  /// Elements overwritten after generation (ModelSpec::poison): flat index
  /// and value.
  std::vector<std::pair<int64_t, float>> overrides;
  /// When non-empty, the tensor is these, concatenated (each from its own
  /// stream): transformers 5's stacked experts made of the per-expert ones.
  std::vector<TensorDesc> parts;
};

int64_t numElements(const TensorDesc &tensor);

/// The tensors of the model in file order, after extraBuffers,
/// extraTensors, omitTensors and poison: the ones the compiler's description
/// of configJson(spec) reads (DescriptionWeights.cpp). Returns false and sets
/// `error` when the spec is invalid, the compiler rejects its config, or an
/// omitted/extra name does not fit.
bool planTensors(const ModelSpec &spec, std::vector<TensorDesc> &tensors,
                 std::string &error);

/// The float32 values of one planned tensor, before any dtype conversion
/// (the file holds exactly these for F32, their F16/BF16 rounding otherwise).
std::vector<float> tensorValues(const ModelSpec &spec,
                                const TensorDesc &tensor);

/// config.json of the spec (assumes validateSpec passed).
std::string configJson(const ModelSpec &spec);

/// Writes DIR/config.json and DIR/model.safetensors (or, with spec.shards,
/// the shards and DIR/model.safetensors.index.json), creating DIR if needed
/// and removing the other form's file left by an earlier run. Returns false
/// and sets `error` to one line on failure.
bool writeModel(const ModelSpec &spec, const std::string &dir,
                std::string &error);

/// Writes `tensors` as one safetensors file at `path` (through a temporary
/// file renamed into place), their values from `spec`'s seed in its dtype.
/// For checkpoints of models no family describes (DescriptionWeights.h).
bool writeTensorFile(const ModelSpec &spec,
                     const std::vector<TensorDesc> &tensors,
                     const std::string &path, std::string &error);

/// "model-00002-of-00005.safetensors": shard `shard` (from 1) of `shards`.
std::string shardFileName(int64_t shard, int64_t shards);

/// "F32", "F16", "BF16" (safetensors dtype names) and their byte widths.
const char *dtypeName(DType dtype);
size_t dtypeSize(DType dtype);
/// Accepts F32/F16/BF16 and float32/float16/bfloat16, any case.
bool parseDType(const std::string &text, DType &dtype);

/// IEEE binary16 and bfloat16 from float32 with round-to-nearest-even,
/// overflow to infinity, gradual underflow, and NaN kept quiet and signed.
uint16_t floatToHalf(float value);
uint16_t floatToBFloat16(float value);

/// The generator's normal sampler, exposed for tests: `count` samples of
/// N(0, 1) from the stream seeded with `streamSeed`.
std::vector<double> standardNormals(uint64_t streamSeed, size_t count);

} // namespace modelgen
} // namespace attn

#endif // ATTN_TOOLS_MAKEMODEL_MODELWRITER_H
