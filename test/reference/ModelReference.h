//===- ModelReference.h - Naive whole-model reference -----------*- C++ -*-===//
//
// The oracle of the end-to-end model tests: loads a Hugging Face style model
// folder (config.json + model.safetensors) with its own small JSON and
// safetensors readers and runs the full forward pass over a token sequence
// from position 0, without a KV cache, composed of the op references in
// Reference.h (double accumulation, one rounding to float per op result).
//
// Independent of the compiler and the runtime on purpose: it shares no code
// with them, so that a misreading of a checkpoint in one cannot be hidden by
// the same misreading in the other. Plain C++17; no MLIR or LLVM.
//
// Numerics convention: the compiled ops hold epsilons, rope theta and the
// attention scale as f32 attributes, so the forward pass rounds each of them
// to float before passing double(float(value)) to Reference.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_REFERENCE_MODELREFERENCE_H
#define ATTN_TEST_REFERENCE_MODELREFERENCE_H

#include "Reference.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn {
namespace ref {

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

enum class Architecture { GPT2, Llama };

/// The hyperparameters of a model, with the family's defaults applied.
struct ModelConfig {
  Architecture architecture = Architecture::Llama;
  int64_t vocab = 0;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  /// MLP width: GPT-2 n_inner (4 * n_embd when null), LLaMA intermediate_size.
  int64_t ffn = 0;
  /// GPT-2 n_positions, LLaMA max_position_embeddings.
  int64_t maxPositions = 0;
  /// GPT-2 layer_norm_epsilon, LLaMA rms_norm_eps, as written in the file.
  double normEps = 1e-5;
  /// LLaMA rope_theta, as written in the file.
  double ropeTheta = 10000.0;
  /// LLaMA tie_word_embeddings; always true for GPT-2.
  bool tieEmbeddings = true;
  /// GPT-2 activation_function: gelu_new / gelu_pytorch_tanh = Tanh,
  /// gelu = Erf.
  GeluApproximation gelu = GeluApproximation::Tanh;
};

/// Parses the text of a config.json. Unsupported settings (another
/// model_type, rope_scaling, attention biases in LLaMA, ...) are errors.
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

class ModelReference {
public:
  /// Loads DIR/config.json and DIR/model.safetensors. GPT-2 names may be
  /// bare or prefixed with "transformer."; the non-weight buffers real files
  /// carry (attn.bias, attn.masked_bias, rotary_emb.inv_freq, a tied
  /// lm_head.weight) are skipped; other unknown tensors are skipped with a
  /// warning appended to `warnings` (when given). Missing tensors, wrong
  /// shapes and unsupported dtypes are errors naming the tensor.
  static std::unique_ptr<ModelReference>
  load(const std::string &dir, std::string &error,
       std::vector<std::string> *warnings = nullptr);

  /// The same from tensors in memory, keyed by their stored names.
  static std::unique_ptr<ModelReference>
  create(const ModelConfig &config,
         const std::map<std::string, StoredTensor> &tensors, std::string &error,
         std::vector<std::string> *warnings = nullptr);

  /// The weights the forward pass reads, by canonical name (GPT-2 names
  /// without the prefix), with their expected shapes, in a fixed order.
  static std::vector<std::pair<std::string, std::vector<int64_t>>>
  expectedWeights(const ModelConfig &config);

  const ModelConfig &config() const { return modelConfig; }

  /// A weight by canonical name, or null.
  const std::vector<float> *weight(const std::string &name) const;

  /// Logits [tokens.size(), vocab] of every position, the tokens at
  /// positions 0 .. n-1. Requires 1 <= n <= maxPositions and every token in
  /// [0, vocab).
  bool forward(const std::vector<int64_t> &tokens, std::vector<float> &logits,
               std::string &error) const;

private:
  ModelReference() = default;
  std::vector<float> forwardGpt2(const std::vector<int64_t> &ids) const;
  std::vector<float> forwardLlama(const std::vector<int64_t> &ids) const;
  const std::vector<float> &w(const std::string &name) const;

  ModelConfig modelConfig;
  std::map<std::string, std::vector<float>> weights;
};

/// The index of the largest of `n` values: the first on ties and the first
/// NaN if any, as torch.argmax.
int64_t argmax(const float *values, int64_t n);

} // namespace ref
} // namespace attn

#endif // ATTN_TEST_REFERENCE_MODELREFERENCE_H
