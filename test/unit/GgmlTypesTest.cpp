//===- GgmlTypesTest.cpp - ggml's type table and dequantization -----------===//
//
// The block geometry of every ggml type against ggml-common.h's sizes, and
// the dequantization of every type Attn reads against ggml's own
// dequantize_row_* on the blocks ggml's quantizers made
// (data/ggml-blocks.txt): bit for bit, signs, scales, mins and the 6-bit
// scale packing included.
//
//===----------------------------------------------------------------------===//

#include "GgmlTypes.h"
#include "Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace attnrt;

// The regenerated inputs must round exactly as ggml-blocks.c's (built with
// -ffp-contract=off): no fused multiply-adds here either.
#pragma STDC FP_CONTRACT OFF

namespace {

TEST(GgmlTypesTest, BlockGeometryMatchesGgml) {
  struct Expected {
    uint32_t id;
    const char *name;
    uint32_t block, bytes;
  };
  // ggml-common.h's static_asserts, QK_K = 256.
  const Expected table[] = {
      {0, "f32", 1, 4},         {1, "f16", 1, 2},
      {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
      {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
      {10, "q2_K", 256, 84},    {11, "q3_K", 256, 110},
      {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
      {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},
      {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
      {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
      {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},
      {22, "iq2_s", 256, 82},   {23, "iq4_xs", 256, 136},
      {24, "i8", 1, 1},         {25, "i16", 1, 2},
      {26, "i32", 1, 4},        {27, "i64", 1, 8},
      {28, "f64", 1, 8},        {29, "iq1_m", 256, 56},
      {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
      {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
  };
  for (const Expected &e : table) {
    const GgmlTypeTraits *t = ggmlTypeTraits(e.id);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(static_cast<uint32_t>(t->type), e.id);
    EXPECT_STREQ(t->name, e.name);
    EXPECT_EQ(t->blockSize, e.block) << e.name;
    EXPECT_EQ(t->typeSize, e.bytes) << e.name;
  }
  // Removed from ggml (Q4_2, Q4_3) or from GGUF files (the repacked
  // Q4_0_4_4 family), and past the end.
  for (uint32_t gone : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 255u})
    EXPECT_EQ(ggmlTypeTraits(gone), nullptr) << gone;
}

float hexFloat(const std::string &hex, size_t i) {
  return bitsToFloat(
      static_cast<uint32_t>(std::stoul(hex.substr(8 * i, 8), nullptr, 16)));
}

struct Block {
  std::string type;
  std::vector<float> input;
  std::vector<uint8_t> bytes;
  std::vector<float> expected;
};

std::vector<Block> loadBlocks() {
  std::ifstream in(ATTNRT_TEST_UNIT_DATA "/ggml-blocks.txt");
  EXPECT_TRUE(in) << "cannot read ggml-blocks.txt";
  std::vector<Block> blocks;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("many ", 0) == 0)
      continue;
    std::istringstream fields(line);
    Block b;
    std::string input, bytes, expected;
    fields >> b.type >> input >> bytes >> expected;
    for (size_t i = 0; i < input.size() / 8; ++i)
      b.input.push_back(hexFloat(input, i));
    for (size_t i = 0; i < bytes.size() / 2; ++i)
      b.bytes.push_back(
          static_cast<uint8_t>(std::stoul(bytes.substr(2 * i, 2), nullptr, 16)));
    for (size_t i = 0; i < expected.size() / 8; ++i)
      b.expected.push_back(hexFloat(expected, i));
    blocks.push_back(std::move(b));
  }
  return blocks;
}

GgmlType typeNamed(const std::string &name) {
  for (uint32_t id = 0; id < 64; ++id)
    if (const GgmlTypeTraits *t = ggmlTypeTraits(id))
      if (name == t->name)
        return t->type;
  ADD_FAILURE() << "unknown type " << name;
  return GgmlType::F32;
}

TEST(GgmlTypesTest, DequantizesAsGgmlDoes) {
  std::vector<Block> blocks = loadBlocks();
  std::map<std::string, int> perType;
  for (const Block &b : blocks) {
    GgmlType type = typeNamed(b.type);
    const GgmlTypeTraits &traits = ggmlTypeTraits(type);
    ASSERT_TRUE(canDequantizeGgml(type)) << b.type;
    ASSERT_EQ(b.bytes.size(), traits.typeSize) << b.type;
    ASSERT_EQ(b.expected.size(), traits.blockSize) << b.type;
    std::vector<float> out(traits.blockSize);
    dequantizeGgmlRow(type, b.bytes.data(), out.data(), traits.blockSize);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(floatToBits(out[i]), floatToBits(b.expected[i]))
          << b.type << " block " << perType[b.type] << " element " << i
          << ": " << out[i] << " vs ggml's " << b.expected[i];
    // The data is worth testing with: the block is close to its input
    // (so a bug cannot hide behind all-zero blocks) and not trivially so.
    double err = 0, norm = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      err += (out[i] - b.input[i]) * (out[i] - b.input[i]);
      norm += b.input[i] * b.input[i];
    }
    EXPECT_LT(err, 0.05 * norm) << b.type;
    EXPECT_GT(err, 0.0) << b.type;
    ++perType[b.type];
  }
  for (const char *type :
       {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_K", "q5_K", "q6_K"})
    EXPECT_EQ(perType[type], 2) << type;
}

TEST(GgmlTypesTest, QuantizesAsGgmlDoes) {
  // ggml's quantize_row_<type>_ref bytes for the same inputs.
  int checked = 0;
  for (const Block &b : loadBlocks()) {
    GgmlType type = typeNamed(b.type);
    if (!canQuantizeGgml(type))
      continue;
    std::vector<uint8_t> bytes(b.bytes.size(), 0xAA);
    quantizeGgmlRow(type, b.input.data(), bytes.data(),
                    static_cast<int64_t>(b.input.size()));
    for (size_t i = 0; i < bytes.size(); ++i)
      ASSERT_EQ(int(bytes[i]), int(b.bytes[i]))
          << b.type << " byte " << i << " of " << bytes.size();
    ++checked;
  }
  EXPECT_EQ(checked, 16);
}

uint64_t fnv1a(uint64_t hash, const void *data, size_t bytes) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

TEST(GgmlTypesTest, ManyBlocksQuantizeAndDequantizeAsGgmlDoes) {
  // 256 blocks per type over scales from 1e-4 to 30 (and a zero block),
  // generated as ggml-blocks.c generates them, against the hashes of ggml's
  // bytes and dequantized floats.
  std::ifstream in(ATTNRT_TEST_UNIT_DATA "/ggml-blocks.txt");
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.rfind("many ", 0) != 0)
      continue;
    std::istringstream fields(line.substr(5));
    std::string name, bytesHash, floatsHash;
    fields >> name >> bytesHash >> floatsHash;
    GgmlType type = typeNamed(name);
    ASSERT_TRUE(canQuantizeGgml(type)) << name;
    const GgmlTypeTraits &traits = ggmlTypeTraits(type);
    uint32_t state = 777;
    auto uniform = [&] {
      state = state * 1664525u + 1013904223u;
      return (float(state >> 8) / 16777216.0f) * 2 - 1;
    };
    static const float scales[13] = {1e-4f, 2e-4f, 5e-4f, 1e-3f, 3e-3f,
                                     1e-2f, 3e-2f, 0.1f,  0.3f,  1.0f,
                                     3.0f,  10.0f, 30.0f};
    uint64_t hb = 14695981039346656037ull, hf = hb;
    std::vector<uint8_t> block(traits.typeSize);
    std::vector<float> y(traits.blockSize);
    for (int b = 0; b < 256; ++b) {
      float x[256];
      float scale = b == 17 ? 0.0f : scales[b % 13];
      for (int i = 0; i < 256; ++i)
        x[i] = uniform() * scale * float(1 + (i % (3 + b % 5) == 0) * (b % 4));
      for (uint32_t off = 0; off < 256; off += traits.blockSize) {
        quantizeGgmlRow(type, x + off, block.data(), traits.blockSize);
        dequantizeGgmlRow(type, block.data(), y.data(), traits.blockSize);
        hb = fnv1a(hb, block.data(), block.size());
        hf = fnv1a(hf, y.data(), 4 * y.size());
      }
    }
    char got[40];
    std::snprintf(got, sizeof(got), "%016llx %016llx",
                  static_cast<unsigned long long>(hb),
                  static_cast<unsigned long long>(hf));
    EXPECT_EQ(got, bytesHash + " " + floatsHash) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

TEST(GgmlTypesTest, QuantizersHandleFlatAndZeroBlocks) {
  // All zeros, all equal, one non-zero: the scale-search degenerate cases
  // decode to (nearly) the input and never to NaN.
  for (GgmlType type :
       {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
        GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    const GgmlTypeTraits &traits = ggmlTypeTraits(type);
    for (int pattern = 0; pattern < 3; ++pattern) {
      std::vector<float> x(256, pattern == 1 ? 0.25f : 0.0f);
      if (pattern == 2)
        x[37] = -1.5f;
      std::vector<uint8_t> bytes(256 / traits.blockSize * traits.typeSize);
      std::vector<float> y(256);
      quantizeGgmlRow(type, x.data(), bytes.data(), 256);
      dequantizeGgmlRow(type, bytes.data(), y.data(), 256);
      for (int i = 0; i < 256; ++i)
        ASSERT_NEAR(y[i], x[i], 0.1) << traits.name << " pattern " << pattern
                                     << " element " << i;
    }
  }
}

TEST(GgmlTypesTest, HalfAndBfloat16RoundToNearestEven) {
  // Every f16 value, the floats just beside it and the midpoints to its
  // neighbours, against the compiler's own conversion (round to nearest
  // even).
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float v = halfToFloat(static_cast<uint16_t>(h));
    if (v != v)
      continue;
    float next = halfToFloat(static_cast<uint16_t>(h + 1));
    float probes[] = {v, std::nextafter(v, INFINITY), std::nextafter(v, -INFINITY),
                      next == next && std::isfinite(next) && std::isfinite(v)
                          ? (v + next) / 2
                          : v};
    for (float f : probes) {
      _Float16 expected = static_cast<_Float16>(f);
      uint16_t bits;
      std::memcpy(&bits, &expected, 2);
      ASSERT_EQ(floatToHalf(f), bits) << std::hexfloat << f;
    }
  }
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(-65520.0f), 0xFC00);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(NAN) & 0x7E00, 0x7E00);
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x3F808000)), 0x3F80); // Tie: even.
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x3F818000)), 0x3F82); // Tie: up.
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x3F808001)), 0x3F81);
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x7F800001)), 0x7FC0); // Quiet NaN.
}

TEST(GgmlTypesTest, KQuantsUseEverySixBitScale) {
  // The blocks reach the upper sub-blocks' high scale bits, where a slip in
  // the 6-bit unpacking shows: some scale or min of sub-blocks 4-7 >= 16.
  for (const Block &b : loadBlocks()) {
    if (b.type != "q4_K" && b.type != "q5_K")
      continue;
    const uint8_t *scales = b.bytes.data() + 4;
    bool high = false;
    for (int j = 0; j < 4; ++j)
      high |= (scales[j] >> 6) != 0 || (scales[j + 4] >> 6) != 0;
    EXPECT_TRUE(high) << b.type;
  }
}

TEST(GgmlTypesTest, PlainTypesWiden) {
  const uint8_t f16[] = {0x00, 0x3c, 0x01, 0x00, 0x00, 0xfc}; // 1, 2^-24, -inf
  float out[3];
  dequantizeGgmlRow(GgmlType::F16, f16, out, 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0x1p-24f);
  EXPECT_EQ(out[2], -INFINITY);
  const uint8_t bf16[] = {0x80, 0x3f, 0x49, 0xc0}; // 1, -3.140625
  dequantizeGgmlRow(GgmlType::BF16, bf16, out, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.140625f);
  const float f32[] = {1.5f, -2.0f};
  dequantizeGgmlRow(GgmlType::F32, reinterpret_cast<const uint8_t *>(f32), out,
                    2);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
}

} // namespace
