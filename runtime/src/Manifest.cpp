//===- Manifest.cpp - the compiled library's model description ------------===//

#include "Manifest.h"

#include "Json.h"
#include "Support.h"
#include "attnrt/model_abi.h"
#include "attnrt/version.h"

#include <unordered_set>

namespace attnrt {

namespace {
/// Field readers sharing one error slot; each returns false after setting it.
class FieldReader {
public:
  FieldReader(const Json &object, std::string &error)
      : object(object), error(error) {}

  bool integer(const char *field, int64_t minimum, bool required,
               int64_t &out) {
    const Json *value = jsonFind(object, field);
    if (!value) {
      if (!required)
        return true;
      error = format("\"%s\" is missing", field);
      return false;
    }
    int64_t n;
    if (!jsonInteger(*value, n)) {
      error = format("\"%s\" is %s, not an integer", field,
                     jsonKindName(*value));
      return false;
    }
    if (n < minimum) {
      error = format("\"%s\" is %lld, must be at least %lld", field,
                     static_cast<long long>(n),
                     static_cast<long long>(minimum));
      return false;
    }
    out = n;
    return true;
  }

  bool stringList(const char *field, std::vector<std::string> &out) {
    const Json *value = jsonFind(object, field);
    if (!value)
      return true;
    if (!value->is_array()) {
      error = format("\"%s\" is %s, not an array of strings", field,
                     jsonKindName(*value));
      return false;
    }
    for (const Json &element : *value) {
      if (!element.is_string()) {
        error = format("\"%s\" holds %s, not only strings", field,
                       jsonKindName(element));
        return false;
      }
      out.push_back(element.get<std::string>());
    }
    return true;
  }

private:
  const Json &object;
  std::string &error;
};
} // namespace

/// Entry `index` of a `kind` list ("weight", "packed buffer") must be an
/// object with a non-empty "name"; `where` becomes "<kind> '<name>': ".
static bool readEntryName(const Json &entry, const char *kind, size_t index,
                          std::string &name, std::string &where,
                          std::string &error) {
  where = format("%s %zu: ", kind, index);
  if (!entry.is_object()) {
    error = where + "not an object";
    return false;
  }
  const Json *value = jsonFind(entry, "name");
  if (!value || !value->is_string() || value->get_ref<const std::string &>().empty()) {
    error = where + "\"name\" is missing or not a non-empty string";
    return false;
  }
  name = value->get<std::string>();
  where = std::string(kind) + " " + quote(name) + ": ";
  return true;
}

/// Array `field` of `entry`: integers in [0, limit).
static bool readIndexArray(const Json &entry, const char *field, int64_t limit,
                           const char *what, const std::string &where,
                           std::vector<int64_t> &out, std::string &error) {
  const Json *array = jsonFind(entry, field);
  if (!array || !array->is_array()) {
    error = where + format("\"%s\" is missing or not an array", field);
    return false;
  }
  for (const Json &element : *array) {
    int64_t n;
    if (!jsonInteger(element, n) || n < 0 || n >= limit) {
      error = where + format("\"%s\" holds something other than %s", field,
                             what);
      return false;
    }
    out.push_back(n);
  }
  return true;
}

static bool parseWeight(const Json &entry, size_t index, WeightSpec &weight,
                        std::string &error) {
  std::string where;
  if (!readEntryName(entry, "weight", index, weight.name, where, error))
    return false;
  // The ABI passes f32 pointers, so a manifest can only ask for F32.
  const Json *dtype = jsonFind(entry, "dtype");
  if (dtype && (!dtype->is_string() || *dtype != "F32")) {
    error = where + "\"dtype\" must be \"F32\" (ABI version 1 passes f32)";
    return false;
  }
  if (!readIndexArray(entry, "shape", INT64_MAX, "a non-negative integer",
                      where, weight.shape, error))
    return false;
  if (!shapeElements(weight.shape, weight.elements) ||
      weight.elements > INT64_MAX / 4) {
    error =
        where + "shape " + formatShape(weight.shape) + " has too many elements";
    return false;
  }
  if (const Json *used = jsonFind(entry, "used_at_run_time")) {
    if (!used->is_boolean()) {
      error = where + "\"used_at_run_time\" must be true or false";
      return false;
    }
    weight.usedAtRunTime = used->get<bool>();
  }
  if (const Json *slice = jsonFind(entry, "or_slice_of")) {
    const Json *name = slice->is_object() ? jsonFind(*slice, "name") : nullptr;
    const Json *offset = slice->is_object() ? jsonFind(*slice, "offset") : nullptr;
    int64_t sliceElements = 0;
    if (!name || !name->is_string() || name->get<std::string>().empty() ||
        !offset || !jsonInteger(*offset, weight.sliceOffset) ||
        weight.sliceOffset < 0) {
      error = where + "\"or_slice_of\" must hold a \"name\", a \"shape\" and an "
                      "\"offset\"";
      return false;
    }
    weight.sliceOf = name->get<std::string>();
    if (!readIndexArray(*slice, "shape", INT64_MAX, "a non-negative integer",
                        where, weight.sliceShape, error))
      return false;
    if (!shapeElements(weight.sliceShape, sliceElements) ||
        weight.sliceOffset > sliceElements - weight.elements) {
      error = where + "\"or_slice_of\" " + quote(weight.sliceOf) + " " +
              formatShape(weight.sliceShape) + format(" has no %lld elements from %lld",
                                                      static_cast<long long>(weight.elements),
                                                      static_cast<long long>(weight.sliceOffset));
      return false;
    }
  }
  return true;
}

static bool parsePacked(const Json &entry, size_t index, size_t weightCount,
                        PackedSpec &packed, std::string &error) {
  std::string where;
  if (!readEntryName(entry, "packed buffer", index, packed.name, where, error))
    return false;
  FieldReader read(entry, error);
  if (!read.integer("bytes", 1, true, packed.bytes)) {
    error = where + error;
    return false;
  }
  std::vector<int64_t> sources;
  std::string what = format("indices of the %zu weights", weightCount);
  if (!readIndexArray(entry, "sources", static_cast<int64_t>(weightCount),
                      what.c_str(), where, sources, error))
    return false;
  packed.sources.assign(sources.begin(), sources.end());
  return true;
}

bool isWeightFormat(std::string_view name) {
  return name == "f32" || name == "bf16" || name == "q8_0" || name == "q4_0";
}

bool isKvFormat(std::string_view name) {
  return name == "f32" || name == "bf16" || name == "f16";
}

bool parseManifest(std::string_view json, Manifest &manifest,
                   std::string &error) {
  Json root;
  std::string message;
  if (!parseJson(json, root, message)) {
    error = "not valid JSON: " + message;
    return false;
  }
  if (!root.is_object()) {
    error = format("is %s, not a JSON object", jsonKindName(root));
    return false;
  }
  FieldReader read(root, error);
  if (!read.integer("abi_version", 0, true, manifest.abiVersion))
    return false;
  // Read first: an incompatible library is refused naming both versions.
  if (const Json *version = jsonFind(root, "attn_version")) {
    if (!version->is_string() || version->get<std::string>().empty()) {
      error = "\"attn_version\" must be a non-empty string, got " + version->dump();
      return false;
    }
    manifest.attnVersion = version->get<std::string>();
  }
  if (manifest.abiVersion != ATTN_MODEL_ABI_VERSION) {
    std::string madeBy = manifest.attnVersion.empty()
                             ? "an attn-compile older than 0.2.0"
                             : "attn-compile " + manifest.attnVersion;
    error = format("abi_version is %lld (made by %s), this runtime (Attn %s) "
                   "supports %d: rebuild the model with a matching attn-compile",
                   static_cast<long long>(manifest.abiVersion), madeBy.c_str(),
                   ATTNRT_VERSION, ATTN_MODEL_ABI_VERSION);
    return false;
  }
  const Json *architecture = jsonFind(root, "architecture");
  if (!architecture || !architecture->is_string()) {
    error = "\"architecture\" is missing or not a string";
    return false;
  }
  manifest.architecture = architecture->get<std::string>();
  if (const Json *weightFormat = jsonFind(root, "weight_format")) {
    std::string name = weightFormat->is_string() ? weightFormat->get<std::string>() : "";
    if (!isWeightFormat(name)) {
      error = "\"weight_format\" must be one of \"f32\", \"bf16\", \"q8_0\", "
              "\"q4_0\", got " + weightFormat->dump();
      return false;
    }
    manifest.weightFormat = name;
  }
  if (!read.integer("vocab_size", 1, true, manifest.vocabSize) ||
      !read.integer("max_seq", 1, true, manifest.maxSeq) ||
      !read.integer("hidden_size", 0, false, manifest.hiddenSize) ||
      !read.integer("num_layers", 0, false, manifest.numLayers) ||
      !read.integer("num_heads", 0, false, manifest.numHeads) ||
      !read.integer("num_kv_heads", 0, false, manifest.numKvHeads) ||
      !read.integer("head_dim", 0, false, manifest.headDim) ||
      !read.integer("intermediate_size", 0, false, manifest.intermediateSize) ||
      !read.integer("tensor_parallel", 1, false, manifest.tensorParallel) ||
      !read.integer("num_experts", 1, false, manifest.numExperts) ||
      !read.integer("experts_per_token", 1, false, manifest.expertsPerToken))
    return false;
  if ((manifest.numExperts > 0) != (manifest.expertsPerToken > 0) ||
      manifest.expertsPerToken > manifest.numExperts) {
    error = format("\"experts_per_token\" (%lld) must be given with \"num_experts\" "
                   "(%lld) and be at most that",
                   static_cast<long long>(manifest.expertsPerToken),
                   static_cast<long long>(manifest.numExperts));
    return false;
  }
  // Token ids are int32 and logits rows are indexed with int64.
  if (manifest.vocabSize > INT32_MAX) {
    error = "\"vocab_size\" does not fit int32 token ids";
    return false;
  }
  if (manifest.maxSeq > INT64_MAX / manifest.vocabSize) {
    error = "\"max_seq\" x \"vocab_size\" overflows";
    return false;
  }

  if (const Json *amx = jsonFind(root, "amx_tiles")) {
    if (!amx->is_boolean()) {
      error = "\"amx_tiles\" must be true or false, got " + amx->dump();
      return false;
    }
    manifest.amxTiles = amx->get<bool>();
  }

  if (const Json *target = jsonFind(root, "target")) {
    const Json *cpu = target->is_object() ? jsonFind(*target, "cpu") : nullptr;
    const Json *features =
        target->is_object() ? jsonFind(*target, "features") : nullptr;
    if (!cpu || !cpu->is_string() || !features || !features->is_array()) {
      error = "\"target\" must be an object with a \"cpu\" string and a "
              "\"features\" array";
      return false;
    }
    manifest.targetCpu = cpu->get<std::string>();
    for (const Json &feature : *features) {
      std::string name = feature.is_string() ? feature.get<std::string>() : "";
      if (!isKnownCpuFeature(name)) {
        error = "target: CPU feature " + feature.dump() +
                " is unknown to this runtime (a library from a newer "
                "attn-compile?)";
        return false;
      }
      manifest.targetFeatures.push_back(name);
    }
  }

  const Json *kvCache = jsonFind(root, "kv_cache");
  if (!kvCache || !kvCache->is_object()) {
    error = "\"kv_cache\" is missing or not an object";
    return false;
  }
  FieldReader readKv(*kvCache, message);
  if (!readKv.integer("bytes", 0, true, manifest.kvCacheBytes)) {
    error = "kv_cache: " + message;
    return false;
  }
  if (const Json *kvFormat = jsonFind(*kvCache, "format")) {
    std::string name = kvFormat->is_string() ? kvFormat->get<std::string>() : "";
    if (!isKvFormat(name)) {
      error = "kv_cache: \"format\" must be one of \"f32\", \"bf16\", \"f16\", got " +
              kvFormat->dump();
      return false;
    }
    manifest.kvFormat = name;
  }

  const Json *weights = jsonFind(root, "weights");
  if (!weights || !weights->is_array()) {
    error = "\"weights\" is missing or not an array";
    return false;
  }
  std::unordered_set<std::string> seen;
  size_t index = 0;
  for (const Json &entry : *weights) {
    WeightSpec weight;
    if (!parseWeight(entry, index++, weight, error))
      return false;
    if (!seen.insert(weight.name).second) {
      error = "weight " + quote(weight.name) + " is listed twice";
      return false;
    }
    manifest.weights.push_back(std::move(weight));
  }

  if (const Json *packed = jsonFind(root, "packed")) {
    if (!packed->is_array()) {
      error = "\"packed\" is not an array";
      return false;
    }
    index = 0;
    for (const Json &entry : *packed) {
      PackedSpec spec;
      if (!parsePacked(entry, index++, manifest.weights.size(), spec, error))
        return false;
      manifest.packed.push_back(std::move(spec));
    }
  }

  return read.stringList("name_prefixes", manifest.namePrefixes) &&
         read.stringList("ignored_suffixes", manifest.ignoredSuffixes) &&
         read.stringList("ignored_names", manifest.ignoredNames) &&
         read.stringList("ignored_prefixes", manifest.ignoredPrefixes);
}

} // namespace attnrt
