//===- TestUtil.h - helpers for the runtime unit tests ---------*- C++ -*-===//
//
// Temporary directories, a safetensors writer (well-formed and deliberately
// broken files), the mock model's weights and a reference implementation of
// its logits, and RAII handles for the C API objects.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_TEST_TESTUTIL_H
#define ATTNRT_TEST_TESTUTIL_H

#include "attnrt/attnrt.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnrt::test {

/// The mock model (MockModel.c) and its variant without attn_model_decode.
const char *mockLibrary();
const char *mockLibraryNoDecode();

constexpr int64_t mockVocab = 40;
constexpr int64_t mockHidden = 6;
constexpr int64_t mockMaxSeq = 24;

/// A fresh directory, removed with everything in it at destruction.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string file(const std::string &name) const { return path + "/" + name; }
  const std::string &name() const { return path; }

private:
  std::string path;
};

void writeFile(const std::string &path, const std::string &bytes);
std::string readFile(const std::string &path);

/// One tensor to write: `data` holds its raw little-endian bytes.
struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;
};

Tensor f32Tensor(const std::string &name, std::vector<int64_t> shape,
                 const std::vector<float> &values);
Tensor f16Tensor(const std::string &name, std::vector<int64_t> shape,
                 const std::vector<uint16_t> &bits);
Tensor bf16Tensor(const std::string &name, std::vector<int64_t> shape,
                  const std::vector<uint16_t> &bits);

/// The header JSON for `tensors` laid out back to back.
std::string headerJson(const std::vector<Tensor> &tensors);
/// u64 length + header + data, with the header padded by spaces so the data
/// starts at a multiple of 8, plus `shift` more bytes (to misalign it).
std::string safetensorsBytes(const std::vector<Tensor> &tensors,
                             size_t shift = 0);
/// A shard index (model.safetensors.index.json) mapping each tensor name to
/// a shard file name, in the given order.
std::string indexJson(
    const std::vector<std::pair<std::string, std::string>> &weightMap);
/// u64 length of `header` + header + data, nothing checked.
std::string rawSafetensors(const std::string &header, const std::string &data);

/// Weights of the mock model; values are multiples of 1/16 in [-0.5, 0.5],
/// exact in F16 and BF16.
struct MockWeights {
  std::vector<float> wte, mix, mixBias, headBias;
};
MockWeights mockWeights(unsigned variant = 0);
/// The four tensors under their manifest names (with `prefix`).
std::vector<Tensor> mockTensors(const MockWeights &weights,
                                const std::string &prefix = "");
/// The same tensors stored as F16 or BF16 ("F16" / "BF16").
std::vector<Tensor> mockTensorsAs(const MockWeights &weights,
                                  const std::string &dtype);
/// The mock's logits for every position of `tokens`: [n, vocab].
std::vector<float> mockReference(const MockWeights &weights,
                                 const std::vector<int32_t> &tokens);

/// f32 -> f16/bf16 bits for values exactly representable in them.
uint16_t toHalfBits(float value);
uint16_t toBfloat16Bits(float value);

struct ModelDeleter {
  void operator()(attnrt_model *m) const { attnrt_model_free(m); }
};
struct SessionDeleter {
  void operator()(attnrt_session *s) const { attnrt_session_free(s); }
};
struct SamplerDeleter {
  void operator()(attnrt_sampler *s) const { attnrt_sampler_free(s); }
};
using ModelPtr = std::unique_ptr<attnrt_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<attnrt_session, SessionDeleter>;
using SamplerPtr = std::unique_ptr<attnrt_sampler, SamplerDeleter>;

/// attnrt_model_load; `error` receives the message on failure.
ModelPtr loadModel(const std::string &library, const std::string &weights,
                   std::string &error);

/// Replaces the mock's manifest for its lifetime (dlopens the mock itself:
/// the runtime's dlopen of the same path gets the same instance).
class ManifestOverride {
public:
  explicit ManifestOverride(std::string json);
  ~ManifestOverride();
  ManifestOverride(const ManifestOverride &) = delete;
  ManifestOverride &operator=(const ManifestOverride &) = delete;

private:
  std::string json;
  void *handle;
};

/// The weights array of the mock's latest prefill/decode call.
const float *const *mockLastWeights();

/// The mock's default manifest with `from` replaced by `to` (once).
std::string mockManifestWith(const std::string &from, const std::string &to);

} // namespace attnrt::test

#endif // ATTNRT_TEST_TESTUTIL_H
