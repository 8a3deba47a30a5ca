//===- TestUtil.cpp - helpers for the runtime unit tests ------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnrt::test {

const char *mockLibrary() { return ATTNRT_TEST_MOCK_MODEL; }
const char *mockLibraryNoDecode() { return ATTNRT_TEST_MOCK_MODEL_NO_DECODE; }

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/attnrt-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data()))
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
  path = buffer.data();
}

/// Removes `path` and everything under it, making read-only folders
/// writable first (the model folder tests chmod them 555).
static void removeTree(const std::string &path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0)
    return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path.c_str());
    return;
  }
  chmod(path.c_str(), 0700);
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        removeTree(path + "/" + name);
    }
    closedir(dir);
  }
  rmdir(path.c_str());
}

TempDir::~TempDir() { removeTree(path); }

void writeFile(const std::string &path, const std::string &bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  ASSERT_EQ(std::fclose(file), 0);
}

std::string readFile(const std::string &path) {
  std::string bytes;
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return bytes;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    bytes.append(buffer, n);
  std::fclose(file);
  return bytes;
}

Tensor f32Tensor(const std::string &name, std::vector<int64_t> shape,
                 const std::vector<float> &values) {
  std::string data(values.size() * 4, '\0');
  if (!values.empty())
    std::memcpy(&data[0], values.data(), data.size());
  return {name, "F32", std::move(shape), data};
}

static Tensor sixteenBit(const std::string &name, const char *dtype,
                         std::vector<int64_t> shape,
                         const std::vector<uint16_t> &bits) {
  std::string data(bits.size() * 2, '\0');
  if (!bits.empty())
    std::memcpy(&data[0], bits.data(), data.size());
  return {name, dtype, std::move(shape), data};
}

Tensor f16Tensor(const std::string &name, std::vector<int64_t> shape,
                 const std::vector<uint16_t> &bits) {
  return sixteenBit(name, "F16", std::move(shape), bits);
}

Tensor bf16Tensor(const std::string &name, std::vector<int64_t> shape,
                  const std::vector<uint16_t> &bits) {
  return sixteenBit(name, "BF16", std::move(shape), bits);
}

std::string headerJson(const std::vector<Tensor> &tensors) {
  std::string json = "{\"__metadata__\": {\"format\": \"pt\"}";
  size_t offset = 0;
  for (const Tensor &t : tensors) {
    json +=
        ", \"" + t.name + "\": {\"dtype\": \"" + t.dtype + "\", \"shape\": [";
    for (size_t i = 0; i < t.shape.size(); ++i)
      json += (i ? ", " : "") + std::to_string(t.shape[i]);
    json += "], \"data_offsets\": [" + std::to_string(offset) + ", " +
            std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  return json + "}";
}

std::string rawSafetensors(const std::string &header, const std::string &data) {
  std::string bytes(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  return bytes + header + data;
}

std::string indexJson(
    const std::vector<std::pair<std::string, std::string>> &weightMap) {
  std::string json = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
  for (size_t i = 0; i < weightMap.size(); ++i)
    json += (i ? ", \"" : "\"") + weightMap[i].first + "\": \"" +
            weightMap[i].second + "\"";
  return json + "}}";
}

std::string safetensorsBytes(const std::vector<Tensor> &tensors, size_t shift) {
  std::string header = headerJson(tensors);
  header.append((8 - (8 + header.size()) % 8) % 8 + shift, ' ');
  std::string data;
  for (const Tensor &t : tensors)
    data += t.data;
  return rawSafetensors(header, data);
}

MockWeights mockWeights(unsigned variant) {
  auto value = [](unsigned x, unsigned mod) {
    return (static_cast<float>(x % mod) - static_cast<float>(mod / 2)) / 16.0f;
  };
  MockWeights w;
  for (unsigned v = 0; v < mockVocab; ++v)
    for (unsigned d = 0; d < mockHidden; ++d)
      w.wte.push_back(value(v * 7 + d * 3 + variant * 5, 17));
  for (unsigned d = 0; d < mockHidden; ++d)
    for (unsigned e = 0; e < mockHidden; ++e)
      w.mix.push_back(value(d * 5 + e * 11 + 3 + variant, 13));
  for (unsigned d = 0; d < mockHidden; ++d)
    w.mixBias.push_back(value(d * 3 + variant, 9));
  for (unsigned v = 0; v < mockVocab; ++v)
    w.headBias.push_back(value(v * 13 + variant, 11));
  return w;
}

std::vector<Tensor> mockTensors(const MockWeights &w,
                                const std::string &prefix) {
  return {f32Tensor(prefix + "wte.weight", {mockVocab, mockHidden}, w.wte),
          f32Tensor(prefix + "h.0.mix.weight", {mockHidden, mockHidden}, w.mix),
          f32Tensor(prefix + "h.0.mix.bias", {mockHidden}, w.mixBias),
          f32Tensor(prefix + "head.bias", {mockVocab}, w.headBias)};
}

std::vector<Tensor> mockTensorsAs(const MockWeights &w,
                                  const std::string &dtype) {
  bool half = dtype == "F16";
  auto convert = [&](const std::vector<float> &values) {
    std::vector<uint16_t> bits;
    for (float v : values)
      bits.push_back(half ? toHalfBits(v) : toBfloat16Bits(v));
    return bits;
  };
  auto make = half ? f16Tensor : bf16Tensor;
  return {make("wte.weight", {mockVocab, mockHidden}, convert(w.wte)),
          make("h.0.mix.weight", {mockHidden, mockHidden}, convert(w.mix)),
          make("h.0.mix.bias", {mockHidden}, convert(w.mixBias)),
          make("head.bias", {mockVocab}, convert(w.headBias))};
}

std::vector<float> mockReference(const MockWeights &w,
                                 const std::vector<int32_t> &tokens) {
  std::vector<float> logits;
  for (size_t p = 0; p < tokens.size(); ++p) {
    float h[mockHidden] = {};
    for (size_t j = 0; j <= p; ++j) {
      float scale = 1.0f / static_cast<float>(1 + p - j);
      for (int d = 0; d < mockHidden; ++d)
        h[d] += scale * w.wte[tokens[j] * mockHidden + d];
    }
    float z[mockHidden];
    for (int d = 0; d < mockHidden; ++d) {
      float acc = w.mixBias[d];
      for (int e = 0; e < mockHidden; ++e)
        acc += w.mix[d * mockHidden + e] * h[e];
      z[d] = std::tanh(acc);
    }
    for (int v = 0; v < mockVocab; ++v) {
      float acc = w.headBias[v];
      for (int d = 0; d < mockHidden; ++d)
        acc += w.wte[v * mockHidden + d] * z[d];
      logits.push_back(acc);
    }
  }
  return logits;
}

uint16_t toHalfBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  if ((bits & 0x7FFFFFFF) == 0)
    return sign;
  int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  EXPECT_TRUE(exponent > 0 && exponent < 31 && (bits & 0x1FFF) == 0)
      << value << " is not an exact normal f16";
  return static_cast<uint16_t>(sign | (exponent << 10) |
                               ((bits >> 13) & 0x3FF));
}

uint16_t toBfloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  EXPECT_EQ(bits & 0xFFFF, 0u) << value << " is not an exact bf16";
  return static_cast<uint16_t>(bits >> 16);
}

ModelPtr loadModel(const std::string &library, const std::string &weights,
                   std::string &error) {
  char buffer[1024] = "";
  ModelPtr model(attnrt_model_load(library.c_str(), weights.c_str(), buffer,
                                   sizeof(buffer)));
  error = buffer;
  return model;
}

static void *mockSymbol(void *handle, const char *name) {
  void *symbol = dlsym(handle, name);
  EXPECT_NE(symbol, nullptr) << name;
  return symbol;
}

ManifestOverride::ManifestOverride(std::string text) : json(std::move(text)) {
  handle = dlopen(mockLibrary(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  auto set = reinterpret_cast<void (*)(const char *)>(
      mockSymbol(handle, "mock_set_manifest"));
  set(json.c_str());
}

ManifestOverride::~ManifestOverride() {
  auto set = reinterpret_cast<void (*)(const char *)>(
      mockSymbol(handle, "mock_set_manifest"));
  set(nullptr);
  dlclose(handle);
}

const float *const *mockLastWeights() {
  void *handle = dlopen(mockLibrary(), RTLD_NOW | RTLD_LOCAL);
  auto last = reinterpret_cast<const float *const *(*)()>(
      mockSymbol(handle, "mock_last_weights"));
  const float *const *weights = last();
  dlclose(handle);
  return weights;
}

std::string mockManifestWith(const std::string &from, const std::string &to) {
  void *handle = dlopen(mockLibrary(), RTLD_NOW | RTLD_LOCAL);
  auto manifest = reinterpret_cast<const char *(*)()>(
      mockSymbol(handle, "attn_model_manifest"));
  std::string json = manifest();
  dlclose(handle);
  size_t at = json.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    json.replace(at, from.size(), to);
  return json;
}

} // namespace attnrt::test
