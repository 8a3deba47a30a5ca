//===- SafetensorsFuzzer.cpp - the weights file parser and loader ---------===//
//
// The input is a whole weights file. SafetensorsFile::open must accept it
// only when every tensor lies inside the data region, spans exactly
// elements x dtype-size bytes and overlaps no other (checked here
// independently, and by reading every byte of every tensor); it must reject
// it otherwise with one line naming the file. Then attnrt_model_load loads it
// against the mock model's manifest (weight matching, F16/BF16 widening, the
// NaN/Inf scan, warnings), and a loaded model runs one prefill.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "Safetensors.h"
#include "attnrt/attnrt.h"

#include <algorithm>
#include <dlfcn.h>
#include <string>
#include <vector>

using namespace attnrt;
using attn::fuzz::MemFile;

namespace {

void checkOpened(const SafetensorsFile &file, size_t fileSize) {
  const std::vector<TensorInfo> &tensors = file.tensors();
  uint64_t dataStart = file.dataOffset();
  FUZZ_CHECK(dataStart >= 8 && dataStart <= fileSize, "data offset %llu",
             static_cast<unsigned long long>(dataStart));
  uint64_t dataSize = fileSize - dataStart;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t checksum = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &t = tensors[i];
    int64_t elements = 1;
    for (int64_t dim : t.shape) {
      FUZZ_CHECK(dim >= 0, "negative dimension in '%s'", t.name.c_str());
      FUZZ_CHECK(!__builtin_mul_overflow(elements, dim, &elements),
                 "element count of '%s' overflows", t.name.c_str());
    }
    FUZZ_CHECK(elements == t.elements, "'%s': elements", t.name.c_str());
    FUZZ_CHECK(t.begin <= t.end && t.end <= dataSize,
               "'%s': [%llu, %llu) outside a %llu-byte data region",
               t.name.c_str(), static_cast<unsigned long long>(t.begin),
               static_cast<unsigned long long>(t.end),
               static_cast<unsigned long long>(dataSize));
    FUZZ_CHECK(t.end - t.begin ==
                   static_cast<uint64_t>(elements) * dtypeSize(t.dtype),
               "'%s': span vs dtype x shape", t.name.c_str());
    FUZZ_CHECK(file.find(t.name) == static_cast<int64_t>(i),
               "'%s': lookup by name", t.name.c_str());
    if (t.end > t.begin)
      ranges.push_back({t.begin, t.end});
    // Every byte must be readable (a read outside the mapping faults).
    const uint8_t *bytes = file.tensorData(t);
    for (uint64_t b = 0; b < t.end - t.begin; ++b)
      checksum += bytes[b];
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    FUZZ_CHECK(ranges[i].first >= ranges[i - 1].second, "overlapping tensors");
  // Keep the reads.
  volatile uint64_t sink = checksum;
  (void)sink;
}

void checkMessage(const std::string &error, const std::string &path) {
  std::string prefix = "weights file '" + path + "': ";
  FUZZ_CHECK(error.rfind(prefix, 0) == 0, "message does not name the file: %s",
             error.c_str());
  FUZZ_CHECK(error.size() > prefix.size(), "empty message");
  FUZZ_CHECK(error.find('\n') == std::string::npos, "multi-line message: %s",
             error.c_str());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MemFile file;
  // Keeps the mock loaded between inputs: attnrt_model_load's dlopen and
  // dlclose then only count references.
  static void *pin = dlopen(ATTN_FUZZ_MOCK_MODEL, RTLD_NOW | RTLD_LOCAL);
  (void)pin;
  const std::string &path = file.write(data, size);

  SafetensorsFile weights;
  std::string error;
  if (weights.open(path, error))
    checkOpened(weights, size);
  else
    checkMessage(error, path);
  weights.close();

  char message[1024] = "";
  attnrt_model *model = attnrt_model_load(ATTN_FUZZ_MOCK_MODEL, path.c_str(),
                                          message, sizeof(message));
  if (!model) {
    checkMessage(message, path);
    return 0;
  }
  std::string warnings = attnrt_model_warnings(model);
  FUZZ_CHECK(warnings.empty() || warnings.back() == '\n', "warnings");
  attnrt_session *session = attnrt_session_create(model, message,
                                                  sizeof(message));
  FUZZ_CHECK(session, "session: %s", message);
  int64_t vocab = attnrt_model_vocab_size(model);
  std::vector<float> logits(static_cast<size_t>(2 * vocab));
  int32_t tokens[2] = {1, static_cast<int32_t>(vocab - 1)};
  int rc = attnrt_prefill(session, tokens, 2, logits.data(), 1, message,
                          sizeof(message));
  FUZZ_CHECK(rc == ATTNRT_OK, "prefill: %s", message);
  attnrt_session_free(session);
  attnrt_model_free(model);
  return 0;
}
