//===- ManifestFuzzer.cpp - the runtime's JSON parser and manifest reader -===//
//
// The input is a JSON document. The strict parser must accept or reject it
// without crashing, and every accessor must be safe on what it built. As a
// manifest it must be accepted only with sane values (checked here), and the
// mock library exporting it must load against fixed weights or fail with one
// line naming the library. The manifest drives weight matching (names,
// shapes, prefixes, ignored names) but never compiled code: the mock's
// prefill assumes its own manifest.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "Json.h"
#include "Manifest.h"
#include "attnrt/attnrt.h"
#include "attnrt/model_abi.h"

#include <cmath>
#include <dlfcn.h>
#include <set>
#include <string>

using namespace attnrt;
using attn::fuzz::MemFile;

namespace {

/// Visits every value through the runtime's accessors; returns the count.
size_t walk(const Json &value, unsigned depth) {
  FUZZ_CHECK(depth <= 65, "deeper than the parser's limit");
  size_t count = 1;
  (void)jsonKindName(value);
  int64_t integer;
  if (jsonInteger(value, integer))
    FUZZ_CHECK(value.is_number_integer(), "integer of kind %s",
               jsonKindName(value));
  FUZZ_CHECK(!value.is_number_unsigned(), "an unsigned integer was stored");
  if (value.is_number_float())
    FUZZ_CHECK(std::isfinite(value.get<double>()), "a non-finite number");
  if (value.is_object()) {
    for (const auto &[key, child] : value.items()) {
      FUZZ_CHECK(jsonFind(value, key) == &child, "find of a present key");
      count += walk(child, depth + 1);
    }
  } else if (value.is_array()) {
    for (const Json &child : value)
      count += walk(child, depth + 1);
  }
  (void)jsonFind(value, "abi_version");
  return count;
}

void checkManifest(const Manifest &m) {
  FUZZ_CHECK(m.abiVersion == ATTN_MODEL_ABI_VERSION, "abi_version");
  FUZZ_CHECK(m.vocabSize >= 1 && m.vocabSize <= INT32_MAX, "vocab_size");
  FUZZ_CHECK(m.maxSeq >= 1 && m.maxSeq <= INT64_MAX / m.vocabSize, "max_seq");
  FUZZ_CHECK(m.kvCacheBytes >= 0, "kv_cache.bytes");
  for (const PackedSpec &p : m.packed)
    FUZZ_CHECK(!p.name.empty() && p.bytes >= 1, "packed buffer");
  std::set<std::string> names;
  for (const WeightSpec &w : m.weights) {
    FUZZ_CHECK(!w.name.empty(), "empty weight name");
    FUZZ_CHECK(names.insert(w.name).second, "duplicate weight");
    int64_t elements = 1;
    for (int64_t dim : w.shape)
      FUZZ_CHECK(dim >= 0 && !__builtin_mul_overflow(elements, dim, &elements),
                 "weight shape");
    FUZZ_CHECK(elements == w.elements && elements <= INT64_MAX / 4,
               "weight elements");
  }
}

/// Weights that satisfy the mock's own manifest, written once.
const std::string &fixedWeights() {
  static MemFile file;
  static bool written = false;
  if (!written) {
    std::string header =
        R"({"wte.weight":{"dtype":"F32","shape":[40,6],"data_offsets":[0,960]},)"
        R"("h.0.mix.weight":{"dtype":"F16","shape":[6,6],"data_offsets":[960,1032]},)"
        R"("h.0.mix.bias":{"dtype":"BF16","shape":[6],"data_offsets":[1032,1044]},)"
        R"("head.bias":{"dtype":"F32","shape":[40],"data_offsets":[1044,1204]},)"
        R"("h.0.attn.bias":{"dtype":"BOOL","shape":[4],"data_offsets":[1204,1208]}})";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    bytes += header;
    bytes.append(1208, '\0'); // Zeros: finite in every dtype.
    file.write(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    written = true;
  }
  return file.name();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static void *mock = dlopen(ATTN_FUZZ_MOCK_MODEL, RTLD_NOW | RTLD_LOCAL);
  static auto setManifest = reinterpret_cast<void (*)(const char *)>(
      dlsym(mock, "mock_set_manifest"));
  FUZZ_CHECK(setManifest, "the mock exports mock_set_manifest");
  std::string text(reinterpret_cast<const char *>(data), size);

  Json doc;
  std::string error;
  if (parseJson(text, doc, error)) {
    walk(doc, 0);
  } else {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos,
               "parse error message: %s", error.c_str());
    FUZZ_CHECK(doc.is_null(), "a failed parse leaves a document");
  }

  Manifest manifest;
  bool valid = parseManifest(text, manifest, error);
  if (valid)
    checkManifest(manifest);

  // The same text as the mock library's manifest. A NUL inside the input
  // ends the C string the library returns. The mock's attn_model_pack
  // assumes its own four weights and one packed buffer of 36 floats: a
  // manifest that lists packed buffers is only loaded when it keeps to that
  // (otherwise the mock, not the runtime, would write out of bounds).
  std::string cText(text.c_str());
  Manifest asLoaded;
  if (parseManifest(cText, asLoaded, error) && !asLoaded.packed.empty() &&
      !(asLoaded.weights.size() == 4 && asLoaded.weights[1].elements >= 36 &&
        asLoaded.packed[0].bytes >= 36 * 4))
    return 0;
  setManifest(cText.c_str());
  char message[1024] = "";
  attnrt_model *model = attnrt_model_load(ATTN_FUZZ_MOCK_MODEL,
                                          fixedWeights().c_str(), message,
                                          sizeof(message));
  setManifest(nullptr);
  if (!model) {
    FUZZ_CHECK(std::string(message).find('\n') == std::string::npos &&
                   (std::string(message).rfind("library '", 0) == 0 ||
                    std::string(message).rfind("weights file '", 0) == 0),
               "load message: %s", message);
    return 0;
  }
  FUZZ_CHECK(cText.size() != text.size() || valid,
             "a manifest parseManifest rejects was loaded");
  const attnrt_model_info *info = attnrt_model_get_info(model);
  // Session buffers are manifest-sized: only small ones are worth creating
  // here (a huge kv_cache.bytes is a legitimate allocation failure).
  if (info->kv_cache_bytes <= (1 << 20) && info->vocab_size <= (1 << 20)) {
    attnrt_session *session = attnrt_session_create(model, message,
                                                    sizeof(message));
    FUZZ_CHECK(session, "session: %s", message);
    attnrt_session_free(session);
  }
  attnrt_model_free(model);
  return 0;
}
