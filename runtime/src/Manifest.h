//===- Manifest.h - the compiled library's model description ----*- C++ -*-===//
//
// Parses and checks the manifest JSON a compiled model exports (schema in
// model_abi.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_MANIFEST_H
#define ATTNRT_MANIFEST_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnrt {

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  /// False for a weight the entry points never read (only attn_model_pack
  /// does): its memory is released after packing.
  bool usedAtRunTime = true;
  /// When no tensor is named `name`: elements [sliceOffset, sliceOffset +
  /// elements) of the tensor `sliceOf` of shape `sliceShape` (an expert's
  /// projection within transformers 5's stacked experts). Empty: none.
  std::string sliceOf;
  std::vector<int64_t> sliceShape;
  int64_t sliceOffset = 0;
};

/// A buffer the runtime allocates and attn_model_pack fills at load time.
struct PackedSpec {
  std::string name;
  int64_t bytes = 0;
  /// The weights (indices into Manifest::weights) packing reads.
  std::vector<size_t> sources;
};

struct Manifest {
  int64_t abiVersion = 0;
  /// The attn-compile version that made the library ("" before 0.2.0).
  std::string attnVersion;
  std::string architecture;
  /// "f32" (also when the manifest predates the field), "bf16", "q8_0", "q4_0".
  std::string weightFormat = "f32";
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0, numHeads = 0,
          numKvHeads = 0, headDim = 0, intermediateSize = 0, maxSeq = 0;
  int64_t kvCacheBytes = 0;
  /// A mixture of experts: the router chooses expertsPerToken of numExperts
  /// for each token (0 and 0: no experts).
  int64_t numExperts = 0, expertsPerToken = 0;
  /// How the KV cache stores keys and values: "f32" (also when the manifest
  /// predates the field), "bf16", "f16".
  std::string kvFormat = "f32";
  /// Ranks of the tensor-parallel split the library is one rank of (1: the
  /// whole model).
  int64_t tensorParallel = 1;
  /// The code uses AMX tiles, whose state Linux grants a process on request.
  bool amxTiles = false;
  /// The CPU the code was compiled for and the instruction-set features it
  /// may use (LLVM names of model_abi.h's table); empty when the library
  /// predates the field.
  std::string targetCpu;
  std::vector<std::string> targetFeatures;
  std::vector<WeightSpec> weights;
  std::vector<PackedSpec> packed;
  std::vector<std::string> namePrefixes;
  std::vector<std::string> ignoredSuffixes;
  std::vector<std::string> ignoredNames;
  /// Modules the model does not run (a multimodal checkpoint's vision
  /// tower): tensors whose names start with one are not reported.
  std::vector<std::string> ignoredPrefixes;
};

/// Parses `json`; errors say which field is wrong ("\"max_seq\" is missing").
/// Whether `name` is a weight format attn-compile writes ("f32", "bf16",
/// "q8_0", "q4_0").
bool isWeightFormat(std::string_view name);
/// Whether `name` is a KV cache format attn-compile writes ("f32", "bf16",
/// "f16").
bool isKvFormat(std::string_view name);

bool parseManifest(std::string_view json, Manifest &manifest,
                   std::string &error);

} // namespace attnrt

#endif // ATTNRT_MANIFEST_H
