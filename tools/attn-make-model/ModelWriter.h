//===- ModelWriter.h - Random Hugging Face style test models ----*- C++ -*-===//
//
// Writes a model folder (config.json + model.safetensors) in the layout of a
// real GPT-2 or LLaMA checkpoint, filled with deterministic random weights,
// so that the compiler, the runtime and the reference model can be tested on
// any shape without downloading anything.
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
// Plain C++17; no MLIR or LLVM dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_MAKEMODEL_MODELWRITER_H
#define ATTN_TOOLS_MAKEMODEL_MODELWRITER_H

#include <cstdint>
#include <string>
#include <vector>

namespace attn {
namespace modelgen {

enum class Family {
  GPT2,  ///< "model_type": "gpt2", Conv1D [in, out] weights, learned positions.
  Llama, ///< "model_type": "llama", nn.Linear [out, in] weights, RoPE, GQA.
};

enum class DType { F32, F16, BF16 };

/// Everything that determines a generated model. Zero means "the family's
/// default" for the fields that say so.
struct ModelSpec {
  Family family = Family::Llama;
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  /// LLaMA key/value heads; must divide heads. 0 = heads. GPT-2: 0 or heads.
  int64_t kvHeads = 0;
  /// MLP width. 0 = GPT-2's `n_inner: null` (4 * hidden); LLaMA needs one.
  int64_t ffn = 0;
  int64_t vocab = 97;
  /// GPT-2 n_positions (= n_ctx), LLaMA max_position_embeddings.
  int64_t maxPositions = 64;
  /// LLaMA only. 0 = hidden / heads, and config.json has no head_dim key.
  int64_t headDim = 0;
  /// LLaMA rope_theta.
  double ropeTheta = 10000.0;
  /// GPT-2 layer_norm_epsilon, LLaMA rms_norm_eps.
  double normEps = 1e-5;
  /// LLaMA tie_word_embeddings (no lm_head.weight when set). Ignored for
  /// GPT-2, which always ties.
  bool tieEmbeddings = false;
  /// GPT-2 activation_function; empty = "gelu_new".
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
  /// Standard deviation of the token embedding (wte / embed_tokens).
  /// With a tied head (every GPT-2, tied LLaMA) and the default 1, the
  /// logit of the input token itself (|e_t|^2 ~ hidden) dominates, so the
  /// argmax of every position is its input token whatever the layers do:
  /// bugs change logit values but not argmaxes, and greedy generation
  /// repeats the last token. 0.25 makes argmaxes depend on the layers.
  double embeddingStd = 1.0;
};

/// The effective dimensions of a spec, after defaults.
int64_t effectiveKvHeads(const ModelSpec &spec);
int64_t effectiveFfn(const ModelSpec &spec);
int64_t effectiveHeadDim(const ModelSpec &spec);
std::string effectiveActivation(const ModelSpec &spec);

/// The presets: tiny-gpt2, tiny-llama, tiny-llama-tied, gpt2-small,
/// llama-15m, llama-110m.
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
  /// Elements overwritten after generation (ModelSpec::poison): flat index
  /// and value.
  std::vector<std::pair<int64_t, float>> overrides;
};

int64_t numElements(const TensorDesc &tensor);

/// The tensors of the model in file order, after extraBuffers,
/// extraTensors, omitTensors and poison. Returns false and sets `error` when the
/// spec is invalid or an omitted/extra name does not fit.
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
