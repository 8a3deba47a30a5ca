//===- NpyTest.cpp - .npy writer and reader -------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace attnrt::test;

namespace {

struct NpyArray {
  std::vector<float> data;
  std::vector<int64_t> shape;
};

int readNpy(const std::string &path, NpyArray &out, std::string &error,
            int32_t maxNdim = 8) {
  float *data = nullptr;
  int64_t shape[8];
  int32_t ndim = 0;
  char message[256] = "";
  int code = attnrt_npy_read_f32(path.c_str(), &data, shape, maxNdim, &ndim,
                                 message, sizeof(message));
  error = message;
  if (code != ATTNRT_OK)
    return code;
  out.shape.assign(shape, shape + ndim);
  int64_t n = 1;
  for (int64_t d : out.shape)
    n *= d;
  out.data.assign(data, data + n);
  attnrt_free(data);
  return code;
}

std::string npyFile(const std::string &header, const std::string &data,
                    int major = 1) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  uint32_t length = static_cast<uint32_t>(header.size());
  int lengthBytes = major == 1 ? 2 : 4;
  for (int i = 0; i < lengthBytes; ++i)
    bytes += static_cast<char>((length >> (8 * i)) & 0xFF);
  return bytes + header + data;
}

TEST(Npy, WritesNumpyLayout) {
  TempDir dir;
  std::string path = dir.file("a.npy");
  std::vector<float> values(15);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) * 0.5f - 3.0f;
  int64_t shape[2] = {3, 5};
  char error[256] = "";
  ASSERT_EQ(attnrt_npy_write_f32(path.c_str(), values.data(), 2, shape, error,
                                 sizeof(error)),
            ATTNRT_OK)
      << error;
  std::string bytes = readFile(path);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t headerLength = static_cast<unsigned char>(bytes[8]) |
                        static_cast<unsigned char>(bytes[9]) << 8;
  size_t dataStart = 10 + headerLength;
  EXPECT_EQ(dataStart % 64, 0u) << "numpy aligns the data to 64 bytes";
  std::string header = bytes.substr(10, headerLength);
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
  EXPECT_EQ(header.substr(0, dict.size()), dict);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.find_first_not_of(' ', dict.size()), headerLength - 1)
      << "padding is spaces";
  ASSERT_EQ(bytes.size(), dataStart + 15 * 4);
  EXPECT_EQ(std::memcmp(bytes.data() + dataStart, values.data(), 60), 0);
}

// int32 arrays (expert ids) as numpy's '<i4', the same layout.
TEST(Npy, WritesInt32) {
  TempDir dir;
  std::string path = dir.file("ids.npy");
  const int32_t values[6] = {-1, 0, 7, 127, -2147483647 - 1, 2147483647};
  int64_t shape[3] = {1, 2, 3};
  char error[256] = "";
  ASSERT_EQ(attnrt_npy_write_i32(path.c_str(), values, 3, shape, error, sizeof(error)),
            ATTNRT_OK)
      << error;
  std::string bytes = readFile(path);
  ASSERT_GE(bytes.size(), 10u);
  size_t dataStart = 10 + (static_cast<unsigned char>(bytes[8]) |
                           static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ(dataStart % 64, 0u);
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 3), }";
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  ASSERT_EQ(bytes.size(), dataStart + sizeof values);
  EXPECT_EQ(std::memcmp(bytes.data() + dataStart, values, sizeof values), 0);
  EXPECT_EQ(attnrt_npy_write_i32(path.c_str(), nullptr, 3, shape, error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_STREQ(error, "attnrt_npy_write_i32: null data");
}

TEST(Npy, RoundTrips) {
  TempDir dir;
  std::string path = dir.file("r.npy");
  char error[256] = "";
  struct Case {
    std::vector<int64_t> shape;
    const char *shapeText;
  } cases[] = {{{7}, "(7,)"},
               {{2, 3, 4}, "(2, 3, 4)"},
               {{}, "()"},
               {{0, 4}, "(0, 4)"},
               {{1, 40}, "(1, 40)"}};
  for (const Case &c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape)
      n *= d;
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i)
      values[i] = static_cast<float>(i * i) / 7.0f - 1.0f;
    ASSERT_EQ(attnrt_npy_write_f32(path.c_str(), values.data(),
                                   static_cast<int32_t>(c.shape.size()),
                                   c.shape.data(), error, sizeof(error)),
              ATTNRT_OK)
        << error;
    EXPECT_NE(readFile(path).find(c.shapeText), std::string::npos)
        << c.shapeText;
    NpyArray array;
    std::string message;
    ASSERT_EQ(readNpy(path, array, message), ATTNRT_OK) << message;
    EXPECT_EQ(array.shape, c.shape);
    EXPECT_EQ(array.data, values);
  }
}

TEST(Npy, ReadsOtherNumpyHeaders) {
  TempDir dir;
  std::string path = dir.file("n.npy");
  float values[6] = {1, 2, 3, 4, 5, 6};
  std::string data(reinterpret_cast<const char *>(values), sizeof(values));
  // Key order, spacing, version 2.0 and numpy's growth padding all vary.
  writeFile(path, npyFile("{'shape':(2,3),'fortran_order':False,"
                          "'descr':'<f4'}          \n",
                          data, 2));
  NpyArray array;
  std::string error;
  ASSERT_EQ(readNpy(path, array, error), ATTNRT_OK) << error;
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.data, std::vector<float>(values, values + 6));
}

TEST(Npy, RejectsWhatItCannotRead) {
  TempDir dir;
  std::string path = dir.file("bad.npy");
  std::string four(16, '\0');
  struct Case {
    std::string bytes;
    const char *message;
  } cases[] = {
      {"not numpy at all", "not a .npy file"},
      {npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n",
               four),
       "not C-order float32"},
      {npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n",
               four),
       "Fortran order"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }\n",
               four),
       "holds 16 data bytes, the shape needs 20"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n",
               four),
       "holds 16 data bytes, the shape needs 12"},
      {npyFile("{'descr': '<f4', 'shape': (4,), }\n", four),
       "malformed header"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), "
               "'extra': 1}\n",
               four),
       "malformed header"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }\n",
               four),
       "malformed header"},
      // A key twice (found by the .npy fuzzer: the shapes added up).
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), "
               "'shape': (4,), }\n",
               four),
       "malformed header"},
      {npyFile("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
               "'shape': (4,), }\n",
               four),
       "malformed header"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(99999999999999999999,), }\n",
               four),
       "malformed header"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(4294967296, 4294967296, 4294967296), }\n",
               four),
       "shape overflows"},
      {npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(1, 1, 1, 1, 1, 1, 1, 1, 1), }\n",
               std::string(4, '\0')),
       "has 9 dimensions, more than 8"},
      {std::string("\x93NUMPY\x01\x00\xff", 9), "truncated header"},
      {std::string("\x93NUMPY\x07\x00", 8), "unsupported .npy version 7"},
  };
  for (const Case &c : cases) {
    writeFile(path, c.bytes);
    NpyArray array;
    std::string error;
    EXPECT_NE(readNpy(path, array, error), ATTNRT_OK) << c.message;
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << error;
  }
  NpyArray array;
  std::string error;
  EXPECT_EQ(readNpy(dir.file("missing.npy"), array, error), ATTNRT_ERROR_IO);
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST(Npy, WriteErrors) {
  TempDir dir;
  float value = 1.0f;
  int64_t shape[1] = {1};
  char error[256] = "";
  std::string path = dir.file("no-such-dir/x.npy");
  EXPECT_EQ(attnrt_npy_write_f32(path.c_str(), &value, 1, shape, error,
                                 sizeof(error)),
            ATTNRT_ERROR_IO);
  EXPECT_EQ(std::string(error),
            "cannot write '" + path + "': No such file or directory");
  int64_t negative[1] = {-1};
  EXPECT_EQ(attnrt_npy_write_f32(dir.file("y.npy").c_str(), &value, 1, negative,
                                 error, sizeof(error)),
            ATTNRT_ERROR_ARGUMENT);
  EXPECT_EQ(
      attnrt_npy_write_f32(nullptr, &value, 1, shape, error, sizeof(error)),
      ATTNRT_ERROR_ARGUMENT);
}

} // namespace
