//===- SafetensorsTest.cpp - malformed weights files ----------------------===//
//
// Every broken file is rejected by attnrt_model_load with one line that
// names the file and (where there is one) the tensor, before any weight is
// used; none crashes or reads outside the file.
//
//===----------------------------------------------------------------------===//

#include "Safetensors.h"
#include "Sampler.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

using namespace attnrt;
using namespace attnrt::test;

namespace {

class WeightsFileTest : public ::testing::Test {
protected:
  /// Writes `bytes` as the weights file and returns the load error.
  std::string loadError(const std::string &bytes) {
    writeFile(path, bytes);
    std::string error;
    ModelPtr model = loadModel(mockLibrary(), path, error);
    EXPECT_EQ(model, nullptr) << "loaded a broken file";
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
    EXPECT_EQ(error.rfind(prefix(), 0), 0u) << "names the file: " << error;
    return error.substr(std::min(error.size(), prefix().size()));
  }

  /// A header with one tensor entry `entry` and `dataBytes` of data.
  std::string oneTensor(const std::string &entry, size_t dataBytes = 16) {
    return rawSafetensors("{\"a\": " + entry + "}", std::string(dataBytes, 0));
  }

  std::string prefix() const { return "weights file '" + path + "': "; }

  TempDir dir;
  std::string path = dir.file("w.safetensors");
};

TEST_F(WeightsFileTest, MissingFileAndDirectory) {
  std::string error;
  std::string missing = dir.file("missing.safetensors");
  EXPECT_EQ(loadModel(mockLibrary(), missing, error), nullptr);
  EXPECT_EQ(error, "weights file '" + missing +
                       "': cannot open: No such file or directory");
  // A directory is a model folder (ShardedWeightsTest covers the forms).
  std::string subdir = dir.file("sub");
  ASSERT_EQ(mkdir(subdir.c_str(), 0700), 0);
  EXPECT_EQ(loadModel(mockLibrary(), subdir, error), nullptr);
  EXPECT_EQ(error, "weights folder '" + subdir +
                       "': holds neither model.safetensors nor "
                       "model.safetensors.index.json");
  rmdir(subdir.c_str());
  std::string fifo = dir.file("fifo.safetensors");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(loadModel(mockLibrary(), fifo, error), nullptr);
  EXPECT_EQ(error, "weights file '" + fifo + "': not a regular file");
  unlink(fifo.c_str());
}

TEST_F(WeightsFileTest, TooShort) {
  EXPECT_EQ(loadError(""), "is 0 bytes, too short for the 8-byte header "
                           "length of a safetensors file");
  EXPECT_EQ(loadError("abcde"), "is 5 bytes, too short for the 8-byte header "
                                "length of a safetensors file");
}

TEST_F(WeightsFileTest, HeaderLengthPastTheFile) {
  std::string bytes = rawSafetensors("{}", "");
  bytes[0] = 100; // Claims 100 header bytes; the file has 2.
  EXPECT_EQ(loadError(bytes), "header length 100 exceeds the file size of 10 "
                              "bytes (truncated file?)");
  bytes = std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10);
  EXPECT_EQ(loadError(bytes),
            "header length 18446744073709551615 is larger than the "
            "104857600-byte limit (not a safetensors file?)");
  bytes = rawSafetensors("{}", "");
  bytes[4] = 1; // 2^32 + 2.
  EXPECT_NE(loadError(bytes).find("is larger than the 104857600-byte limit"),
            std::string::npos);
}

TEST_F(WeightsFileTest, HeaderNotJson) {
  EXPECT_EQ(loadError(rawSafetensors("garbage!", "")),
            "header is not valid JSON: at byte 0 (line 1, column 1): syntax "
            "error while parsing value - invalid literal; last read: 'g'");
  EXPECT_EQ(loadError(rawSafetensors("{\"a\": {\"dtype\": \"F32\"", "")),
            "header is not valid JSON: at byte 21 (line 1, column 22): syntax "
            "error while parsing object - unexpected end of input; expected "
            "'}'");
  EXPECT_EQ(loadError(rawSafetensors(std::string("{}\0\0", 4), "")),
            "header is not valid JSON: at byte 2: NUL byte in the text");
  EXPECT_EQ(loadError(rawSafetensors("[1, 2]", "")),
            "header is an array, not a JSON object");
  EXPECT_EQ(loadError(rawSafetensors("{\"__metadata__\": {\"a\": 1}}", "")),
            "\"__metadata__\" is not an object of strings");
}

TEST_F(WeightsFileTest, EntryFields) {
  EXPECT_EQ(loadError(oneTensor("5")),
            "tensor 'a': entry is a number, not an object");
  EXPECT_EQ(loadError(oneTensor(R"({"shape": [4], "data_offsets": [0, 16]})")),
            "tensor 'a': missing \"dtype\"");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": 32, "shape": [4], "data_offsets": [0, 16]})")),
            "tensor 'a': \"dtype\" is a number, not a string");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": "F7", "shape": [4], "data_offsets": [0, 16]})")),
            "tensor 'a': unknown dtype 'F7'");
  EXPECT_EQ(
      loadError(oneTensor(R"({"dtype": "F32", "data_offsets": [0, 16]})")),
      "tensor 'a': missing \"shape\"");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": "F32", "shape": 4, "data_offsets": [0, 16]})")),
            "tensor 'a': \"shape\" is a number, not an array");
  EXPECT_EQ(
      loadError(oneTensor(
          R"({"dtype": "F32", "shape": [2, -2], "data_offsets": [0, 16]})")),
      "tensor 'a': \"shape\" element 1 is not a non-negative integer");
  EXPECT_EQ(
      loadError(oneTensor(
          R"({"dtype": "F32", "shape": [4.0], "data_offsets": [0, 16]})")),
      "tensor 'a': \"shape\" element 0 is not a non-negative integer");
  EXPECT_EQ(
      loadError(oneTensor(R"({"dtype": "F32", "shape": [4611686018427387904, 4],
                              "data_offsets": [0, 16]})")),
      "tensor 'a': shape [4611686018427387904, 4] has too many elements");
  EXPECT_EQ(
      loadError(oneTensor(
          R"({"dtype": "F32", "shape": [2305843009213693952], "data_offsets": [0, 16]})")),
      "tensor 'a': shape [2305843009213693952] has too many elements")
      << "elements fit int64 but bytes do not";
}

TEST_F(WeightsFileTest, DataOffsets) {
  EXPECT_EQ(loadError(oneTensor(R"({"dtype": "F32", "shape": [4]})")),
            "tensor 'a': missing \"data_offsets\"");
  EXPECT_EQ(
      loadError(oneTensor(
          R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 8, 16]})")),
      "tensor 'a': \"data_offsets\" has 3 elements, not 2");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": "F32", "shape": [4], "data_offsets": [16, 0]})")),
            "tensor 'a': data_offsets [16, 0] are not increasing");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": "F32", "shape": [4], "data_offsets": [-16, 0]})")),
            "tensor 'a': \"data_offsets\" element 0 is not a non-negative "
            "integer");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": "F32", "shape": [4], "data_offsets": [8, 24]})")),
            "tensor 'a': data_offsets [8, 24] end past the 16-byte data region "
            "(truncated file?)");
  EXPECT_EQ(loadError(oneTensor(R"({"dtype": "F32", "shape": [4],
              "data_offsets": [0, 18446744073709551615]})")),
            "tensor 'a': \"data_offsets\" element 1 is not a non-negative "
            "integer");
  EXPECT_EQ(
      loadError(oneTensor(
          R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]})")),
      "tensor 'a': data_offsets span 12 bytes but dtype F32 and shape "
      "[2, 2] need 16");
  EXPECT_EQ(loadError(oneTensor(
                R"({"dtype": "BF16", "shape": [4], "data_offsets": [0, 16]})")),
            "tensor 'a': data_offsets span 16 bytes but dtype BF16 and shape "
            "[4] need 8");
}

TEST_F(WeightsFileTest, TruncatedData) {
  std::string bytes = safetensorsBytes(mockTensors(mockWeights()));
  bytes.resize(bytes.size() - 3);
  std::string error = loadError(bytes);
  EXPECT_EQ(error.rfind("tensor 'head.bias': data_offsets [", 0), 0u) << error;
  EXPECT_NE(error.find("end past the"), std::string::npos) << error;
}

TEST_F(WeightsFileTest, OverlappingTensors) {
  std::string header =
      R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                           "b": {"dtype": "F32", "shape": [2], "data_offsets": [24, 32]},
                           "c": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})";
  EXPECT_EQ(loadError(rawSafetensors(header, std::string(32, 0))),
            "tensors 'a' and 'c' overlap (bytes [0, 16) and [8, 24) of the "
            "data region)");
  // Empty tensors take no bytes: several may sit at one offset.
  header = R"({"e": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
               "f": {"dtype": "F32", "shape": [4, 0], "data_offsets": [8, 8]},
               "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";
  std::string error = loadError(rawSafetensors(header, std::string(16, 0)));
  EXPECT_EQ(error.rfind("missing tensor 'wte.weight'", 0), 0u) << error;
}

TEST_F(WeightsFileTest, DuplicateNames) {
  std::string header =
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                           "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
  EXPECT_EQ(loadError(rawSafetensors(header, std::string(8, 0))),
            "header is not valid JSON: duplicate key 'a'");
}

TEST_F(WeightsFileTest, HostileNamesStayOnOneLine) {
  std::string header =
      "{\"bad\\nname\\u00e9\": {\"dtype\": \"Q\", \"shape\": [], "
      "\"data_offsets\": [0, 0]}}";
  EXPECT_EQ(loadError(rawSafetensors(header, "")),
            "tensor 'bad\\nname\\xc3\\xa9': unknown dtype 'Q'");
}

TEST_F(WeightsFileTest, DeepHeaderNesting) {
  std::string header = "{\"a\": " + std::string(100000, '[') + "}";
  EXPECT_EQ(loadError(rawSafetensors(header, "")),
            "header is not valid JSON: nesting too deep (the limit is 64 "
            "levels)");
}

TEST_F(WeightsFileTest, RandomCorruptionNeverCrashes) {
  // Flip, overwrite and truncate bytes of a good file (header and length
  // mostly): every load must either succeed or fail with a message naming
  // the file. Run under ASan/UBSan this also proves no out-of-bounds read.
  std::string good = safetensorsBytes(mockTensors(mockWeights()));
  size_t dataStart = good.size() - (40 * 6 + 36 + 6 + 40) * 4;
  Xoshiro256 rng(2024);
  auto below = [&](size_t n) { return static_cast<size_t>(rng.next() % n); };
  int loaded = 0, rejected = 0;
  for (int round = 0; round < 400; ++round) {
    std::string bytes = good;
    switch (round % 4) {
    case 0: // A few random bytes in the header.
      for (int k = 0; k < 3; ++k)
        bytes[below(dataStart)] = static_cast<char>(rng.next());
      break;
    case 1: // A structural character or digit swapped for another.
      for (int k = 0; k < 2; ++k)
        bytes[8 + below(dataStart - 8)] = "{}[]\",:0123456789-e. "[below(20)];
      break;
    case 2: // Truncation anywhere.
      bytes.resize(below(bytes.size()));
      break;
    case 3: // The length prefix.
      bytes[below(8)] = static_cast<char>(rng.next());
      break;
    }
    writeFile(path, bytes);
    std::string error;
    ModelPtr model = loadModel(mockLibrary(), path, error);
    if (model) {
      ++loaded;
      continue;
    }
    ++rejected;
    ASSERT_EQ(error.rfind(prefix(), 0), 0u) << error;
    ASSERT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_GT(rejected, 300);
  (void)loaded; // Some mutations are harmless (a digit in padding, ...).
}

// The parser directly: tensors sorted by name, lookups, dtype sizes.
TEST(Safetensors, ParsesAWellFormedFile) {
  TempDir dir;
  std::string path = dir.file("ok.safetensors");
  std::vector<Tensor> tensors = {
      f32Tensor("x", {2, 3}, {1, 2, 3, 4, 5, 6}),
      f16Tensor("y", {3}, {0x3c00, 0x4000, 0x4200}),
      {"z", "I64", {}, std::string(8, '\x01')},
      {"empty", "U8", {0}, ""},
  };
  writeFile(path, safetensorsBytes(tensors));
  SafetensorsFile file;
  std::string error;
  ASSERT_TRUE(file.open(path, error)) << error;
  ASSERT_EQ(file.tensors().size(), 4u);
  std::vector<std::string> names;
  for (const TensorInfo &tensor : file.tensors())
    names.push_back(tensor.name);
  EXPECT_EQ(names, (std::vector<std::string>{"empty", "x", "y", "z"}));
  EXPECT_EQ(file.find("y"), 2);
  EXPECT_EQ(file.tensors()[2].dtype, DType::F16);
  EXPECT_EQ(file.tensors()[3].shape, std::vector<int64_t>{});
  EXPECT_EQ(file.tensors()[3].elements, 1);
  EXPECT_EQ(file.tensors()[0].elements, 0);
  EXPECT_EQ(file.find("nope"), -1);
  EXPECT_EQ(file.dataOffset() % 8, 0u);
  const float *x =
      reinterpret_cast<const float *>(file.tensorData(file.tensors()[1]));
  EXPECT_EQ(x[5], 6.0f);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_STREQ(dtypeName(DType::F8E4M3), "F8_E4M3");
  DType dtype;
  EXPECT_TRUE(parseDType("BOOL", dtype));
  EXPECT_EQ(dtype, DType::Bool);
  EXPECT_FALSE(parseDType("f32", dtype)) << "dtype names are case sensitive";
}

} // namespace
