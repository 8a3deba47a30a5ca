//===- ModelLayout.h - the weight table a compiled model reads --*- C++ -*-===//
//
// Which tensors the compiled entry points read, in which layout. The table
// (see runtime/include/attnrt/model_abi.h) holds the checkpoint's weights
// (entries 0..W-1, in modelWeights order) and then the packed buffers the
// runtime allocates and attn_model_pack fills at load time: every
// projection, in the [blocks, in_features, NR] layout the gemm kernels
// stream, with LLaMA's q/k/v projections concatenated into one. A weight
// only packing reads is not used at run time, and the runtime drops it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_MODELLAYOUT_H
#define ATTN_COMPILER_MODELLAYOUT_H

#include "attn/Compiler/ModelConfig.h"
#include "attn/Dialect/Attn/IR/PackedWeight.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace attn {

/// A projection in the packed layout: output features of one or more
/// checkpoint weights (or row ranges of them, or reordered rows),
/// concatenated, in blocks of blockSize; or a bias vector assembled the
/// same way.
/// How the packed projection matrices are stored (biases stay f32).
using WeightFormat = PackedFormat;

struct PackedWeight {
  /// A checkpoint weight that contributes `rows` output features.
  struct Source {
    int64_t weight;
    /// [out, in] (nn.Linear); otherwise [in, out] (Conv1D).
    bool outIn;
    int64_t rows;
    /// The first output feature of the weight taken (the up half of a
    /// fused gate|up weight).
    int64_t rowBegin = 0;
    /// With heads > 0 the weight's features are grouped per head,
    /// [heads][groups][headDim] (GPT-NeoX's and BLOOM's fused
    /// query_key_value: groups q, k, v), and are packed group-major,
    /// [groups][heads][headDim], so q, k and v are contiguous.
    int64_t heads = 0, groups = 0, headDim = 0;
    /// Tensor parallelism (the rank is a run-time value): rank r reads
    /// source rows from `rowBegin + r * rankRows` (a column-parallel slice
    /// of output features) and input features `r * rankColumns ..` (a
    /// row-parallel slice; `columns` of them, 0 = all). Rows at or past
    /// `validRows` (0: no limit) read as zeros: the padding of the last
    /// rank's vocabulary slice. `firstRankOnly`: ranks other than 0 read
    /// zeros (a row-parallel projection's bias, added once to the sum).
    int64_t rankRows = 0, rankColumns = 0, columns = 0, validRows = 0;
    bool firstRankOnly = false;
    /// A slice of a stacked [experts, ...] tensor: its expert (-1: the
    /// tensor is the source).
    int64_t expert = -1;
    bool rankDependent() const {
      return rankRows != 0 || rankColumns != 0 || firstRankOnly;
    }

    /// The weight's feature packed as feature `r` of this source.
    int64_t sourceRow(int64_t r) const {
      if (heads == 0)
        return rowBegin + r;
      int64_t group = r / (heads * headDim), head = r / headDim % heads;
      return rowBegin + (head * groups + group) * headDim + r % headDim;
    }
  };
  std::string name;
  int64_t inFeatures = 0;
  int64_t outFeatures = 0;
  int64_t blockSize = 0;
  /// A vector (a bias assembled from several, or reordered): [outFeatures],
  /// not blocks.
  bool vector = false;
  /// With experts > 0, the stacked projections of a mixture of experts:
  /// [experts, <packed shape>], source e filling expert e (each source
  /// holds all outFeatures of its expert).
  int64_t experts = 0;
  /// How a matrix is stored: f32, bf16 (rounded to nearest even when
  /// packed), or llama.cpp's q8_0 / q4_0 blocks (PackedWeight.h).
  WeightFormat format = WeightFormat::F32;
  llvm::SmallVector<Source, 3> sources;

  int64_t blocks() const { return (outFeatures + blockSize - 1) / blockSize; }
  llvm::SmallVector<int64_t, 4> shape() const {
    if (vector && experts > 0)
      return {experts, outFeatures};
    if (vector)
      return {outFeatures};
    llvm::SmallVector<int64_t, 4> shape =
        packedWeightShape(format, blocks(), inFeatures, blockSize);
    if (experts > 0)
      shape.insert(shape.begin(), experts);
    return shape;
  }
  int64_t bytes() const {
    if (vector)
      return std::max<int64_t>(experts, 1) * outFeatures * 4;
    int64_t elements = 1;
    for (int64_t dim : shape())
      elements *= dim;
    return elements * (format == WeightFormat::F32    ? 4
                       : format == WeightFormat::BF16 ? 2
                                                      : 1);
  }
};

/// The table entries of one layer; -1 where the model has none. The
/// projections are packed: q, k and v as one [q | k | v] buffer.
struct LayerEntries {
  int64_t attentionNorm = -1, attentionNormBias = -1;
  int64_t qkv = -1, qkvBias = -1;
  int64_t queryNorm = -1, keyNorm = -1;
  int64_t output = -1, outputBias = -1;
  int64_t mlpNorm = -1, mlpNormBias = -1;
  int64_t gate = -1, gateBias = -1, up = -1, upBias = -1, down = -1,
          downBias = -1;
  int64_t attentionOutputNorm = -1, attentionOutputNormBias = -1,
          mlpOutputNorm = -1, mlpOutputNormBias = -1;
  /// A mixture-of-experts layer's router (the checkpoint's [experts, hidden])
  /// and its experts' stacked packed projections; gpt-oss's router bias and
  /// expert biases ([experts, out]).
  int64_t router = -1, expertGate = -1, expertUp = -1, expertDown = -1;
  int64_t routerBias = -1, expertGateBias = -1, expertUpBias = -1,
          expertDownBias = -1;
  /// gpt-oss's attention sinks, [heads].
  int64_t sinks = -1;
  /// A MoE layer's shared expert is packed in gate, up and down (no dense
  /// MLP there); the checkpoint's [1, hidden] weight of its gate.
  int64_t sharedExpertGate = -1;

  /// The fields in their fixed order, present or not.
  template <typename F> void forEachField(F &&f) {
    for (int64_t *field :
         {&attentionNorm, &attentionNormBias, &qkv, &qkvBias, &queryNorm,
          &keyNorm, &output, &outputBias, &mlpNorm, &mlpNormBias, &gate,
          &gateBias, &up, &upBias, &down, &downBias, &attentionOutputNorm,
          &attentionOutputNormBias, &mlpOutputNorm, &mlpOutputNormBias,
          &router, &expertGate, &expertUp, &expertDown, &routerBias,
          &expertGateBias, &expertUpBias, &expertDownBias, &sinks,
          &sharedExpertGate})
      f(*field);
  }
  /// The present entries in that order: what a block function takes.
  llvm::SmallVector<int64_t, 16> list() const;
};

/// The table entries outside the layers; -1 where the model has none.
struct GlobalEntries {
  /// The token embedding: the packed output projection when tied (the
  /// embedding reads rows of the packed copy), else the checkpoint's table
  /// (f32), or its own packed copy in the weight format.
  int64_t tokenEmbedding = -1;
  int64_t positionEmbedding = -1;
  int64_t embeddingNorm = -1, embeddingNormBias = -1;
  int64_t finalNorm = -1, finalNormBias = -1;
  /// The packed output projection (tokenEmbedding when tied), its bias.
  int64_t head = -1, headBias = -1;
};

struct ModelLayout {
  /// The ranks of the tensor-parallel split the packed buffers are one
  /// rank's slice of (1: the whole model).
  int64_t ranks = 1;
  std::vector<WeightSpec> weights;
  std::vector<bool> usedAtRunTime;
  std::vector<PackedWeight> packed;
  std::vector<LayerEntries> layers;
  GlobalEntries globals;

  int64_t tableSize() const {
    return static_cast<int64_t>(weights.size() + packed.size());
  }
  bool isPacked(int64_t entry) const {
    return entry >= static_cast<int64_t>(weights.size());
  }
  const PackedWeight &packedAt(int64_t entry) const {
    return packed[entry - weights.size()];
  }
  /// The shape compiled code sees for a table entry.
  llvm::SmallVector<int64_t, 4> shape(int64_t entry) const;
  /// How the entry is stored (checkpoint weights: f32).
  WeightFormat format(int64_t entry) const {
    return isPacked(entry) ? packedAt(entry).format : WeightFormat::F32;
  }
  /// Whether the entry points read the entry (packed buffers always).
  bool readAtRunTime(int64_t entry) const {
    return isPacked(entry) || usedAtRunTime[entry];
  }
};

/// The table of `config` with projections packed in blocks of `blockSize`,
/// their matrices stored as `format` says; with a quantized format, a
/// matrix whose input features are not a multiple of kQuantBlock is bf16
/// (as llama.cpp keeps such tensors in a wider type). `headFormat`, when
/// given, is the output projection's (and so a tied token embedding's)
/// instead, as llama.cpp keeps a Q4_0 file's output in Q6_K. With
/// `ranks` > 1, one
/// rank's slice of an N-way tensor-parallel split (the checkpoint weights
/// keep their whole shapes; the packed buffers hold the rank's part): q, k,
/// v, gate and up by output features (heads, KV heads, MLP columns),
/// attention's output and down projections by input features, the token
/// embedding and output head by vocabulary (vocabularySlice rows each);
/// every such weight is packed, norms and learned positions stay whole.
ModelLayout planModelLayout(const ModelConfig &config, int64_t blockSize,
                            WeightFormat format = WeightFormat::F32,
                            int64_t ranks = 1,
                            std::optional<WeightFormat> headFormat = std::nullopt);

/// Why `config` cannot be split over `ranks` ranks (a count that does not
/// divide the heads, the KV heads or the MLP width, a feature the split
/// does not handle), or success.
llvm::Error checkTensorParallel(const ModelConfig &config, int64_t ranks);

/// One rank's model of an N-way split: heads, KV heads and MLP width
/// divided by `ranks` (the vocabulary stays whole: the entry points take
/// and return whole-vocabulary ids and logits).
ModelConfig rankLocalConfig(const ModelConfig &config, int64_t ranks);

/// Rows of the vocabulary each rank holds: ceil(vocab / ranks), the last
/// rank's padded with zero rows.
inline int64_t vocabularySlice(const ModelConfig &config, int64_t ranks) {
  return (config.vocabSize + ranks - 1) / ranks;
}

/// "f32", "bf16", "q8_0", "q4_0"; and back (nullopt for another name).
inline const char *weightFormatName(WeightFormat format) {
  return packedFormatName(format);
}
std::optional<WeightFormat> parseWeightFormat(llvm::StringRef name);

/// Packed buffers that are filled the same way (same shapes, same kinds of
/// sources; every layer's q/k/v, say) share one compiled pack function:
/// element p is buffer p's kind, kinds numbered 0.. in order of first use.
std::vector<int64_t> packKinds(const ModelLayout &layout);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_MODELLAYOUT_H
