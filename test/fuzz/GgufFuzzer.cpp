//===- GgufFuzzer.cpp - the GGUF reader ------------------------------------===//
//
// The input is a whole GGUF file. GgufFile::open must accept it only when
// every metadata value and tensor lies inside the file, tensor sizes agree
// with type x dimensions, data is aligned and no two tensors overlap
// (checked here independently, and by reading every byte of every tensor and
// every value through the typed reads); it must reject it otherwise with one
// line naming the file. Tensors of the types Attn reads are dequantized, so
// arbitrary block bytes go through every formula. The tokenizer metadata
// (byte-level or SentencePiece) is read as a tokenizer, which either loads
// and encodes a text or fails with one line naming the file; the model
// metadata becomes a config.json object or one line naming the file.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "Gguf.h"
#include "GgufConfig.h"
#include "tokenizer/GgufTokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace attnrt;
using attn::fuzz::MemFile;

namespace {

void checkOpened(const GgufFile &file, size_t fileSize) {
  uint64_t dataStart = file.dataOffset();
  FUZZ_CHECK(dataStart <= fileSize, "data offset past the end");
  FUZZ_CHECK(file.alignment() && !(file.alignment() & (file.alignment() - 1)),
             "alignment %llu",
             static_cast<unsigned long long>(file.alignment()));
  std::string error;
  uint64_t checksum = 0;
  for (const GgufKeyValue &kv : file.metadata()) {
    FUZZ_CHECK(file.findKey(kv.name) == &kv, "key lookup");
    // Every typed read either succeeds or names the key; none reads outside.
    std::string_view text;
    uint64_t u;
    int64_t s;
    double f;
    bool b;
    std::vector<std::string_view> strings;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    if (file.getString(kv.name, text, error))
      for (char c : text)
        checksum += static_cast<unsigned char>(c);
    if (file.getStringArray(kv.name, strings, error)) {
      FUZZ_CHECK(strings.size() == kv.count, "string count");
      for (std::string_view v : strings)
        for (char c : v)
          checksum += static_cast<unsigned char>(c);
    }
    if (file.getUnsigned(kv.name, u, error))
      checksum += u;
    if (file.getSigned(kv.name, s, error))
      checksum += static_cast<uint64_t>(s);
    if (file.getFloat(kv.name, f, error))
      checksum += f == f;
    if (file.getBool(kv.name, b, error))
      checksum += b;
    if (file.getIntegerArray(kv.name, ints, error))
      FUZZ_CHECK(ints.size() == kv.count, "integer count");
    if (file.getFloatArray(kv.name, floats, error))
      FUZZ_CHECK(floats.size() == kv.count, "float count");
    FUZZ_CHECK(error.empty() || error.find('\n') == std::string::npos,
               "multi-line message");
  }
  uint64_t dataSize = fileSize - dataStart;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<float> row;
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const GgufTensorInfo &t = file.tensors()[i];
    const GgmlTypeTraits &traits = ggmlTypeTraits(t.type);
    int64_t elements = 1;
    for (int64_t dim : t.dims) {
      FUZZ_CHECK(dim >= 0, "negative dimension in '%s'", t.name.c_str());
      FUZZ_CHECK(!__builtin_mul_overflow(elements, dim, &elements),
                 "element count of '%s' overflows", t.name.c_str());
    }
    FUZZ_CHECK(elements == t.elements, "'%s': elements", t.name.c_str());
    FUZZ_CHECK(t.dims[0] % traits.blockSize == 0, "'%s': partial block",
               t.name.c_str());
    FUZZ_CHECK(t.begin % file.alignment() == 0, "'%s': misaligned",
               t.name.c_str());
    FUZZ_CHECK(t.begin <= t.end && t.end <= dataSize, "'%s': outside",
               t.name.c_str());
    FUZZ_CHECK(t.end - t.begin == static_cast<uint64_t>(elements) /
                                      traits.blockSize * traits.typeSize,
               "'%s': span vs type x dims", t.name.c_str());
    FUZZ_CHECK(file.find(t.name) == static_cast<int64_t>(i), "'%s': lookup",
               t.name.c_str());
    if (t.end > t.begin)
      ranges.push_back({t.begin, t.end});
    const uint8_t *bytes = file.tensorData(t);
    for (uint64_t k = 0; k < t.end - t.begin; ++k)
      checksum += bytes[k];
    // Dequantize the first row (whole rows of a small file); a tensor with
    // a zero dimension has no row to read.
    if (canDequantizeGgml(t.type) && t.dims[0] > 0 && t.dims[0] <= 4096 &&
        t.elements >= t.dims[0]) {
      row.resize(static_cast<size_t>(t.dims[0]));
      dequantizeGgmlRow(t.type, bytes, row.data(), t.dims[0]);
      for (float v : row)
        checksum += v == v;
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    FUZZ_CHECK(ranges[i].first >= ranges[i - 1].second, "overlapping tensors");

  if (file.findKey("tokenizer.ggml.model")) {
    TokenizerSources sources;
    error.clear();
    std::unique_ptr<Tokenizer> tokenizer;
    if (ggufTokenizerSources(file, sources, error))
      tokenizer = Tokenizer::load(sources, error);
    if (tokenizer) {
      std::vector<int32_t> ids;
      if (tokenizer->encode("Hello  world, caf\u00e9 <s>!",
                            Tokenizer::AddSpecial | Tokenizer::ParseSpecial,
                            ids, error))
        checksum += ids.size();
    } else {
      FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos,
                 "tokenizer message: %s", error.c_str());
    }
  }
  // The model its metadata describes: a config.json object, or one line
  // naming the file.
  if (file.findKey("general.architecture")) {
    std::string json;
    error.clear();
    if (ggufConfigJson(file, json, error)) {
      nlohmann::json config = nlohmann::json::parse(json, nullptr, false);
      FUZZ_CHECK(config.is_object() && config.contains("model_type"),
                 "config is not an object with a model_type: %s",
                 json.c_str());
      checksum += json.size();
    } else {
      FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos,
                 "config message: %s", error.c_str());
    }
  }
  volatile uint64_t sink = checksum;
  (void)sink;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MemFile memFile;
  const std::string &path = memFile.write(data, size);
  GgufFile file;
  std::string error;
  if (file.open(path, error)) {
    checkOpened(file, size);
    return 0;
  }
  std::string prefix = "GGUF file '" + path + "': ";
  FUZZ_CHECK(error.rfind(prefix, 0) == 0, "message does not name the file: %s",
             error.c_str());
  FUZZ_CHECK(error.size() > prefix.size(), "empty message");
  FUZZ_CHECK(error.find('\n') == std::string::npos, "multi-line message: %s",
             error.c_str());
  return 0;
}
