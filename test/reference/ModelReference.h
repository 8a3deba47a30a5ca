//===- ModelReference.h - Naive whole-model reference -----------*- C++ -*-===//
//
// The oracle of the end-to-end model tests: loads a Hugging Face style model
// folder (config.json + model.safetensors) with its own small JSON and
// safetensors readers and runs the forward pass of HF transformers' fp32
// model over a token sequence, composed of the op references in Reference.h
// (double accumulation, one rounding to float per op result): either one
// call from position 0 without a cache, or HF's cached generation, one
// call per step with a KV cache. Families: gpt2, llama, mistral, qwen2,
// qwen3, smollm3, gemma, gemma2, gemma3_text (and gemma3's text_config),
// phi3, gpt_neox, gptj, opt, bloom, xglm, and the mixture-of-experts
// qwen3_moe, qwen2_moe, mixtral and gpt_oss (docs/reference.md has the keys
// each reads and the HF subtleties it follows; README.md those of the MoE
// families).
//
// Independent of the compiler and the runtime on purpose: it shares no code
// with them, so that a misreading of a checkpoint in one cannot be hidden by
// the same misreading in the other. Plain C++17; no MLIR or LLVM.
//
// Numerics convention: the compiled ops hold epsilons, rope theta, the
// attention scale and other scalars as f32 attributes, so the forward pass
// rounds each of them to float before passing double(float(value)) to
// Reference.h; vectors HF computes once (scaled RoPE inverse frequencies,
// ALiBi slopes) are rounded to float as HF holds them. Angles and the
// sinusoidal tables are computed in double and rounded once, as the
// compiled code does (docs/lowering.md, Numerics).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_REFERENCE_MODELREFERENCE_H
#define ATTN_TEST_REFERENCE_MODELREFERENCE_H

#include "Quantize.h"
#include "Reference.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace attn {
namespace ref {

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

/// The supported `model_type`s. docs/reference.md lists every key each one
/// reads, with the default HF applies when the key is absent.
enum class Architecture {
  GPT2,    ///< gpt2
  Llama,   ///< llama
  Mistral, ///< mistral: sliding window, decoupled head_dim
  Qwen2,   ///< qwen2: q/k/v biases, per-layer sliding window
  Qwen3,   ///< qwen3: per-head q/k RMSNorm before RoPE, explicit head_dim
  SmolLM3, ///< smollm3: llama whose NoPE layers (no_rope_layers) skip RoPE
  Gemma,   ///< gemma: GeGLU, (1 + w) RMSNorm, embeddings * sqrt(hidden)
  Gemma2,  ///< gemma2: gemma + sandwich norms, softcaps, alternating windows
  Gemma3,  ///< gemma3_text (or gemma3's text_config): gemma2 + (1 + w) q/k
           ///< norms, 5 local : 1 global layers, a RoPE table per kind
  Phi3,    ///< phi3: fused qkv_proj and gate_up_proj, partial rotary
  GPTNeoX, ///< gpt_neox: per-head fused qkv, partial rotary, parallel residual
  GPTJ,    ///< gptj: interleaved partial rotary, shared ln_1, lm_head bias
  OPT,     ///< opt: learned positions (offset 2), ReLU, pre- or post-norm
  Bloom,   ///< bloom: ALiBi, embedding LayerNorm, per-head fused qkv
  XGLM,    ///< xglm: sinusoidal positions (offset 2), scaled embeddings
  Qwen3Moe, ///< qwen3_moe: qwen3's attention, a sparse MoE MLP (mlp.gate,
            ///< mlp.experts.E.*) on the layers decoder_sparse_step and
            ///< mlp_only_layers pick, a dense one on the others
  Qwen2Moe, ///< qwen2_moe: qwen2's attention (qkv_bias), qwen3_moe's sparse
            ///< layers plus a shared expert (mlp.shared_expert.*) under
            ///< its sigmoid gate (mlp.shared_expert_gate)
  Mixtral,  ///< mixtral: mistral's attention, a sparse MoE MLP
            ///< (block_sparse_moe.gate, experts.E.w1/w2/w3) on every layer
  GptOss,   ///< gpt_oss: q/k/v/o biases, attention sinks, windows on the
            ///< layer_types layers, yarn; the router with a bias (top k,
            ///< then softmax) and stacked experts with biases and the
            ///< clamped SwiGLU (mlp.experts.gate_up_proj interleaved)
};

/// The MLP activation, by HF ACT2FN name.
enum class Activation {
  GeluErf,  ///< gelu
  GeluTanh, ///< gelu_new, gelu_pytorch_tanh, gelu_fast (and BLOOM's gelu)
  Relu,     ///< relu
  Silu,     ///< silu, swish
};

/// The hyperparameters of a model, with the family's defaults applied.
struct ModelConfig {
  Architecture architecture = Architecture::Llama;
  int64_t vocab = 0;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  /// MLP width: GPT-2/GPT-J n_inner (4 * n_embd when null), OPT/XGLM
  /// ffn_dim, BLOOM 4 * hidden_size, the others intermediate_size.
  int64_t ffn = 0;
  /// n_positions / max_position_embeddings (BLOOM has none:
  /// kNoPositionLimit). It bounds the sequence only where it sizes a fixed
  /// position table (GPT-2, OPT, GPT-J); rope scaling reads it.
  int64_t maxPositions = 0;
  /// The norm epsilon as written in the file (layer_norm_epsilon,
  /// rms_norm_eps, layer_norm_eps; OPT and XGLM use torch's 1e-5).
  double normEps = 1e-5;
  /// RoPE base as written in the file (rope_theta; GPT-NeoX
  /// rotary_emb_base; GPT-J 10000).
  double ropeTheta = 10000.0;
  /// Whether the output head is the token embedding matrix.
  bool tieEmbeddings = true;
  /// GPT-2 activation_function: gelu_new / gelu_pytorch_tanh / gelu_fast =
  /// Tanh, gelu = Erf (also set, as `activation`, for GPT-2).
  GeluApproximation gelu = GeluApproximation::Tanh;
  /// The MLP activation (of the gate for the gated families).
  Activation activation = Activation::Silu;

  /// RoPE families: the leading features of each head that rotate
  /// (head_dim, times partial_rotary_factor / rotary_pct; GPT-J rotary_dim);
  /// 0 for the families without RoPE.
  int64_t rotaryDim = 0;
  /// RotateHalf except GPT-J (rotate_every_two: Interleaved).
  RopePairing ropePairing = RopePairing::RotateHalf;
  /// rope_scaling (llama, mistral, qwen2, qwen3, smollm3, gemma, gemma2;
  /// gemma3: of the global layers; phi3: longrope only).
  RopeScaling ropeScaling;
  /// SmolLM3: whether layer i rotates q and k (no_rope_layers[i] == 1, or
  /// (i + 1) % no_rope_layer_interval != 0); the others (NoPE layers)
  /// attend without any position encoding. Empty = every layer rotates.
  std::vector<bool> ropeLayers;
  /// Gemma 3: the sliding layers rotate with a table of their own,
  /// rope_local_base_freq and no scaling (transformers 5:
  /// rope_parameters.sliding_attention); the others use ropeTheta and
  /// ropeScaling (rope_parameters.full_attention).
  bool localRope = false;
  double localRopeTheta = 10000.0;
  RopeScaling localRopeScaling;

  /// Sliding window size (keys with pos - j < window are visible); 0 =
  /// none. slidingLayers[i] says whether layer i uses it (Mistral and Phi3:
  /// every layer; Qwen2, Qwen3, Gemma 2 and 3: layer_types; SmolLM3:
  /// layer_types, else its NoPE layers).
  int64_t slidingWindow = 0;
  std::vector<bool> slidingLayers;
  /// Qwen3, Gemma 3: q and k pass through an RMSNorm over each head's
  /// head_dim features (q_norm / k_norm, weights [head_dim], eps
  /// rms_norm_eps) after their projection and before RoPE.
  bool qkNorm = false;
  /// Gemma, Gemma 2 and 3: every RMSNorm (q_norm / k_norm included)
  /// multiplies by 1 + w, rounded to float.
  bool normPlusOne = false;
  /// Gemma 2 and 3: post_attention_layernorm normalizes the attention
  /// output before its residual add, and the MLP reads
  /// pre_feedforward_layernorm(x) and passes through
  /// post_feedforward_layernorm before its own.
  bool sandwichNorms = false;
  /// Gemma 2 and 3: the attention scale is query_pre_attn_scalar^-0.5
  /// instead of head_dim^-0.5; 0 = head_dim.
  double queryPreAttnScalar = 0.0;
  /// attn_logit_softcapping: each scaled score s becomes
  /// cap * tanh(s / cap) before the mask; 0 = none (null).
  double attnSoftcap = 0.0;
  /// final_logit_softcapping: the logits likewise; 0 = none (null).
  double finalSoftcap = 0.0;
  /// gemma3 (Gemma3ForConditionalGeneration): the text model of a
  /// multimodal checkpoint, read from text_config; its tensors are named
  /// model.language_model.* (language_model.model.* in the files) and the
  /// vision tower's are skipped.
  bool multimodal = false;

  /// Biases of the attention projections, per family: Qwen2 q/k/v (always);
  /// Gemma, Qwen3 and SmolLM3 attention_bias (q/k/v/o); GPT-NeoX attention_bias
  /// (query_key_value and dense); OPT enable_bias (q/k/v/out); GPT-2, BLOOM,
  /// XGLM always (all).
  bool attentionBias = false;
  /// Biases of the MLP linears: OPT enable_bias; GPT-2, GPT-NeoX, GPT-J,
  /// BLOOM, XGLM always.
  bool mlpBias = false;
  /// GPT-NeoX use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)).
  bool parallelResidual = false;
  /// OPT do_layer_norm_before (false: post-norm, as opt-350m).
  bool layerNormBefore = true;
  /// OPT: the decoder's final_layer_norm exists (do_layer_norm_before and
  /// not _remove_final_layer_norm).
  bool finalLayerNorm = true;
  /// BLOOM apply_residual_connection_post_layernorm.
  bool residualFromNorm = false;
  /// Multiplies the token embeddings: Gemma (1, 2, 3) float32(sqrt(hidden_size)),
  /// XGLM float32(sqrt(d_model)) when scale_embedding; else 1.
  double embeddingScale = 1.0;
  /// XGLM: the sinusoidal table row that is zeroed (pad_token_id); -1 = none.
  int64_t positionPaddingIndex = -1;

  /// Mixture of experts (qwen3_moe, qwen2_moe, mixtral, gpt_oss).
  /// moeLayers[i]: layer i's MLP is the sparse block (qwen3_moe,
  /// qwen2_moe: i not in mlp_only_layers, num_experts > 0 and (i + 1) %
  /// decoder_sparse_step == 0; mixtral, gpt_oss: every layer); the other
  /// layers have the dense MLP of `ffn` (intermediate_size). Empty for the
  /// dense families.
  std::vector<bool> moeLayers;
  /// The routed experts of a sparse layer (num_experts; mixtral
  /// num_local_experts), the experts each token uses (num_experts_per_tok,
  /// at most `experts`) and their MLP width (moe_intermediate_size; mixtral
  /// intermediate_size).
  int64_t experts = 0;
  int64_t expertsPerToken = 0;
  int64_t expertFfn = 0;
  /// The chosen probabilities are divided by their sum: qwen3_moe and
  /// qwen2_moe norm_topk_prob (default false), mixtral always.
  bool normalizeTopK = false;
  /// qwen2_moe: every sparse layer also runs a shared expert, a gated MLP
  /// of this width (shared_expert_intermediate_size; mlp.shared_expert.*),
  /// on every token and adds it to the routed sum times
  /// sigmoid(x . mlp.shared_expert_gate); 0 = none.
  int64_t sharedExpertFfn = 0;
  /// gpt_oss's clamped SwiGLU: swiglu_alpha (1.702), swiglu_limit (7).
  double swigluAlpha = 1.702, swigluLimit = 7.0;

  /// Keys that transformers versions read differently, and keys HF ignores
  /// that look meaningful: one line each, for the caller to show.
  std::vector<std::string> notes;
};

/// ModelConfig::maxPositions of the families without a position limit.
constexpr int64_t kNoPositionLimit = int64_t(1) << 24;

/// The model_type of an architecture ("gpt_neox", ...).
const char *modelTypeName(Architecture architecture);

/// Parses the text of a config.json. Unsupported settings (another
/// model_type, unsupported rope types (any but longrope for phi3),
/// mixture-of-experts keys outside the MoE families, vision keys, OPT's
/// word_embed_proj_dim != hidden_size, num_experts_per_tok above the
/// experts, ...) are errors that name the key.
bool parseModelConfig(const std::string &jsonText, ModelConfig &config,
                      std::string &error);

/// Reads and parses a config.json file; errors name the file.
bool loadModelConfig(const std::string &path, ModelConfig &config,
                     std::string &error);

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

/// One tensor of a safetensors file, converted to float32.
struct StoredTensor {
  std::string dtype; ///< safetensors dtype: F32, F16, BF16 (others unread).
  std::vector<int64_t> shape;
  std::vector<float> data; ///< Row-major; empty when dtype is unsupported.
};

/// An open safetensors file: the parsed header, and data read on demand.
class SafetensorsFile {
public:
  struct Entry {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0; ///< Byte offsets into the data section.
  };

  /// Opens and validates the header (offsets inside the file, sizes equal
  /// to shape x dtype width for known dtypes).
  static std::unique_ptr<SafetensorsFile> open(const std::string &path,
                                               std::string &error);
  ~SafetensorsFile();

  /// The entries in header order (__metadata__ excluded).
  const std::vector<Entry> &entries() const { return entryList; }
  const std::string &path() const { return filePath; }

  /// Reads an F32, F16 or BF16 tensor converted to float32.
  bool read(const Entry &entry, std::vector<float> &out,
            std::string &error) const;

private:
  SafetensorsFile() = default;
  std::string filePath;
  void *file = nullptr; // std::FILE*, kept out of the header.
  uint64_t dataStart = 0;
  std::vector<Entry> entryList;
};

/// Reads every tensor of a file (unsupported dtypes with empty data).
bool readSafetensors(const std::string &path,
                     std::map<std::string, StoredTensor> &tensors,
                     std::string &error);

/// IEEE binary16 / bfloat16 to float32 (exact).
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// The keys and values of one sequence, per layer, as HF's DynamicCache
/// holds them: keys after RoPE (rotated when they were computed).
struct KvCache {
  std::vector<std::vector<float>> keys, values; ///< [length, kvHeads * headDim]
  int64_t length = 0;                           ///< tokens so far
};

/// What a forward call computes on the way, as HF's output_attentions and
/// output_hidden_states show it (but the residual stream before the final
/// norm, which HF's last hidden state is after).
struct Inspection {
  /// [layers, heads, n, keys]: each layer's softmax weights, 0 where masked.
  std::vector<float> attention;
  /// [layers + 1, n, hidden]: the first layer's input, then each layer's
  /// output.
  std::vector<float> residual;
  /// [n, hidden]: the final norm of the last layer's output (itself for a
  /// model without one), what the output head reads.
  std::vector<float> finalNorm;
  /// [layers, n, top k] in a mixture of experts (empty otherwise): the
  /// experts each layer's router chose for each token, best first, and
  /// their weights; -1 and 0 in a dense layer.
  std::vector<int32_t> experts;
  std::vector<float> expertWeights;
};

/// A transformers 5 name of canonical weights: a stacked experts tensor
/// (`stacked`; the per-expert weights its slabs hold, in slab order) or
/// mixtral's renamed router (one weight).
struct WeightAlias {
  std::vector<std::string> weights;
  std::vector<int64_t> shape; ///< of the tensor under this name
  bool stacked = false;
};

class ModelReference {
public:
  /// Loads DIR/config.json and DIR/model.safetensors. Tensor names are
  /// those of HF's *ForCausalLM state_dict (see expectedWeights); the base
  /// model's prefix ("transformer.", "model.", "gpt_neox.") may be absent,
  /// as in files saved from the bare model. The non-weight buffers real
  /// files carry (attn.bias, attn.masked_bias, attention.bias,
  /// rotary_emb.inv_freq, embed_positions.weights, a tied lm_head.weight)
  /// are skipped; other unknown tensors are skipped with a warning appended
  /// to `warnings` (when given), as are the config's notes. Missing tensors,
  /// wrong shapes and unsupported dtypes are errors naming the tensor.
  /// qwen3_moe, qwen2_moe and mixtral: a sparse layer's experts may be
  /// stored per expert (expectedWeights) or, as transformers 5 saves them,
  /// stacked: mlp.experts.gate_up_proj [experts, 2 ffn, hidden] (each
  /// expert's gate rows, then its up rows) and mlp.experts.down_proj
  /// [experts, hidden, ffn], read into the per-expert weights; mixtral's
  /// router may be named mlp.gate.weight (transformers 5). Both forms in
  /// one layer, or one of the two stacked tensors alone, is an error
  /// naming the tensors.
  static std::unique_ptr<ModelReference>
  load(const std::string &dir, std::string &error,
       std::vector<std::string> *warnings = nullptr);

  /// The same from tensors in memory, keyed by their stored names.
  static std::unique_ptr<ModelReference>
  create(const ModelConfig &config,
         const std::map<std::string, StoredTensor> &tensors, std::string &error,
         std::vector<std::string> *warnings = nullptr);

  /// The weights the forward pass reads, by canonical name, with their
  /// expected shapes, in forward order (per layer: norm, attention, norm,
  /// MLP). Canonical names are HF's *ForCausalLM state_dict names, except
  /// GPT-2's, which are bare (wte.weight, h.0.ln_1.weight, ...), and the
  /// MoE experts', which are the per-expert ones of transformers 4 (see
  /// load for the stacked form).
  static std::vector<std::pair<std::string, std::vector<int64_t>>>
  expectedWeights(const ModelConfig &config);

  const ModelConfig &config() const { return modelConfig; }

  /// A weight by canonical name, or null.
  const std::vector<float> *weight(const std::string &name) const;

  /// Rounds a weight (canonical name) to the nearest bf16, ties to even:
  /// the model as a bf16 checkpoint or bf16-packed weights hold it. False
  /// when there is no such weight. The transformers 5 names of load (a
  /// stacked experts tensor, mixtral's mlp.gate.weight) round the weights
  /// they hold, whichever form the checkpoint had.
  bool roundWeightToBf16(const std::string &name);

  /// The model as the q8_0 / q4_0 kernels compute it: rounds a weight
  /// through the format along its `in` input features (`outIn`: stored
  /// [out, in], else [in, out]), and from then on quantizes the rows a
  /// projection with that weight reads to int8 per block of 32, as the
  /// kernels quantize their input (quantizeActivationRows). An embedding
  /// table read as the output projection (tied) is gathered as rounded. False
  /// when there is no such weight. A sparse MoE block's experts are
  /// quantized alike (every gate and up, every down) and its router never
  /// (the compiler keeps it f32): a forward pass over a mix fails with an
  /// error naming the weight, as does a quantized shared_expert_gate
  /// (qwen2_moe; its shared expert's projections are dense ones). A
  /// stacked [experts, ...] tensor (gpt_oss's experts, `experts` > 1) is
  /// rounded slab by slab; a weight already rounded is left as it is
  /// (several packed buffers read one tensor). transformers 5's stacked
  /// mlp.experts.gate_up_proj / down_proj (qwen3_moe, qwen2_moe, mixtral;
  /// [experts, out, in], so `outIn` must be true) round each slab's
  /// per-expert weights alike, whichever form the checkpoint had.
  bool quantizeWeight(const std::string &name, int64_t in, bool outIn,
                      QuantFormat format, int64_t experts = 1);

  /// How the cache holds keys and values: as computed (f32), or rounded to
  /// the nearest bf16 / f16 (ties to even) as they are appended, which every
  /// later attention over them then reads, the new rows' own included.
  enum class CacheFormat { F32, BF16, F16 };
  void setCacheFormat(CacheFormat format) { cacheFormat = format; }

  /// Logits [tokens.size(), vocab] of every position, the tokens at
  /// positions 0 .. n-1, in one forward call without a cache. Requires
  /// n >= 1, every token in [0, vocab), and n <= maxPositions for the
  /// families with a fixed position table (GPT-2, OPT, GPT-J); RoPE, ALiBi
  /// and XGLM's sinusoidal table run past max_position_embeddings as HF
  /// does.
  bool forward(const std::vector<int64_t> &tokens, std::vector<float> &logits,
               std::string &error) const;

  /// One forward call of HF's cached generation: `tokens` at positions
  /// cache.length .. cache.length + n - 1 attend to the cached keys and
  /// values and to each other (causally), and their keys and values are
  /// appended to `cache`. Logits [n, vocab]. forward() is step() on an
  /// empty cache. `inspection`, when given, records what the call computes.
  bool step(const std::vector<int64_t> &tokens, KvCache &cache,
            std::vector<float> &logits, std::string &error,
            Inspection *inspection = nullptr) const;

  /// Cached decode: step() over the first `prefill` tokens, then over each
  /// remaining token alone; the logits of every position, [n, vocab], as
  /// forward() returns them. For every configuration this equals forward()
  /// (bit for bit), except rope_scaling "dynamic" past max_position_embeddings
  /// and "longrope" past original_max_position_embeddings: there each call
  /// rotates its queries and keys with the table of its own length (the last
  /// position + 1: dynamic's base, longrope's short or long factors) and
  /// cached keys keep theirs, as HF's cached generation computes.
  bool forwardCached(const std::vector<int64_t> &tokens, int64_t prefill,
                     std::vector<float> &logits, std::string &error) const;

  /// forward() that also records `inspection` (keys: the n tokens).
  bool inspect(const std::vector<int64_t> &tokens, Inspection &inspection,
               std::vector<float> &logits, std::string &error) const;

private:
  ModelReference() = default;
  std::vector<float> run(const std::vector<int64_t> &ids, KvCache &cache,
                         Inspection *inspection) const;
  const std::vector<float> &w(const std::string &name) const;

  ModelConfig modelConfig;
  std::map<std::string, std::vector<float>> weights;
  /// transformers 5's names of canonical weights (load).
  std::map<std::string, WeightAlias> aliases;
  /// Weights whose projections read int8-quantized inputs.
  std::set<const std::vector<float> *> quantizedInputs;
  CacheFormat cacheFormat = CacheFormat::F32;
};

/// XGLMSinusoidalPositionalEmbedding's table, rows [0, positions) of
/// [positions, dim] (position p reads row p + 2): with half = dim / 2 and
/// c = ln(10000) / (half - 1), column i < half of row r is
/// sin(r * exp(-i c)) and column half + i its cos (concatenated, not
/// interleaved); an odd dim has a zero last column; row paddingIndex
/// (pad_token_id; -1 = none) is all zero. Double inside, rounded once.
std::vector<float> xglmSinusoidalPositions(int64_t positions, int64_t dim,
                                           int64_t paddingIndex);

/// The experts of one sparse MoE layer, one entry per expert: gate and up
/// [ffn, hidden] (qwen3_moe / qwen2_moe gate_proj / up_proj, mixtral w1 /
/// w3), down [hidden, ffn] (down_proj, w2).
struct ExpertWeights {
  std::vector<const std::vector<float> *> gate, up, down;
};

/// The sparse MoE block of qwen3_moe and mixtral (HF's
/// Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock; qwen2_moe's routed part)
/// on x [tokens, hidden]:
/// p = softmax(x router^T) over every expert (router [experts, hidden], no
/// bias), the `topK` largest p best first (equal p: the lower expert first,
/// this project's choice; NaN above every number), divided by their sum
/// when `normalize`, and y = sum_j w_j down_e(silu(gate_e x) * up_e x) over
/// the chosen experts e. Composed of moeRouter and moeExperts (Reference.h):
/// double inside, the router's softmax included (HF: float32); the weights
/// and y rounded to float once. `routing`, when given, receives the choice
/// (expert ids into `experts`). `roundInputs` and `roundActivations` round
/// the rows the experts read (moeExperts). Throws std::invalid_argument on
/// sizes that do not fit or topK outside [1, experts].
std::vector<float> sparseMoeBlock(const std::vector<float> &x, int64_t tokens,
                                  int64_t hidden,
                                  const std::vector<float> &router,
                                  const ExpertWeights &experts, int64_t ffn,
                                  int64_t topK, bool normalize,
                                  MoeRouting *routing = nullptr,
                                  const RowRounding &roundInputs = {},
                                  const RowRounding &roundActivations = {});

/// The index of the largest of `n` values: the first on ties and the first
/// NaN if any, as torch.argmax.
int64_t argmax(const float *values, int64_t n);

} // namespace ref
} // namespace attn

#endif // ATTN_TEST_REFERENCE_MODELREFERENCE_H
