//===- Manifest.cpp - the compiled library's model description ------------===//

#include "Manifest.h"

#include "Json.h"
#include "Support.h"
#include "attnrt/model_abi.h"

#include <unordered_set>

namespace attnrt {

namespace {
/// Field readers sharing one error slot; each returns false after setting it.
class FieldReader {
public:
  FieldReader(JsonValue object, std::string &error)
      : object(object), error(error) {}

  bool integer(const char *field, int64_t minimum, bool required,
               int64_t &out) {
    JsonValue value = object.find(field);
    if (!value.isValid()) {
      if (!required)
        return true;
      error = format("\"%s\" is missing", field);
      return false;
    }
    if (!value.isInteger()) {
      error = format("\"%s\" is %s, not an integer", field,
                     jsonKindName(value.kind()));
      return false;
    }
    if (value.getInteger() < minimum) {
      error = format("\"%s\" is %lld, must be at least %lld", field,
                     static_cast<long long>(value.getInteger()),
                     static_cast<long long>(minimum));
      return false;
    }
    out = value.getInteger();
    return true;
  }

  bool stringList(const char *field, std::vector<std::string> &out) {
    JsonValue value = object.find(field);
    if (!value.isValid())
      return true;
    if (!value.is(JsonKind::Array)) {
      error = format("\"%s\" is %s, not an array of strings", field,
                     jsonKindName(value.kind()));
      return false;
    }
    for (JsonValue element = value.firstChild(); element.isValid();
         element = element.nextSibling()) {
      if (!element.is(JsonKind::String)) {
        error = format("\"%s\" holds %s, not only strings", field,
                       jsonKindName(element.kind()));
        return false;
      }
      out.emplace_back(element.getString());
    }
    return true;
  }

private:
  JsonValue object;
  std::string &error;
};
} // namespace

static bool parseWeight(JsonValue entry, size_t index, WeightSpec &weight,
                        std::string &error) {
  std::string where = format("weight %zu: ", index);
  if (!entry.is(JsonKind::Object)) {
    error = where + "not an object";
    return false;
  }
  JsonValue name = entry.find("name");
  if (!name.is(JsonKind::String) || name.getString().empty()) {
    error = where + "\"name\" is missing or not a non-empty string";
    return false;
  }
  weight.name = std::string(name.getString());
  where = "weight " + quote(weight.name) + ": ";
  // The ABI passes f32 pointers, so a manifest can only ask for F32.
  JsonValue dtype = entry.find("dtype");
  if (dtype.isValid() &&
      (!dtype.is(JsonKind::String) || dtype.getString() != "F32")) {
    error = where + "\"dtype\" must be \"F32\" (ABI version 1 passes f32)";
    return false;
  }
  JsonValue shape = entry.find("shape");
  if (!shape.is(JsonKind::Array)) {
    error = where + "\"shape\" is missing or not an array";
    return false;
  }
  for (JsonValue dim = shape.firstChild(); dim.isValid();
       dim = dim.nextSibling()) {
    if (!dim.isInteger() || dim.getInteger() < 0) {
      error = where + "\"shape\" holds something other than a non-negative "
                      "integer";
      return false;
    }
    weight.shape.push_back(dim.getInteger());
  }
  if (!shapeElements(weight.shape, weight.elements) ||
      weight.elements > INT64_MAX / 4) {
    error =
        where + "shape " + formatShape(weight.shape) + " has too many elements";
    return false;
  }
  return true;
}

bool parseManifest(std::string_view json, Manifest &manifest,
                   std::string &error) {
  JsonDocument doc;
  std::string message;
  if (!doc.parse(json, message)) {
    error = "not valid JSON: " + message;
    return false;
  }
  JsonValue root = doc.root();
  if (!root.is(JsonKind::Object)) {
    error = format("is %s, not a JSON object", jsonKindName(root.kind()));
    return false;
  }
  FieldReader read(root, error);
  if (!read.integer("abi_version", 0, true, manifest.abiVersion))
    return false;
  if (manifest.abiVersion != ATTN_MODEL_ABI_VERSION) {
    error = format("abi_version is %lld, this runtime supports %d (rebuild "
                   "the model with a matching attn-compile)",
                   static_cast<long long>(manifest.abiVersion),
                   ATTN_MODEL_ABI_VERSION);
    return false;
  }
  JsonValue architecture = root.find("architecture");
  if (!architecture.is(JsonKind::String)) {
    error = "\"architecture\" is missing or not a string";
    return false;
  }
  manifest.architecture = std::string(architecture.getString());
  if (!read.integer("vocab_size", 1, true, manifest.vocabSize) ||
      !read.integer("max_seq", 1, true, manifest.maxSeq) ||
      !read.integer("hidden_size", 0, false, manifest.hiddenSize) ||
      !read.integer("num_layers", 0, false, manifest.numLayers) ||
      !read.integer("num_heads", 0, false, manifest.numHeads) ||
      !read.integer("num_kv_heads", 0, false, manifest.numKvHeads) ||
      !read.integer("head_dim", 0, false, manifest.headDim) ||
      !read.integer("intermediate_size", 0, false, manifest.intermediateSize))
    return false;
  // Token ids are int32 and logits rows are indexed with int64.
  if (manifest.vocabSize > INT32_MAX) {
    error = "\"vocab_size\" does not fit int32 token ids";
    return false;
  }
  if (manifest.maxSeq > INT64_MAX / manifest.vocabSize) {
    error = "\"max_seq\" x \"vocab_size\" overflows";
    return false;
  }

  JsonValue kvCache = root.find("kv_cache");
  if (!kvCache.is(JsonKind::Object)) {
    error = "\"kv_cache\" is missing or not an object";
    return false;
  }
  FieldReader readKv(kvCache, message);
  if (!readKv.integer("bytes", 0, true, manifest.kvCacheBytes)) {
    error = "kv_cache: " + message;
    return false;
  }

  JsonValue weights = root.find("weights");
  if (!weights.is(JsonKind::Array)) {
    error = "\"weights\" is missing or not an array";
    return false;
  }
  std::unordered_set<std::string> seen;
  size_t index = 0;
  for (JsonValue entry = weights.firstChild(); entry.isValid();
       entry = entry.nextSibling(), ++index) {
    WeightSpec weight;
    if (!parseWeight(entry, index, weight, error))
      return false;
    if (!seen.insert(weight.name).second) {
      error = "weight " + quote(weight.name) + " is listed twice";
      return false;
    }
    manifest.weights.push_back(std::move(weight));
  }

  return read.stringList("name_prefixes", manifest.namePrefixes) &&
         read.stringList("ignored_suffixes", manifest.ignoredSuffixes) &&
         read.stringList("ignored_names", manifest.ignoredNames);
}

} // namespace attnrt
