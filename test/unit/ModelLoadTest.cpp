//===- ModelLoadTest.cpp - library, manifest and weight matching ----------===//

#include "attnrt/version.h"
#include "Half.h"
#include "Support.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <limits>

using namespace attnrt;
using namespace attnrt::test;

namespace {

class ModelLoadTest : public ::testing::Test {
protected:
  /// Writes `tensors` (data shifted by `shift` bytes) and loads them.
  ModelPtr load(const std::vector<Tensor> &tensors, std::string &error,
                size_t shift = 0) {
    writeFile(path, safetensorsBytes(tensors, shift));
    return loadModel(mockLibrary(), path, error);
  }

  /// The load error for `tensors`, without the "weights file '...': " part.
  std::string loadError(const std::vector<Tensor> &tensors) {
    std::string error;
    ModelPtr model = load(tensors, error);
    EXPECT_EQ(model, nullptr);
    std::string prefix = "weights file '" + path + "': ";
    EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
    return error.substr(std::min(error.size(), prefix.size()));
  }

  /// All-logits prefill of `tokens` on a fresh session.
  static std::vector<float> run(attnrt_model *model,
                                const std::vector<int32_t> &tokens) {
    char error[256] = "";
    SessionPtr session(attnrt_session_create(model, error, sizeof(error)));
    EXPECT_NE(session, nullptr) << error;
    std::vector<float> logits(tokens.size() * mockVocab);
    EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(),
                             static_cast<int64_t>(tokens.size()), logits.data(),
                             1, error, sizeof(error)),
              ATTNRT_OK)
        << error;
    return logits;
  }

  TempDir dir;
  std::string path = dir.file("model.safetensors");
  MockWeights weights = mockWeights();
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
};

void expectNear(const std::vector<float> &actual,
                const std::vector<float> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  // The mock and the reference do the same float operations in the same
  // order; 1e-5 only allows a libm tanh that differs in the last ulp.
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-5) << "logit " << i;
}

TEST_F(ModelLoadTest, LoadsAndRuns) {
  std::string error;
  ModelPtr model = load(mockTensors(weights), error);
  ASSERT_NE(model, nullptr) << error;
  const attnrt_model_info *info = attnrt_model_get_info(model.get());
  EXPECT_STREQ(info->architecture, "mock");
  EXPECT_STREQ(info->weight_format, "f32"); // the mock manifest predates the field
  EXPECT_STREQ(info->kv_format, "f32");     // likewise
  EXPECT_STREQ(info->attn_version, "");     // likewise
  EXPECT_STREQ(attnrt_version(), ATTNRT_VERSION);
  EXPECT_EQ(info->vocab_size, 40);
  EXPECT_EQ(info->hidden_size, 6);
  EXPECT_EQ(info->num_layers, 1);
  EXPECT_EQ(info->num_heads, 2);
  EXPECT_EQ(info->num_kv_heads, 1);
  EXPECT_EQ(info->head_dim, 3);
  EXPECT_EQ(info->intermediate_size, 12);
  EXPECT_EQ(info->max_seq, 24);
  EXPECT_EQ(info->kv_cache_bytes, 96);
  EXPECT_EQ(info->num_weights, 4);
  EXPECT_EQ(attnrt_model_vocab_size(model.get()), 40);
  EXPECT_EQ(attnrt_model_max_seq(model.get()), 24);
  EXPECT_STREQ(attnrt_model_architecture(model.get()), "mock");
  EXPECT_NE(std::strstr(attnrt_model_manifest(model.get()), "\"abi_version\""),
            nullptr);
  EXPECT_STREQ(attnrt_model_warnings(model.get()), "");
  expectNear(run(model.get(), prompt), mockReference(weights, prompt));
}

TEST_F(ModelLoadTest, WeightsReachTheModelInManifestOrder) {
  // Header order differs from manifest order; the pointers must not.
  std::vector<Tensor> tensors = mockTensors(weights);
  std::swap(tensors[0], tensors[3]);
  std::swap(tensors[1], tensors[2]);
  std::string error;
  ModelPtr model = load(tensors, error);
  ASSERT_NE(model, nullptr) << error;
  expectNear(run(model.get(), prompt), mockReference(weights, prompt));
  // Different weights change the output: the mock reads all of them.
  MockWeights other = mockWeights(1);
  path = dir.file("other.safetensors");
  ModelPtr otherModel = load(mockTensors(other), error);
  ASSERT_NE(otherModel, nullptr) << error;
  std::vector<float> a = run(model.get(), prompt);
  std::vector<float> b = run(otherModel.get(), prompt);
  EXPECT_NE(a, b);
  expectNear(b, mockReference(other, prompt));
}

TEST_F(ModelLoadTest, NamePrefixes) {
  for (const char *prefix : {"transformer.", "model."}) {
    std::string error;
    ModelPtr model = load(mockTensors(weights, prefix), error);
    ASSERT_NE(model, nullptr) << prefix << ": " << error;
    EXPECT_STREQ(attnrt_model_warnings(model.get()), "");
    expectNear(run(model.get(), prompt), mockReference(weights, prompt));
  }
  // Mixed within one file.
  std::vector<Tensor> tensors = mockTensors(weights);
  tensors[0].name = "transformer." + tensors[0].name;
  tensors[2].name = "model." + tensors[2].name;
  std::string error;
  EXPECT_NE(load(tensors, error), nullptr) << error;
}

TEST_F(ModelLoadTest, ExactNameWinsOverPrefixed) {
  // Both "wte.weight" and "transformer.wte.weight": the exact name is used,
  // the other is reported as unused.
  std::vector<Tensor> tensors = mockTensors(weights);
  MockWeights other = mockWeights(3);
  tensors.push_back(
      f32Tensor("transformer.wte.weight", {mockVocab, mockHidden}, other.wte));
  std::string error;
  ModelPtr model = load(tensors, error);
  ASSERT_NE(model, nullptr) << error;
  expectNear(run(model.get(), prompt), mockReference(weights, prompt));
  EXPECT_EQ(std::string(attnrt_model_warnings(model.get())),
            "weights file '" + path +
                "': tensor 'transformer.wte.weight' is not used by the model; "
                "ignored\n");
}

TEST_F(ModelLoadTest, MissingTensor) {
  std::vector<Tensor> tensors = mockTensors(weights);
  tensors.pop_back();
  EXPECT_EQ(loadError(tensors),
            "missing tensor 'head.bias' required by the model (tried "
            "'head.bias', 'transformer.head.bias', 'model.head.bias')");
  EXPECT_NE(loadError({}).find("missing tensor 'wte.weight'"),
            std::string::npos);
}

TEST_F(ModelLoadTest, WrongShape) {
  std::vector<Tensor> tensors = mockTensors(weights);
  tensors[0].shape = {mockHidden, mockVocab}; // Transposed: same byte count.
  EXPECT_EQ(loadError(tensors),
            "tensor 'wte.weight' has shape [6, 40], the model expects [40, 6]");
  tensors = mockTensors(weights, "transformer.");
  tensors[3] =
      f32Tensor("transformer.head.bias", {41}, std::vector<float>(41, 0.0f));
  EXPECT_EQ(loadError(tensors), "tensor 'transformer.head.bias' (weight "
                                "'head.bias') has shape [41], the model "
                                "expects [40]");
  tensors = mockTensors(weights);
  tensors[2].shape = {1, mockHidden};
  EXPECT_EQ(loadError(tensors),
            "tensor 'h.0.mix.bias' has shape [1, 6], the model expects [6]");
}

TEST_F(ModelLoadTest, UnsupportedDtype) {
  std::vector<Tensor> tensors = mockTensors(weights);
  tensors[3].dtype = "I32"; // Same byte count as F32.
  EXPECT_EQ(loadError(tensors), "tensor 'head.bias' has dtype I32; only F32, "
                                "F16 and BF16 weights can be loaded");
  tensors[3] = {"head.bias", "F64", {mockVocab}, std::string(8 * 40, '\0')};
  EXPECT_EQ(loadError(tensors), "tensor 'head.bias' has dtype F64; only F32, "
                                "F16 and BF16 weights can be loaded");
}

TEST_F(ModelLoadTest, ExtraTensorsWarn) {
  std::vector<Tensor> tensors = mockTensors(weights);
  tensors.push_back(f32Tensor("h.0.unknown", {2}, {1, 2}));
  // An unused tensor may have any dtype, even one weights cannot use.
  tensors.push_back({"step", "I64", {}, std::string(8, '\0')});
  std::string error;
  ModelPtr model = load(tensors, error);
  ASSERT_NE(model, nullptr) << error;
  std::string where = "weights file '" + path + "': ";
  EXPECT_EQ(std::string(attnrt_model_warnings(model.get())),
            where + "tensor 'h.0.unknown' is not used by the model; ignored\n" +
                where + "tensor 'step' is not used by the model; ignored\n");
  expectNear(run(model.get(), prompt), mockReference(weights, prompt));
}

TEST_F(ModelLoadTest, IgnoredBuffersDoNotWarn) {
  std::vector<Tensor> tensors = mockTensors(weights);
  // ignored_suffixes, with and without a prefix, any dtype.
  tensors.push_back(
      {"h.0.attn.bias", "BOOL", {1, 1, 4, 4}, std::string(16, 1)});
  tensors.push_back(
      f32Tensor("transformer.h.3.attn.masked_bias", {}, {-10000.0f}));
  // ignored_names, exactly or with a name prefix.
  tensors.push_back(f32Tensor("lm_head.weight", {1}, {0}));
  tensors.push_back(f32Tensor("model.lm_head.weight", {1}, {0}));
  // Neither: a suffix match must be a real suffix, a name an exact one.
  tensors.push_back(f32Tensor("h.0.attn.bias.extra", {1}, {0}));
  tensors.push_back(f32Tensor("xlm_head.weight", {1}, {0}));
  std::string error;
  ModelPtr model = load(tensors, error);
  ASSERT_NE(model, nullptr) << error;
  std::string where = "weights file '" + path + "': ";
  EXPECT_EQ(std::string(attnrt_model_warnings(model.get())),
            where +
                "tensor 'h.0.attn.bias.extra' is not used by the model; "
                "ignored\n" +
                where +
                "tensor 'xlm_head.weight' is not used by the model; "
                "ignored\n");
}

TEST_F(ModelLoadTest, NonFiniteWeightsAreRejected) {
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  constexpr float inf = std::numeric_limits<float>::infinity();
  MockWeights bad = weights;
  bad.mix[7] = nan;
  EXPECT_EQ(loadError(mockTensors(bad)),
            "tensor 'h.0.mix.weight' element 7 [1, 1] is NaN (non-finite "
            "weights are rejected)");
  bad = weights;
  bad.headBias[39] = -inf;
  bad.wte[200] = inf; // The first weight in manifest order is reported.
  EXPECT_EQ(loadError(mockTensors(bad)),
            "tensor 'wte.weight' element 200 [33, 2] is +Inf (non-finite "
            "weights are rejected)");
  bad.wte[200] = 0;
  EXPECT_EQ(loadError(mockTensors(bad)),
            "tensor 'head.bias' element 39 [39] is -Inf (non-finite weights "
            "are rejected)");
  // After conversion too: F16 infinity and NaN.
  std::vector<Tensor> tensors = mockTensorsAs(weights, "F16");
  tensors[3].data[2 * 5] = 0x00;
  tensors[3].data[2 * 5 + 1] = 0x7c;
  EXPECT_EQ(loadError(tensors), "tensor 'head.bias' element 5 [5] is +Inf "
                                "(non-finite weights are rejected)");
  tensors = mockTensorsAs(weights, "BF16");
  tensors[2].data[0] = static_cast<char>(0xc1);
  tensors[2].data[1] = static_cast<char>(0xff);
  EXPECT_EQ(loadError(tensors), "tensor 'h.0.mix.bias' element 0 [0] is NaN "
                                "(non-finite weights are rejected)");
}

TEST_F(ModelLoadTest, F16AndBF16MatchF32) {
  std::string error;
  ModelPtr f32 = load(mockTensors(weights), error);
  ASSERT_NE(f32, nullptr) << error;
  std::vector<float> expected = run(f32.get(), prompt);
  for (const char *dtype : {"F16", "BF16"}) {
    path = dir.file(std::string(dtype) + ".safetensors");
    ModelPtr model = load(mockTensorsAs(weights, dtype), error);
    ASSERT_NE(model, nullptr) << dtype << ": " << error;
    // Every value is exact in both formats: bit-identical logits.
    EXPECT_EQ(run(model.get(), prompt), expected) << dtype;
  }
  // Mixed dtypes in one file.
  std::vector<Tensor> mixed = mockTensors(weights);
  mixed[0] = mockTensorsAs(weights, "BF16")[0];
  mixed[1] = mockTensorsAs(weights, "F16")[1];
  path = dir.file("mixed.safetensors");
  ModelPtr model = load(mixed, error);
  ASSERT_NE(model, nullptr) << error;
  EXPECT_EQ(run(model.get(), prompt), expected);
}

uint32_t bitsOf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

TEST_F(ModelLoadTest, HalfConversionIsExact) {
  // Edge values stored in head.bias, read back from the pointer the model
  // receives.
  struct Case {
    uint16_t half;
    float expected;
  } halves[] = {
      {0x0000, 0.0f},        {0x8000, -0.0f},
      {0x0001, 0x1p-24f},    {0x8001, -0x1p-24f},  // smallest subnormal
      {0x0200, 0x1p-15f},    {0x03ff, 0x3ffp-24f}, // largest subnormal
      {0x0400, 0x1p-14f},    {0x3c00, 1.0f},       // smallest normal
      {0x3555, 0x1.554p-2f}, {0xc000, -2.0f},
      {0x7bff, 65504.0f},    {0xfbff, -65504.0f}, // largest normal
  };
  struct BCase {
    uint16_t bf16;
    float expected;
  } bfloats[] = {
      {0x0001, 0x1p-133f},  {0x8001, -0x1p-133f}, // subnormal
      {0x007f, 0x7fp-133f}, {0x0080, 0x1p-126f},  // FLT_MIN
      {0x3f80, 1.0f},       {0xbfc0, -1.5f},      {0x7f7f, 0x1.fep127f},
      {0x8000, -0.0f},      {0x4049, 3.140625f},
  };
  std::vector<Tensor> tensors = mockTensors(weights);
  std::vector<uint16_t> halfBits(mockVocab, 0), bfBits(mockVocab, 0);
  for (size_t i = 0; i < std::size(halves); ++i)
    halfBits[i] = halves[i].half;
  for (size_t i = 0; i < std::size(bfloats); ++i)
    bfBits[i] = bfloats[i].bf16;
  for (bool half : {true, false}) {
    tensors[3] = half ? f16Tensor("head.bias", {mockVocab}, halfBits)
                      : bf16Tensor("head.bias", {mockVocab}, bfBits);
    path = dir.file(half ? "h.safetensors" : "b.safetensors");
    std::string error;
    ModelPtr model = load(tensors, error);
    ASSERT_NE(model, nullptr) << error;
    run(model.get(), {1});
    const float *bias = mockLastWeights()[3];
    ASSERT_EQ(reinterpret_cast<uintptr_t>(bias) % 64, 0u);
    if (half) {
      for (size_t i = 0; i < std::size(halves); ++i)
        EXPECT_EQ(bitsOf(bias[i]), bitsOf(halves[i].expected))
            << std::hex << "f16 0x" << halves[i].half;
    } else {
      for (size_t i = 0; i < std::size(bfloats); ++i)
        EXPECT_EQ(bitsOf(bias[i]), bitsOf(bfloats[i].expected))
            << std::hex << "bf16 0x" << bfloats[i].bf16;
    }
  }
}

TEST(HalfConversion, AllF16ValuesMatchTheCompiler) {
  // Exhaustive against the compiler's own _Float16 -> float conversion.
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    _Float16 h;
    uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(&h, &b, 2);
    float expected = static_cast<float>(h);
    float actual = halfToFloat(b);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(actual)) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(bitsOf(actual), bitsOf(expected)) << std::hex << bits;
  }
  EXPECT_EQ(bitsOf(halfToFloat(0x7c00)), bitsOf(INFINITY));
  EXPECT_EQ(bitsOf(halfToFloat(0xfc00)), bitsOf(-INFINITY));
  EXPECT_EQ(bitsOf(halfToFloat(0x7e01)), 0x7fc02000u) << "payload kept";
  EXPECT_EQ(bitsOf(bfloat16ToFloat(0xff80)), bitsOf(-INFINITY));
}

TEST_F(ModelLoadTest, MisalignedF32IsCopied) {
  std::string error;
  ModelPtr aligned = load(mockTensors(weights), error);
  ASSERT_NE(aligned, nullptr) << error;
  std::vector<float> expected = run(aligned.get(), prompt);
  for (size_t shift : {1, 2, 3, 5}) {
    path = dir.file("shift" + std::to_string(shift) + ".safetensors");
    ModelPtr model = load(mockTensors(weights), error, shift);
    ASSERT_NE(model, nullptr) << "shift " << shift << ": " << error;
    EXPECT_EQ(run(model.get(), prompt), expected) << "shift " << shift;
    const float *const *pointers = mockLastWeights();
    for (int w = 0; w < 4; ++w)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(pointers[w]) % alignof(float), 0u);
  }
}

TEST_F(ModelLoadTest, WeightsOutliveTheFile) {
  // F32 weights live in the mapping, which survives an unlink; converted
  // ones are copies.
  for (const char *dtype : {"F32", "BF16"}) {
    std::string error;
    ModelPtr model =
        load(std::string(dtype) == "F32" ? mockTensors(weights)
                                         : mockTensorsAs(weights, dtype),
             error);
    ASSERT_NE(model, nullptr) << error;
    ASSERT_EQ(unlink(path.c_str()), 0);
    expectNear(run(model.get(), prompt), mockReference(weights, prompt));
  }
}

//===----------------------------------------------------------------------===//
// The library and its manifest
//===----------------------------------------------------------------------===//

class LibraryTest : public ModelLoadTest {
protected:
  void SetUp() override {
    writeFile(path, safetensorsBytes(mockTensors(weights)));
  }

  std::string libraryError(const std::string &library) {
    std::string error;
    EXPECT_EQ(loadModel(library, path, error), nullptr);
    return error;
  }

  std::string manifestError(const std::string &json) {
    ManifestOverride manifest(json);
    return libraryError(mockLibrary());
  }

  std::string where() const {
    return std::string("library '") + mockLibrary() + "': ";
  }
};

TEST_F(LibraryTest, NotALibrary) {
  std::string missing = dir.file("libnothing.so");
  std::string error = libraryError(missing);
  EXPECT_EQ(error.rfind("library '" + missing + "': cannot load: ", 0), 0u)
      << error;
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
  std::string text = dir.file("libtext.so");
  writeFile(text, "this is not an ELF file");
  error = libraryError(text);
  EXPECT_EQ(error.rfind("library '" + text + "': cannot load: ", 0), 0u)
      << error;
  // The weights file is not a library either.
  EXPECT_NE(libraryError(path).find("cannot load"), std::string::npos);
}

TEST_F(LibraryTest, MissingSymbol) {
  EXPECT_EQ(libraryError(mockLibraryNoDecode()),
            std::string("library '") + mockLibraryNoDecode() +
                "': does not export attn_model_decode (not a model built by "
                "attn-compile?)");
  // A real shared library that is no model at all.
  std::string error = libraryError("libm.so.6");
  EXPECT_EQ(error, "library 'libm.so.6': cannot load: ./libm.so.6: cannot "
                   "open shared object file: No such file or directory")
      << "a bare name means a file in the current directory";
}

TEST_F(LibraryTest, BadManifests) {
  EXPECT_EQ(manifestError("{\"abi_version\": 3,"),
            where() + "manifest not valid JSON: at byte 18 (line 1, column "
                      "19): syntax error while parsing object key - unexpected "
                      "end of input; expected string literal");
  EXPECT_EQ(manifestError("[]"), where() + "manifest is an array, not a JSON "
                                           "object");
  // A library of another ABI is refused naming both versions.
  EXPECT_EQ(manifestError(
                mockManifestWith("\"abi_version\": 3", "\"abi_version\": 4")),
            where() + "manifest abi_version is 4 (made by an attn-compile older "
                      "than 0.2.0), this runtime (Attn " ATTNRT_VERSION ") supports "
                      "3: rebuild the model with a matching attn-compile");
  EXPECT_EQ(manifestError(mockManifestWith(
                "\"abi_version\": 3", "\"abi_version\": 4, \"attn_version\": \"0.9.1\"")),
            where() + "manifest abi_version is 4 (made by attn-compile 0.9.1), "
                      "this runtime (Attn " ATTNRT_VERSION ") supports 3: rebuild "
                      "the model with a matching attn-compile");
  EXPECT_EQ(manifestError(mockManifestWith(
                "\"abi_version\": 3", "\"abi_version\": 3, \"attn_version\": 7")),
            where() + "manifest \"attn_version\" must be a non-empty string, got 7");
  EXPECT_EQ(manifestError(mockManifestWith("\"abi_version\": 3,", "")),
            where() + "manifest \"abi_version\" is missing");
  EXPECT_EQ(manifestError(mockManifestWith("\"max_seq\": 24", "\"max\": 24")),
            where() + "manifest \"max_seq\" is missing");
  EXPECT_EQ(manifestError(mockManifestWith("\"vocab_size\": 40",
                                           "\"vocab_size\": \"40\"")),
            where() + "manifest \"vocab_size\" is a string, not an integer");
  EXPECT_EQ(
      manifestError(mockManifestWith("\"max_seq\": 24", "\"max_seq\": 0")),
      where() + "manifest \"max_seq\" is 0, must be at least 1");
  EXPECT_EQ(manifestError(
                mockManifestWith("\"hidden_size\": 6", "\"hidden_size\": 6.5")),
            where() + "manifest \"hidden_size\" is a number, not an integer");
  EXPECT_EQ(manifestError(mockManifestWith("{\"bytes\": 96}", "96")),
            where() + "manifest \"kv_cache\" is missing or not an object");
  EXPECT_EQ(
      manifestError(mockManifestWith("{\"bytes\": 96}", "{\"bytes\": -1}")),
      where() + "manifest kv_cache: \"bytes\" is -1, must be at least 0");
  EXPECT_EQ(manifestError(mockManifestWith("{\"bytes\": 96}",
                                           "{\"bytes\": 96, \"format\": \"fp8\"}")),
            where() + "manifest kv_cache: \"format\" must be one of \"f32\", \"bf16\", "
                      "\"f16\", got \"fp8\"");
  EXPECT_EQ(manifestError(mockManifestWith("{\"bytes\": 96}",
                                           "{\"bytes\": 96, \"format\": 16}")),
            where() + "manifest kv_cache: \"format\" must be one of \"f32\", \"bf16\", "
                      "\"f16\", got 16");
  EXPECT_EQ(manifestError(mockManifestWith("\"architecture\": \"mock\",", "")),
            where() + "manifest \"architecture\" is missing or not a string");
  EXPECT_EQ(manifestError(mockManifestWith(
                "\"architecture\": \"mock\",",
                "\"architecture\": \"mock\", \"weight_format\": \"q5_1\",")),
            where() + "manifest \"weight_format\" must be one of \"f32\", \"bf16\", "
                      "\"q8_0\", \"q4_0\", got \"q5_1\"");
  EXPECT_EQ(manifestError(mockManifestWith(
                "{\"name\": \"head.bias\", \"dtype\": \"F32\", ",
                "{\"dtype\": \"F32\", ")),
            where() + "manifest weight 3: \"name\" is missing or not a "
                      "non-empty string");
  EXPECT_EQ(
      manifestError(mockManifestWith("\"head.bias\", \"dtype\": \"F32\"",
                                     "\"head.bias\", \"dtype\": \"F16\"")),
      where() + "manifest weight 'head.bias': \"dtype\" must be \"F32\" "
                "(ABI version 1 passes f32)");
  EXPECT_EQ(
      manifestError(mockManifestWith("\"shape\": [40]}", "\"shape\": [-40]}")),
      where() + "manifest weight 'head.bias': \"shape\" holds something "
                "other than a non-negative integer");
  // A mixture of experts names both counts, K of E.
  EXPECT_EQ(manifestError(mockManifestWith("\"architecture\": \"mock\",",
                                           "\"architecture\": \"mock\", \"num_experts\": 4,")),
            where() + "manifest \"experts_per_token\" (0) must be given with \"num_experts\" "
                      "(4) and be at most that");
  EXPECT_EQ(manifestError(mockManifestWith(
                "\"architecture\": \"mock\",",
                "\"architecture\": \"mock\", \"num_experts\": 4, \"experts_per_token\": 5,")),
            where() + "manifest \"experts_per_token\" (5) must be given with \"num_experts\" "
                      "(4) and be at most that");
  // A stacked-experts slice must name its tensor and fit inside it.
  EXPECT_EQ(manifestError(mockManifestWith(
                "\"shape\": [40]}", "\"shape\": [40], \"or_slice_of\": {\"shape\": [80]}}")),
            where() + "manifest weight 'head.bias': \"or_slice_of\" must hold a \"name\", "
                      "a \"shape\" and an \"offset\"");
  EXPECT_EQ(manifestError(mockManifestWith(
                "\"shape\": [40]}", "\"shape\": [40], \"or_slice_of\": {\"name\": "
                                    "\"heads\", \"shape\": [2, 40], \"offset\": 41}}")),
            where() + "manifest weight 'head.bias': \"or_slice_of\" 'heads' [2, 40] has no "
                      "40 elements from 41");
  EXPECT_EQ(manifestError(mockManifestWith("\"name\": \"head.bias\"",
                                           "\"name\": \"wte.weight\"")),
            where() + "manifest weight 'wte.weight' is listed twice");
  EXPECT_EQ(manifestError(mockManifestWith("[\"transformer.\", \"model.\"]",
                                           "\"transformer.\"")),
            where() + "manifest \"name_prefixes\" is a string, not an array "
                      "of strings");
  EXPECT_EQ(manifestError(mockManifestWith("[\".attn.bias\",", "[1,")),
            where() + "manifest \"ignored_suffixes\" holds a number, not "
                      "only strings");
  EXPECT_EQ(manifestError(mockManifestWith("\"architecture\": \"mock\",",
                                           "\"architecture\": \"mock\", \"amx_tiles\": 1,")),
            where() + "manifest \"amx_tiles\" must be true or false, got 1");
  EXPECT_EQ(manifestError(mockManifestWith("\"architecture\": \"mock\",",
                                           "\"architecture\": \"mock\", \"target\": "
                                           "{\"cpu\": \"znver5\"},")),
            where() + "manifest \"target\" must be an object with a \"cpu\" string "
                      "and a \"features\" array");
  EXPECT_EQ(manifestError(mockManifestWith("\"architecture\": \"mock\",",
                                           "\"architecture\": \"mock\", \"target\": "
                                           "{\"cpu\": \"x\", \"features\": "
                                           "[\"avx2\", \"avx9000\"]},")),
            where() + "manifest target: CPU feature \"avx9000\" is unknown to this "
                      "runtime (a library from a newer attn-compile?)");
}

// The runtime reads CPUID itself (the compiler's view of the host is
// checked against it in test/e2e/model); where Linux shows a feature's flag,
// the runtime must see the feature too.
TEST(CpuFeatures, WhatLinuxShowsTheRuntimeSees) {
  EXPECT_TRUE(isKnownCpuFeature("avx512bf16"));
  EXPECT_FALSE(isKnownCpuFeature("avx512_bf16"));
  EXPECT_FALSE(hostHasCpuFeature("avx9000"));
  EXPECT_TRUE(hostHasCpuFeature("avx2")) << "every CPU Attn supports has AVX2";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty())
    GTEST_SKIP() << "no flags in /proc/cpuinfo";
  const std::pair<const char *, const char *> linuxNames[] = {
      {"sse3", "pni"}, {"pclmul", "pclmulqdq"}, {"ssse3", "ssse3"}, {"fma", "fma"},
      {"cx16", "cx16"}, {"sse4.1", "sse4_1"}, {"sse4.2", "sse4_2"}, {"movbe", "movbe"},
      {"popcnt", "popcnt"}, {"aes", "aes"}, {"avx", "avx"}, {"f16c", "f16c"},
      {"sahf", "lahf_lm"}, {"lzcnt", "abm"}, {"prfchw", "3dnowprefetch"},
      {"bmi", "bmi1"}, {"avx2", "avx2"}, {"bmi2", "bmi2"}, {"avx512f", "avx512f"},
      {"avx512dq", "avx512dq"}, {"avx512ifma", "avx512ifma"}, {"avx512cd", "avx512cd"},
      {"avx512bw", "avx512bw"}, {"avx512vl", "avx512vl"}, {"avx512vbmi", "avx512vbmi"},
      {"avx512vbmi2", "avx512_vbmi2"}, {"gfni", "gfni"}, {"vaes", "vaes"},
      {"vpclmulqdq", "vpclmulqdq"}, {"avx512vnni", "avx512_vnni"},
      {"avx512bitalg", "avx512_bitalg"}, {"avx512vpopcntdq", "avx512_vpopcntdq"},
      {"amx-bf16", "amx_bf16"}, {"avx512fp16", "avx512_fp16"}, {"amx-tile", "amx_tile"},
      {"amx-int8", "amx_int8"}, {"avxvnni", "avx_vnni"}, {"avx512bf16", "avx512_bf16"}};
  int shown = 0;
  for (const auto &[name, flag] : linuxNames) {
    ASSERT_TRUE(isKnownCpuFeature(name)) << name;
    if (flags.find(" " + std::string(flag) + " ") != std::string::npos) {
      ++shown;
      EXPECT_TRUE(hostHasCpuFeature(name)) << name << " (Linux flag " << flag << ")";
    }
  }
  EXPECT_GE(shown, 12) << flags;
}

// A library records the CPU it was compiled for and the features its code
// may use; on a CPU lacking one it is refused by name before its code runs.
TEST_F(LibraryTest, ALibraryForAnotherCpuIsRefusedNamingWhatIsMissing) {
  std::vector<std::string> present, absent;
  for (const char *name : {"avx2", "fma", "avx512f", "avx512vnni", "avx512bf16",
                           "avx512fp16", "amx-tile", "amx-int8"})
    (hostHasCpuFeature(name) ? present : absent).push_back(name);
  auto targetJson = [](const std::vector<std::string> &features) {
    std::string list;
    for (const std::string &name : features)
      list += (list.empty() ? "\"" : ", \"") + name + "\"";
    return "\"architecture\": \"mock\", \"target\": {\"cpu\": \"testcpu\", "
           "\"features\": [" + list + "]},";
  };
  std::string error;
  {
    ManifestOverride manifest(mockManifestWith("\"architecture\": \"mock\",",
                                               targetJson(present)));
    EXPECT_TRUE(loadModel(mockLibrary(), path, error)) << error;
  }
  if (absent.empty())
    GTEST_SKIP() << "this CPU has every feature the test could ask for";
  std::vector<std::string> asked = present;
  asked.insert(asked.end(), absent.begin(), absent.end());
  ManifestOverride manifest(mockManifestWith("\"architecture\": \"mock\",",
                                             targetJson(asked)));
  std::string names;
  for (const std::string &name : absent)
    names += (names.empty() ? "" : ", ") + name;
  EXPECT_FALSE(loadModel(mockLibrary(), path, error));
  EXPECT_EQ(error, where() + "was compiled for testcpu and uses " + names +
                       ", which this CPU (" + hostCpuBrand() +
                       ") lacks; compile it here (attn-compile without --target, "
                       "or --target=x86-64-v3 for any AVX2 machine)");
}

// A library whose gemms use AMX tiles loads where Linux grants the process
// their state (a CPU with amx_tile, kernel 5.16 or later), and elsewhere
// fails before any tile instruction could raise SIGILL, saying why.
TEST_F(LibraryTest, AmxTilesAreRequestedOrRefusedByName) {
  ManifestOverride manifest(mockManifestWith("\"architecture\": \"mock\",",
                                             "\"architecture\": \"mock\", \"amx_tiles\": true,"));
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  bool cpuHasTiles = text.find(" amx_tile") != std::string::npos;
  std::string error;
  ModelPtr model = loadModel(mockLibrary(), path, error);
  if (model)
    EXPECT_TRUE(cpuHasTiles) << "granted AMX state on a CPU without amx_tile";
  else
    EXPECT_EQ(error.rfind(where() + "uses AMX tiles (compiled on a CPU with amx-bf16), but "
                                    "the kernel does not grant this process AMX tile state",
                          0),
              0u)
        << error;
  if (cpuHasTiles)
    EXPECT_TRUE(model) << error;
}

/// `text` with its first `from` replaced by `to`.
std::string replaced(std::string text, const std::string &from,
                     const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST_F(LibraryTest, PackedWeights) {
  // The mix weight is read only by packing; the entry points read buffer 0.
  std::string json = mockManifestWith("\"shape\": [6, 6]}",
                                      "\"shape\": [6, 6], \"used_at_run_time\": false}");
  json = replaced(json, "\"name_prefixes\"",
                  "\"packed\": [{\"name\": \"h.0.mix\", \"bytes\": 144, "
                  "\"sources\": [1]}],\n  \"name_prefixes\"");
  {
    ManifestOverride manifest(json);
    // F32 weights are mapped in place; F16 ones are widened into memory the
    // runtime releases once packed. Both must run from the packed buffer.
    for (const char *dtype : {"F32", "F16"}) {
      writeFile(path, safetensorsBytes(std::string(dtype) == "F32"
                                           ? mockTensors(weights)
                                           : mockTensorsAs(weights, dtype)));
      std::string error;
      ModelPtr model = loadModel(mockLibrary(), path, error);
      ASSERT_NE(model, nullptr) << dtype << ": " << error;
      expectNear(run(model.get(), prompt), mockReference(weights, prompt));
    }
  }
  // Bad source indices and a failed pack are load errors naming the buffer.
  writeFile(path, safetensorsBytes(mockTensors(weights)));
  EXPECT_EQ(manifestError(replaced(json, "\"sources\": [1]", "\"sources\": [4]")),
            where() + "manifest packed buffer 'h.0.mix': \"sources\" holds "
                      "something other than indices of the 4 weights");
  ManifestOverride manifest(replaced(
      json, "\"sources\": [1]}]",
      "\"sources\": [1]}, {\"name\": \"h.0.extra\", \"bytes\": 4, "
      "\"sources\": []}]"));
  std::string error;
  EXPECT_EQ(loadModel(mockLibrary(), path, error), nullptr);
  EXPECT_EQ(error, "weights file '" + path +
                       "': attn_model_pack failed on packed buffer 1 "
                       "(\"h.0.extra\") with code 3");
}

TEST_F(LibraryTest, NullArguments) {
  char error[128] = "";
  EXPECT_EQ(attnrt_model_load(nullptr, path.c_str(), error, sizeof(error)),
            nullptr);
  EXPECT_STREQ(error, "attnrt_model_load: null library or weights path");
  EXPECT_EQ(attnrt_model_load(mockLibrary(), nullptr, nullptr, 0), nullptr);
  attnrt_model_free(nullptr);
  EXPECT_EQ(attnrt_model_vocab_size(nullptr), 0);
  EXPECT_EQ(attnrt_model_get_info(nullptr), nullptr);
  EXPECT_STREQ(attnrt_model_warnings(nullptr), "");
  EXPECT_EQ(attnrt_model_set_num_threads(nullptr, 2), 0);
}

TEST_F(LibraryTest, ErrorBufferTruncation) {
  std::string library = dir.file("nothing.so");
  char full[512] = "";
  EXPECT_EQ(
      attnrt_model_load(library.c_str(), path.c_str(), full, sizeof(full)),
      nullptr);
  char error[16];
  std::memset(error, 'x', sizeof(error));
  EXPECT_EQ(
      attnrt_model_load(library.c_str(), path.c_str(), error, sizeof(error)),
      nullptr);
  EXPECT_EQ(std::string(error), std::string(full).substr(0, 15))
      << "truncated and NUL-terminated";
}

TEST_F(LibraryTest, SetNumThreads) {
  std::string error;
  ModelPtr model = loadModel(mockLibrary(), path, error);
  ASSERT_NE(model, nullptr) << error;
  EXPECT_EQ(attnrt_model_set_num_threads(model.get(), 3), 1);
  void *handle = dlopen(mockLibrary(), RTLD_NOW | RTLD_LOCAL);
  auto threads =
      reinterpret_cast<int32_t (*)()>(dlsym(handle, "mock_num_threads"));
  ASSERT_NE(threads, nullptr);
  EXPECT_EQ(threads(), 3);
  dlclose(handle);
}

} // namespace
