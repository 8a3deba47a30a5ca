//===- GgufTest.cpp - the GGUF reader, well-formed and broken files -------===//
//
// A file GgufWriter writes reads back with every value, type and tensor
// range; every broken file (truncated anywhere, wrong magic or version,
// counts, types, dimensions, offsets, duplicates) is refused with one line
// naming the file and the key or tensor, never a crash or a read outside
// the file.
//
//===----------------------------------------------------------------------===//

#include "Gguf.h"
#include "GgufConfig.h"
#include "GgufWriter.h"
#include "chat/ChatTemplate.h"
#include "tokenizer/Tokenizer.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

using namespace attnrt;
using namespace attnrt::test;

namespace {

const std::string kPath = "m.gguf";
const std::string kPrefix = "GGUF file 'm.gguf': ";

std::string pattern(size_t bytes, unsigned seed) {
  std::string out(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i)
    out[i] = static_cast<char>((i * 37 + seed * 101 + 11) & 0xFF);
  return out;
}

/// A small model-like file: keys of several types and tensors of four
/// types, the last a whole multiple of the alignment so that every strict
/// prefix of the file is truncated.
GgufWriter sampleWriter() {
  GgufWriter w;
  w.setString("general.architecture", "llama");
  w.setU32("llama.block_count", 2);
  w.setI32("llama.rope.dimension_count", -3);
  w.setU64("llama.context_length", uint64_t(1) << 40);
  w.setF32("llama.rope.freq_base", 10000.5f);
  w.setBool("tokenizer.ggml.add_bos_token", true);
  w.setStringArray("tokenizer.ggml.tokens", {"<s>", "", "\xe2\x96\x81the"});
  w.setI32Array("tokenizer.ggml.token_type", {3, 1, -1});
  w.setF32Array("tokenizer.ggml.scores", {0.0f, -1.5f, 2.25f});
  w.addTensor("token_embd.weight", GgmlType::F32, {3, 2}, pattern(24, 1));
  w.addTensor("blk.0.attn_q.weight", GgmlType::Q4_K, {256, 2},
              pattern(288, 2));
  w.addTensor("output_norm.weight", GgmlType::F16, {5}, pattern(10, 3));
  w.addTensor("output.weight", GgmlType::Q8_0, {64, 8}, pattern(544, 4));
  return w;
}

template <typename T> void poke(std::string &bytes, uint64_t at, T value) {
  ASSERT_LE(at + sizeof(T), bytes.size());
  std::memcpy(&bytes[at], &value, sizeof(T));
}

/// The error opening `bytes`, checked to be one line naming the file.
std::string openError(const std::string &bytes) {
  GgufFile file;
  std::string error;
  EXPECT_FALSE(file.openBytes(reinterpret_cast<const uint8_t *>(bytes.data()),
                              bytes.size(), kPath, error))
      << "accepted a broken file";
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_EQ(error.rfind(kPrefix, 0), 0u) << error;
  return error.substr(std::min(error.size(), kPrefix.size()));
}

bool opens(GgufFile &file, const std::string &bytes, std::string &error) {
  return file.openBytes(reinterpret_cast<const uint8_t *>(bytes.data()),
                        bytes.size(), kPath, error);
}

TEST(GgufTest, ReadsBackWhatTheWriterWrote) {
  for (uint32_t version : {2u, 3u}) {
    std::string bytes = sampleWriter().bytes(version);
    GgufFile file;
    std::string error;
    ASSERT_TRUE(opens(file, bytes, error)) << error;
    EXPECT_EQ(file.version(), version);
    EXPECT_EQ(file.alignment(), 32u);
    ASSERT_EQ(file.metadata().size(), 9u);
    EXPECT_EQ(file.metadata()[0].name, "general.architecture");
    EXPECT_EQ(file.metadata()[8].name, "tokenizer.ggml.scores");

    std::string_view text;
    ASSERT_TRUE(file.getString("general.architecture", text, error));
    EXPECT_EQ(text, "llama");
    uint64_t u;
    ASSERT_TRUE(file.getUnsigned("llama.block_count", u, error));
    EXPECT_EQ(u, 2u);
    ASSERT_TRUE(file.getUnsigned("llama.context_length", u, error));
    EXPECT_EQ(u, uint64_t(1) << 40);
    int64_t s;
    ASSERT_TRUE(file.getSigned("llama.rope.dimension_count", s, error));
    EXPECT_EQ(s, -3);
    double f;
    ASSERT_TRUE(file.getFloat("llama.rope.freq_base", f, error));
    EXPECT_EQ(f, 10000.5);
    bool b = false;
    ASSERT_TRUE(file.getBool("tokenizer.ggml.add_bos_token", b, error));
    EXPECT_TRUE(b);
    std::vector<std::string_view> tokens;
    ASSERT_TRUE(file.getStringArray("tokenizer.ggml.tokens", tokens, error));
    ASSERT_EQ(tokens.size(), 3u);
    EXPECT_EQ(tokens[0], "<s>");
    EXPECT_EQ(tokens[1], "");
    EXPECT_EQ(tokens[2], "\xe2\x96\x81the");
    std::vector<int64_t> types;
    ASSERT_TRUE(file.getIntegerArray("tokenizer.ggml.token_type", types,
                                     error));
    EXPECT_EQ(types, (std::vector<int64_t>{3, 1, -1}));
    std::vector<double> scores;
    ASSERT_TRUE(file.getFloatArray("tokenizer.ggml.scores", scores, error));
    EXPECT_EQ(scores, (std::vector<double>{0.0, -1.5, 2.25}));

    ASSERT_EQ(file.tensors().size(), 4u);
    const GgufTensorInfo &q = file.tensors()[1];
    EXPECT_EQ(q.name, "blk.0.attn_q.weight");
    EXPECT_EQ(q.type, GgmlType::Q4_K);
    EXPECT_EQ(q.dims, (std::vector<int64_t>{256, 2}));
    EXPECT_EQ(q.shape(), (std::vector<int64_t>{2, 256}));
    EXPECT_EQ(q.elements, 512);
    // Each tensor starts at a multiple of the alignment after the last.
    EXPECT_EQ(file.tensors()[0].begin, 0u);
    EXPECT_EQ(q.begin, 32u);
    EXPECT_EQ(q.end, 32u + 288u);
    EXPECT_EQ(file.tensors()[2].begin, 320u);
    EXPECT_EQ(file.tensors()[3].begin, 352u);
    EXPECT_EQ(file.dataOffset() % 32, 0u);
    EXPECT_EQ(file.dataOffset() + file.tensors()[3].end, bytes.size());
    for (unsigned i = 0; i < 4; ++i) {
      const GgufTensorInfo &t = file.tensors()[i];
      EXPECT_EQ(file.find(t.name), int64_t(i));
      EXPECT_EQ(std::string(reinterpret_cast<const char *>(file.tensorData(t)),
                            t.end - t.begin),
                pattern(t.end - t.begin, i + 1))
          << t.name;
    }
    EXPECT_EQ(file.find("missing"), -1);
  }
}

TEST(GgufTest, ReadsAFileFromDiskWithItsOwnAlignment) {
  TempDir dir;
  GgufWriter w = sampleWriter();
  w.setU32("general.alignment", 64);
  std::string path = dir.file("a.gguf");
  std::string error;
  ASSERT_TRUE(w.write(path, error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(path, error)) << error;
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.dataOffset() % 64, 0u);
  EXPECT_EQ(file.tensors()[1].begin, 64u);
  EXPECT_EQ(file.tensors()[2].begin, 384u);
  EXPECT_EQ(file.tensors()[3].begin, 448u);

  GgufFile missing;
  EXPECT_FALSE(missing.open(dir.file("none.gguf"), error));
  EXPECT_EQ(error, "GGUF file '" + dir.file("none.gguf") +
                       "': cannot open: No such file or directory");
}

TEST(GgufTest, TypedReadsNameTheKey) {
  std::string bytes = sampleWriter().bytes();
  GgufFile file;
  std::string error;
  ASSERT_TRUE(opens(file, bytes, error)) << error;
  std::string_view text;
  EXPECT_FALSE(file.getString("llama.block_count", text, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'llama.block_count': expected "
                             "string, found u32");
  EXPECT_FALSE(file.getString("llama.expert_count", text, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'llama.expert_count' is missing");
  uint64_t u;
  EXPECT_FALSE(file.getUnsigned("llama.rope.dimension_count", u, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'llama.rope.dimension_count': -3 "
                             "is negative");
  EXPECT_FALSE(file.getUnsigned("general.architecture", u, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'general.architecture': expected "
                             "an unsigned integer, found string");
  double f;
  EXPECT_FALSE(file.getFloat("llama.block_count", f, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'llama.block_count': expected f32 "
                             "or f64, found u32");
  std::vector<std::string_view> tokens;
  EXPECT_FALSE(file.getStringArray("tokenizer.ggml.scores", tokens, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'tokenizer.ggml.scores': expected "
                             "array of string, found array of f32");
  std::vector<int64_t> ints;
  EXPECT_FALSE(file.getIntegerArray("tokenizer.ggml.tokens", ints, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'tokenizer.ggml.tokens': expected "
                             "array of integers, found array of string");
  bool b;
  EXPECT_FALSE(file.getBool("llama.block_count", b, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'llama.block_count': expected "
                             "bool, found u32");

  GgufWriter big;
  big.setU64("big", uint64_t(1) << 63);
  bytes = big.bytes();
  ASSERT_TRUE(opens(file, bytes, error)) << error;
  int64_t s;
  EXPECT_FALSE(file.getSigned("big", s, error));
  EXPECT_EQ(error, kPrefix + "metadata key 'big': 9223372036854775808 does "
                             "not fit in i64");
}

TEST(GgufTest, EveryTruncationIsRefused) {
  std::string bytes = sampleWriter().bytes();
  for (size_t size = 0; size < bytes.size(); ++size) {
    std::string error = openError(bytes.substr(0, size));
    if (size < 4) {
      EXPECT_EQ(error, "is " + std::to_string(size) +
                           " bytes, too short for a GGUF header");
    } else {
      EXPECT_NE(error.find("truncated file?"), std::string::npos)
          << size << ": " << error;
    }
  }
  std::string error = openError(bytes.substr(0, 40));
  EXPECT_EQ(error, "metadata entry 0: file ends inside a metadata key "
                   "(offset 32: 20 bytes needed, 8 left; truncated file?)");
  error = openError(bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(error, "tensor 'output.weight': data [352, 896) runs past the "
                   "end of the 895-byte data region (truncated file?)");
}

TEST(GgufTest, RefusesBadHeaders) {
  std::string good = sampleWriter().bytes();
  std::string bytes = good;
  bytes[0] = 'g';
  EXPECT_EQ(openError(bytes), "not a GGUF file (the magic is not \"GGUF\")");
  for (uint32_t version : {0u, 1u, 4u}) {
    bytes = good;
    poke<uint32_t>(bytes, 4, version);
    EXPECT_EQ(openError(bytes),
              "GGUF version " + std::to_string(version) +
                  " is not supported (versions 2 and 3 are; version 1 files "
                  "need converting with a current llama.cpp)");
  }
  bytes = good;
  poke<uint64_t>(bytes, 8, uint64_t(1) << 62);
  EXPECT_EQ(openError(bytes), "tensor count 4611686018427387904 is larger "
                              "than the 1048576 accepted");
  bytes = good;
  poke<uint64_t>(bytes, 16, ~uint64_t(0));
  EXPECT_EQ(openError(bytes), "metadata count 18446744073709551615 is larger "
                              "than the 65536 accepted");
  // More keys than there are: the tensor infos read as keys, and fail.
  bytes = good;
  poke<uint64_t>(bytes, 16, 10);
  openError(bytes);
}

TEST(GgufTest, RefusesBadMetadata) {
  auto withKey = [](auto set) {
    GgufWriter w;
    w.setString("general.architecture", "llama");
    set(w);
    return w.bytes();
  };
  EXPECT_EQ(openError(withKey([](GgufWriter &w) {
              w.setRaw("k", static_cast<GgufType>(13), "");
            })),
            "metadata key 'k': unknown value type 13");
  std::string nested;
  nested.append("\x09\0\0\0", 4);
  nested.append("\x01\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(openError(withKey([&](GgufWriter &w) {
              w.setRaw("k", GgufType::Array, nested);
            })),
            "metadata key 'k': arrays of arrays are not supported");
  EXPECT_EQ(openError(withKey([](GgufWriter &w) {
              w.setRaw("flag", GgufType::Bool, "\x02");
            })),
            "metadata key 'flag': bool value 2 is neither 0 nor 1");
  std::string huge;
  huge.append("\x04\0\0\0", 4);
  huge.append("\0\0\0\0\0\0\0\x40", 8);
  EXPECT_EQ(openError(withKey([&](GgufWriter &w) {
              w.setRaw("k", GgufType::Array, huge);
            })),
            "metadata key 'k': 4611686018427387904 values of u32 do not fit "
            "in the 2 bytes left (truncated file?)");
  std::string strings;
  strings.append("\x08\0\0\0", 4);
  strings.append("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
  EXPECT_EQ(openError(withKey([&](GgufWriter &w) {
              w.setRaw("k", GgufType::Array, strings);
            })),
            "metadata key 'k': 18446744073709551615 strings cannot fit in "
            "the 2 bytes left (truncated file?)");
  EXPECT_EQ(openError(withKey([](GgufWriter &w) {
              w.setRaw("", GgufType::U8, "\x01");
            })),
            "metadata entry 1 has an empty key");
  // The writer keeps one entry per key; a hand-made duplicate:
  GgufWriter w;
  w.setString("general.architecture", "llama");
  w.setString("general.name", "x");
  std::string bytes = w.bytes();
  size_t at = bytes.find("general.name");
  bytes.replace(at, 12, "general.arch");
  bytes.insert(at + 12, "itecture");
  poke<uint64_t>(bytes, at - 8, 20);
  EXPECT_EQ(openError(bytes),
            "metadata key 'general.architecture' appears twice");

  EXPECT_EQ(openError(withKey([](GgufWriter &w) {
              w.setU64("general.alignment", 64);
            })),
            "metadata key 'general.alignment': expected u32, found u64");
  EXPECT_EQ(openError(withKey([](GgufWriter &w) {
              w.setU32("general.alignment", 48);
            })),
            "metadata key 'general.alignment': 48 is not a power of two");
  EXPECT_EQ(openError(withKey([](GgufWriter &w) {
              w.setU32("general.alignment", 0);
            })),
            "metadata key 'general.alignment': 0 is not a power of two");
}

TEST(GgufTest, RefusesBadTensorInfos) {
  GgufWriter base = sampleWriter();
  std::string good = base.bytes();
  // The fields of tensor 1 ("blk.0.attn_q.weight", 2 dims).
  uint64_t info = base.tensorInfoOffset(1);
  uint64_t nameLength = 19;
  uint64_t numDims = info + 8 + nameLength;
  uint64_t dim0 = numDims + 4, dim1 = dim0 + 8;
  uint64_t type = dim1 + 8, offset = type + 4;

  std::string bytes = good;
  poke<uint32_t>(bytes, numDims, 0);
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': 0 dimensions (1 "
                              "to 4 are allowed)");
  bytes = good;
  poke<uint32_t>(bytes, numDims, 5);
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': 5 dimensions (1 "
                              "to 4 are allowed)");
  bytes = good;
  poke<uint64_t>(bytes, dim1, uint64_t(1) << 60);
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': dimension 1 "
                              "(1152921504606846976) overflows the element "
                              "count");
  bytes = good;
  poke<uint64_t>(bytes, dim1, ~uint64_t(0));
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': dimension 1 "
                              "(18446744073709551615) overflows the element "
                              "count");
  // A large but representable size runs past the end of the file.
  bytes = good;
  poke<uint64_t>(bytes, dim1, uint64_t(1) << 40);
  EXPECT_NE(openError(bytes).find("tensor 'blk.0.attn_q.weight': data [32, "
                                  "158329674399776) runs past the end"),
            std::string::npos);
  for (uint32_t unknown : {4u, 31u, 36u, 40u, 1000u}) {
    bytes = good;
    poke<uint32_t>(bytes, type, unknown);
    EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': unknown ggml "
                                "type " +
                                    std::to_string(unknown));
  }
  bytes = good;
  poke<uint64_t>(bytes, dim0, 128);
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': rows of 128 "
                              "elements are not whole q4_K blocks of 256");
  bytes = good;
  poke<uint64_t>(bytes, offset, 48);
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': data offset 48 "
                              "is not a multiple of the alignment 32");
  bytes = good;
  poke<uint64_t>(bytes, offset, 0);
  EXPECT_EQ(openError(bytes), "tensors 'token_embd.weight' and "
                              "'blk.0.attn_q.weight' overlap (bytes [0, 24) "
                              "and [0, 288) of the data region)");
  bytes = good;
  poke<uint64_t>(bytes, offset, ~uint64_t(31));
  EXPECT_EQ(openError(bytes), "tensor 'blk.0.attn_q.weight': data range "
                              "overflows");
  bytes = good;
  bytes.replace(info + 8 + 4, 1, "1"); // "blk.1.attn_q..." is still unique.
  GgufFile file;
  std::string error;
  EXPECT_TRUE(opens(file, bytes, error)) << error;
  GgufWriter dup;
  dup.addTensor("a", GgmlType::F32, {8}, pattern(32, 1));
  dup.addTensor("a", GgmlType::F32, {8}, pattern(32, 2));
  EXPECT_EQ(openError(dup.bytes()), "tensor 'a' appears twice");
  GgufWriter longName;
  longName.addTensor(std::string(64, 'n'), GgmlType::F32, {8}, pattern(32, 1));
  EXPECT_EQ(openError(longName.bytes()),
            "tensor '" + std::string(64, 'n') +
                "': name is 64 bytes, longer than ggml's limit of 63");
  GgufWriter empty;
  empty.addTensor("", GgmlType::F32, {8}, pattern(32, 1));
  EXPECT_EQ(openError(empty.bytes()), "tensor info 0 has an empty name");
}

TEST(GgufTest, ZeroSizedTensorsAndNoTensors) {
  GgufWriter w;
  w.addTensor("a", GgmlType::F32, {8}, pattern(32, 1));
  w.addTensor("empty", GgmlType::Q4_0, {0, 4}, "");
  w.addTensor("b", GgmlType::F32, {8}, pattern(32, 2));
  std::string bytes = w.bytes();
  GgufFile file;
  std::string error;
  ASSERT_TRUE(opens(file, bytes, error)) << error;
  EXPECT_EQ(file.tensors()[1].elements, 0);
  EXPECT_EQ(file.tensors()[1].begin, file.tensors()[1].end);

  GgufWriter keysOnly;
  keysOnly.setString("general.architecture", "llama");
  bytes = keysOnly.bytes();
  ASSERT_TRUE(opens(file, bytes, error)) << error;
  EXPECT_TRUE(file.tensors().empty());
}

} // namespace

//===----------------------------------------------------------------------===//
// The model's config.json from the metadata (GgufConfig)
//===----------------------------------------------------------------------===//

namespace {

GgufWriter llamaModel() {
  GgufWriter w;
  w.setString("general.architecture", "llama");
  w.setU32("llama.block_count", 2);
  w.setU32("llama.context_length", 128);
  w.setU32("llama.embedding_length", 64);
  w.setU32("llama.feed_forward_length", 96);
  w.setU32("llama.attention.head_count", 4);
  w.setU32("llama.attention.head_count_kv", 2);
  w.setU32("llama.rope.dimension_count", 16);
  w.setF32("llama.rope.freq_base", 500000.0f);
  w.setF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.setU32("tokenizer.ggml.bos_token_id", 1);
  w.addTensor("token_embd.weight", GgmlType::F32, {64, 10}, pattern(2560, 1));
  return w;
}

std::string configError(const GgufWriter &w) {
  std::string bytes = w.bytes(), json, error;
  GgufFile file;
  EXPECT_TRUE(opens(file, bytes, error)) << error;
  EXPECT_FALSE(ggufConfigJson(file, json, error)) << json;
  EXPECT_EQ(error.rfind(kPrefix, 0), 0u) << error;
  return error.substr(std::min(error.size(), kPrefix.size()));
}

nlohmann::json config(const GgufWriter &w) {
  std::string bytes = w.bytes(), json, error;
  GgufFile file;
  EXPECT_TRUE(opens(file, bytes, error)) << error;
  EXPECT_TRUE(ggufConfigJson(file, json, error)) << error;
  return nlohmann::json::parse(json);
}

TEST(GgufConfigTest, MetadataBecomesTheFamilysKeys) {
  nlohmann::json c = config(llamaModel());
  EXPECT_EQ(c["model_type"], "llama");
  EXPECT_EQ(c["num_hidden_layers"], 2);
  EXPECT_EQ(c["hidden_size"], 64);
  EXPECT_EQ(c["intermediate_size"], 96);
  EXPECT_EQ(c["num_attention_heads"], 4);
  EXPECT_EQ(c["num_key_value_heads"], 2);
  EXPECT_EQ(c["max_position_embeddings"], 128);
  EXPECT_EQ(c["rope_theta"], 500000.0);
  EXPECT_EQ(c["rms_norm_eps"], double(1e-5f));
  EXPECT_EQ(c["vocab_size"], 10); // The embedding's rows.
  EXPECT_EQ(c["tie_word_embeddings"], true); // No output.weight.
  EXPECT_EQ(c["bos_token_id"], 1);
  EXPECT_FALSE(c.contains("head_dim")); // hidden / heads.
  EXPECT_FALSE(c.contains("rope_scaling"));

  GgufWriter w = llamaModel();
  w.setU32("llama.vocab_size", 12);
  w.setString("llama.rope.scaling.type", "yarn");
  w.setF32("llama.rope.scaling.factor", 4.0f);
  w.setU32("llama.rope.scaling.original_context_length", 32);
  w.addTensor("output.weight", GgmlType::F32, {64, 10}, pattern(2560, 2));
  c = config(w);
  EXPECT_EQ(c["vocab_size"], 12);
  EXPECT_EQ(c["tie_word_embeddings"], false);
  EXPECT_EQ(c["rope_scaling"]["rope_type"], "yarn");
  EXPECT_EQ(c["rope_scaling"]["factor"], 4.0);
  EXPECT_EQ(c["rope_scaling"]["original_max_position_embeddings"], 32);
}

// The weight format a file runs in by default: its matrices' most common
// type by elements, mapped to the nearest format (1-D tensors do not vote).
TEST(GgufConfigTest, WeightFormatFollowsTheMatrices) {
  auto format = [](GgmlType bulk, GgmlType other, std::string *head = nullptr,
                   const char *arch = "llama") {
    GgufWriter w;
    w.setString("general.architecture", arch);
    const GgmlTypeTraits &b = ggmlTypeTraits(bulk), &o = ggmlTypeTraits(other);
    // 2 x 256 elements of `bulk`, 1 x 256 of `other`, and a 1-D tensor of
    // `other` bigger than both.
    w.addTensor("blk.0.ffn_up.weight", bulk, {256, 2},
                std::string(2 * 256 / b.blockSize * b.typeSize, '\0'));
    w.addTensor("output.weight", other, {256, 1},
                std::string(256 / o.blockSize * o.typeSize, '\0'));
    w.addTensor("blk.0.attn_norm.weight", other, {4096},
                std::string(4096 / o.blockSize * o.typeSize, '\0'));
    w.addTensor("token_embd.weight", bulk, {256, 1},
                std::string(256 / b.blockSize * b.typeSize, '\0'));
    std::string bytes = w.bytes(), error;
    GgufFile file;
    EXPECT_TRUE(opens(file, bytes, error)) << error;
    if (head)
      *head = ggufHeadFormat(file);
    return std::string(ggufWeightFormat(file));
  };
  // The output's own format when it differs (a Q4_0 file's Q6_K output):
  // llama.cpp runs it in Q6_K, Attn in q8_0 rather than q4_0. A tied
  // model's head is its token embedding (GPT-2's and Gemma's always are).
  std::string head;
  EXPECT_EQ(format(GgmlType::Q4_0, GgmlType::Q6_K, &head), "q4_0");
  EXPECT_EQ(head, "q8_0");
  format(GgmlType::Q4_0, GgmlType::Q4_0, &head);
  EXPECT_EQ(head, "");
  format(GgmlType::Q4_0, GgmlType::F16, &head);
  EXPECT_EQ(head, "f32");
  format(GgmlType::Q4_0, GgmlType::Q6_K, &head, "gpt2");
  EXPECT_EQ(head, "");
  EXPECT_EQ(format(GgmlType::F32, GgmlType::Q4_0), "f32");
  EXPECT_EQ(format(GgmlType::F16, GgmlType::BF16), "f32");
  EXPECT_EQ(format(GgmlType::BF16, GgmlType::F32), "bf16");
  EXPECT_EQ(format(GgmlType::Q8_0, GgmlType::Q4_0), "q8_0");
  EXPECT_EQ(format(GgmlType::Q4_0, GgmlType::Q6_K), "q4_0");
  for (GgmlType other : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                         GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1})
    EXPECT_EQ(format(other, GgmlType::Q4_0), "q8_0")
        << ggmlTypeTraits(other).name;
}

/// rope_freqs.weight as convert_hf_to_gguf computes it (in f32, as torch
/// does) for Llama 3's rope scaling.
std::string llama3Factors(int64_t headDim, float theta, float factor,
                          float low, float high, float original) {
  std::string data;
  for (int64_t i = 0; i < headDim; i += 2) {
    float frequency = 1.0f / std::pow(theta, float(i) / float(headDim));
    float wavelength = float(2 * M_PI) / frequency;
    float f = wavelength < original / high ? 1.0f
              : wavelength > original / low ? factor
                                            : 0.0f;
    if (f == 0.0f) {
      float smooth = (original / wavelength - low) / (high - low);
      f = 1.0f / ((1.0f - smooth) / factor + smooth);
    }
    data.append(reinterpret_cast<const char *>(&f), 4);
  }
  return data;
}

// Llama 3.1's rope scaling comes back from its factors exactly; factors no
// Llama 3 scaling gives, or a second scaling, are refused by name.
TEST(GgufConfigTest, Llama3RopeScalingFromItsFactors) {
  auto llama31 = [] {
    GgufWriter w = llamaModel();
    w.setU32("llama.embedding_length", 4096);
    w.setU32("llama.attention.head_count", 32);
    w.setU32("llama.attention.head_count_kv", 8);
    w.setU32("llama.rope.dimension_count", 128);
    w.setU32("llama.context_length", 131072);
    w.setF32("llama.rope.freq_base", 500000.0f);
    return w;
  };
  GgufWriter w = llama31();
  w.addTensor("rope_freqs.weight", GgmlType::F32, {64},
              llama3Factors(128, 500000.0f, 8, 1, 4, 8192));
  nlohmann::json c = config(w);
  EXPECT_EQ(c["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(c["rope_scaling"]["factor"], 8.0);
  EXPECT_EQ(c["rope_scaling"]["low_freq_factor"], 1.0);
  EXPECT_EQ(c["rope_scaling"]["high_freq_factor"], 4.0);
  EXPECT_EQ(c["rope_scaling"]["original_max_position_embeddings"], 8192);

  // All ones: no scaling.
  w = llama31();
  w.addTensor("rope_freqs.weight", GgmlType::F32, {64},
              llama3Factors(128, 500000.0f, 1, 1, 4, 8192));
  EXPECT_FALSE(config(w).contains("rope_scaling"));

  // One factor moved off the curve.
  std::string bad = llama3Factors(128, 500000.0f, 8, 1, 4, 8192);
  float off = 3.0f;
  std::memcpy(&bad[4 * 40], &off, 4);
  w = llama31();
  w.addTensor("rope_freqs.weight", GgmlType::F32, {64}, bad);
  EXPECT_EQ(configError(w),
            "tensor 'rope_freqs.weight': its factors are not those of Llama "
            "3's rope scaling (no factor, band and original length give them "
            "back)");
  w = llama31();
  w.addTensor("rope_freqs.weight", GgmlType::F32, {32},
              llama3Factors(64, 500000.0f, 8, 1, 4, 8192));
  EXPECT_EQ(configError(w), "tensor 'rope_freqs.weight': expected 64 f32 "
                            "factors, one per rotary pair");
  w = llama31();
  w.addTensor("rope_freqs.weight", GgmlType::F32, {64},
              llama3Factors(128, 500000.0f, 8, 1, 4, 8192));
  w.setString("llama.rope.scaling.type", "linear");
  w.setF32("llama.rope.scaling.factor", 2.0f);
  EXPECT_EQ(configError(w), "metadata key 'llama.rope.scaling.type': 'linear' "
                            "and tensor 'rope_freqs.weight' both scale RoPE");
}

/// The keys every LLaMA-style converter writes, for `arch`: 64 wide, 4
/// heads of 16 (2 KV heads), `layers` layers.
GgufWriter familyModel(const std::string &arch, uint32_t layers) {
  GgufWriter w;
  w.setString("general.architecture", arch);
  w.setU32(arch + ".block_count", layers);
  w.setU32(arch + ".context_length", 64);
  w.setU32(arch + ".embedding_length", 64);
  w.setU32(arch + ".feed_forward_length", 96);
  w.setU32(arch + ".attention.head_count", 4);
  w.setU32(arch + ".attention.head_count_kv", 2);
  w.setF32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.addTensor("token_embd.weight", GgmlType::F32, {64, 10}, pattern(2560, 1));
  return w;
}

std::string f32Bytes(const std::vector<float> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * 4);
}

// Gemma 2 and 3: what llama.cpp's loader decides by itself (the query
// scale by layer count, the window pattern, Gemma 2's softcaps) becomes
// the config's keys; Phi-3's partial rotary and longrope tensors likewise.
TEST(GgufConfigTest, GemmaAndPhi3AsLlamaCppReadsThem) {
  GgufWriter w = familyModel("gemma2", 46); // Gemma 2 27B's layer count.
  w.setU32("gemma2.attention.key_length", 32);
  w.setU32("gemma2.attention.value_length", 32);
  w.addTensor("output.weight", GgmlType::F32, {64, 10}, pattern(2560, 2));
  nlohmann::json c = config(w);
  EXPECT_EQ(c["model_type"], "gemma2");
  EXPECT_EQ(c["head_dim"], 32);
  EXPECT_EQ(c["query_pre_attn_scalar"], 16); // 64 / 4, not head_dim.
  EXPECT_EQ(c["attn_logit_softcapping"], 50.0);
  EXPECT_EQ(c["final_logit_softcapping"], 30.0);
  EXPECT_EQ(c["sliding_window"], 4096);
  EXPECT_EQ(c["layer_types"][0], "sliding_attention");
  EXPECT_EQ(c["layer_types"][1], "full_attention");
  EXPECT_EQ(c["hidden_activation"], "gelu_pytorch_tanh");
  EXPECT_EQ(c["tie_word_embeddings"], true); // llama.cpp ignores output.
  w.setF32("gemma2.rope.freq_base_swa", 20000.0f);
  EXPECT_EQ(configError(w), "metadata key 'gemma2.rope.freq_base_swa': "
                            "20000 differs from the global base 10000, "
                            "which Gemma 2 does not do");

  w = familyModel("gemma3", 7);
  c = config(w); // No window key: every layer global.
  EXPECT_EQ(c["model_type"], "gemma3_text");
  EXPECT_EQ(c["head_dim"], 16);
  EXPECT_EQ(c["query_pre_attn_scalar"], 16);
  EXPECT_EQ(c["layer_types"], nlohmann::json(std::vector<std::string>(
                                  7, "full_attention")));
  EXPECT_TRUE(c["final_logit_softcapping"].is_null());
  EXPECT_EQ(c["rope_local_base_freq"], 10000.0);
  w.setU32("gemma3.attention.sliding_window", 512);
  w.setF32("gemma3.rope.freq_base_swa", 5000.0f);
  w.setF32("gemma3.final_logit_softcapping", 30.0f);
  c = config(w); // Every sixth layer global.
  EXPECT_EQ(c["sliding_window"], 512);
  EXPECT_EQ(c["layer_types"][4], "sliding_attention");
  EXPECT_EQ(c["layer_types"][5], "full_attention");
  EXPECT_EQ(c["layer_types"][6], "sliding_attention");
  EXPECT_EQ(c["rope_local_base_freq"], 5000.0);
  EXPECT_EQ(c["final_logit_softcapping"], 30.0);
  w.setU32("gemma3.attention.sliding_window_pattern", 2);
  EXPECT_EQ(config(w)["layer_types"][1], "full_attention");

  w = familyModel("phi3", 2);
  w.setU32("phi3.rope.dimension_count", 12);
  w.setU32("phi3.rope.scaling.original_context_length", 16);
  w.setU32("phi3.attention.sliding_window", 0);
  c = config(w);
  EXPECT_EQ(c["model_type"], "phi3");
  EXPECT_EQ(c["partial_rotary_factor"], 0.75);
  EXPECT_TRUE(c["sliding_window"].is_null());
  EXPECT_FALSE(c.contains("rope_scaling"));
  w.addTensor("rope_factors_long.weight", GgmlType::F32, {6},
              f32Bytes({1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(configError(w), "tensor 'rope_factors_short.weight' is missing "
                            "(rope_factors_long.weight is there: longrope "
                            "needs both)");
  w.addTensor("rope_factors_short.weight", GgmlType::F32, {6},
              f32Bytes({1, 1, 1, 1, 1, 1.5}));
  // Without the key llama.cpp scales attention by 1, not by longrope's
  // own sqrt(1 + ln 4 / ln 16) (which the converter writes).
  c = config(w);
  EXPECT_EQ(c["rope_scaling"]["type"], "longrope");
  EXPECT_EQ(c["rope_scaling"]["long_factor"][5], 20.0);
  EXPECT_EQ(c["rope_scaling"]["short_factor"][5], 1.5);
  EXPECT_EQ(c["original_max_position_embeddings"], 16);
  EXPECT_EQ(c["rope_scaling"]["attention_factor"], 1.0);
  w.setF32("phi3.rope.scaling.attn_factor", float(std::sqrt(1.5)));
  EXPECT_FALSE(config(w)["rope_scaling"].contains("attention_factor"));
  w.setF32("phi3.rope.scaling.attn_factor", 1.25f);
  EXPECT_EQ(config(w)["rope_scaling"]["attention_factor"], 1.25);
  w.setU32("phi3.rope.dimension_count", 16);
  EXPECT_EQ(configError(w), "tensor 'rope_factors_long.weight': expected 8 "
                            "f32 factors, one per rotary pair");
}

TEST(GgufConfigTest, RefusesWhatItCannotHonourByName) {
  GgufWriter w = llamaModel();
  w.setString("general.architecture", "mamba");
  EXPECT_EQ(configError(w), "architecture 'mamba' is not supported "
                            "(supported: llama, qwen2, qwen3, qwen3moe, "
                            "gpt2, gemma, gemma2, gemma3, phi3)");
  w = llamaModel();
  w.setString("llama.block_count", "two");
  EXPECT_EQ(configError(w), "metadata key 'llama.block_count': expected an "
                            "unsigned integer, found string");
  w = llamaModel();
  w.setU32("llama.rope.dimension_count", 8);
  EXPECT_EQ(configError(w), "metadata key 'llama.rope.dimension_count': "
                            "rotary embeddings on 8 of the 16 features of a "
                            "head are not supported for llama");
  w = llamaModel();
  w.setU32("llama.attention.value_length", 32);
  EXPECT_EQ(configError(w), "metadata key 'llama.attention.value_length': "
                            "32 differs from the key length 16 (Attn's "
                            "attention has one head size)");
  w = llamaModel();
  float half = 0.5f;
  w.addTensor("rope_freqs.weight", GgmlType::F32, {1},
              std::string(reinterpret_cast<const char *>(&half), 4));
  w.setU32("llama.rope.dimension_count", 2);
  w.setU32("llama.attention.key_length", 2);
  EXPECT_EQ(configError(w), "tensor 'rope_freqs.weight': factor 0 is 0.5; "
                            "Llama 3's are 1 or more");
  w = llamaModel();
  w.setString("llama.rope.scaling.type", "longrope");
  EXPECT_EQ(configError(w), "metadata key 'llama.rope.scaling.type': "
                            "'longrope' is not supported (supported: none, "
                            "linear, yarn)");
  // A llama file with experts is Mixtral's: it must say how many a token
  // uses; shared experts (DeepSeek, Qwen2-MoE) are not read yet.
  w = llamaModel();
  w.setU32("llama.expert_count", 8);
  EXPECT_EQ(configError(w),
            "metadata key 'llama.expert_used_count' is missing");
  w.setU32("llama.expert_used_count", 2);
  w.setU32("llama.expert_shared_count", 1);
  EXPECT_EQ(configError(w),
            "metadata key 'llama.expert_shared_count' is not read from GGUF "
            "files yet");

  GgufWriter noEmbedding;
  noEmbedding.setString("general.architecture", "qwen3");
  for (const char *key :
       {"qwen3.block_count", "qwen3.embedding_length",
        "qwen3.feed_forward_length", "qwen3.attention.head_count",
        "qwen3.context_length"})
    noEmbedding.setU32(key, 4);
  noEmbedding.setF32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  EXPECT_EQ(configError(noEmbedding),
            "tensor 'token_embd.weight' is missing");
}

} // namespace

//===----------------------------------------------------------------------===//
// The tokenizer and chat template of a GGUF file (GgufTokenizer)
//===----------------------------------------------------------------------===//

namespace {

/// A byte-level BPE vocabulary as the converter writes one: "a", "b", the
/// merge "a b", a control and a user-defined token.
GgufWriter tokenizerFile() {
  GgufWriter w;
  w.setString("general.architecture", "qwen3");
  w.setString("tokenizer.ggml.model", "gpt2");
  w.setString("tokenizer.ggml.pre", "qwen2");
  w.setStringArray("tokenizer.ggml.tokens",
                   {"a", "b", "ab", "<|im_end|>", "<tool>"});
  w.setI32Array("tokenizer.ggml.token_type", {1, 1, 1, 3, 4});
  w.setStringArray("tokenizer.ggml.merges", {"a b"});
  w.setU32("tokenizer.ggml.eos_token_id", 3);
  w.setString("tokenizer.chat_template",
              "{% for m in messages %}{{ m.content }}{{ eos_token }}"
              "{% endfor %}");
  return w;
}

TEST(GgufTokenizerTest, VocabularyMergesAndAddedTokens) {
  TempDir dir;
  std::string path = dir.file("t.gguf"), error;
  ASSERT_TRUE(tokenizerFile().write(path, error)) << error;
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::loadDirectory(path, error);
  ASSERT_TRUE(tokenizer) << error;
  std::vector<int32_t> ids;
  ASSERT_TRUE(tokenizer->encode("abab<|im_end|>a<tool>b",
                                Tokenizer::AddSpecial | Tokenizer::ParseSpecial,
                                ids, error))
      << error;
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 2, 3, 0, 4, 1}));
  // A control token is special (dropped by skip-special decoding), a
  // user-defined one is not.
  std::string text;
  ASSERT_TRUE(tokenizer->decode(ids.data(), ids.size(), true, text, error));
  EXPECT_EQ(text, "ababa<tool>b");
  EXPECT_EQ(tokenizer->eosIds(), std::vector<int32_t>{3});

  // add_bos_token puts the BOS id first, as the converter records it.
  GgufWriter withBos = tokenizerFile();
  withBos.setU32("tokenizer.ggml.bos_token_id", 4);
  withBos.setBool("tokenizer.ggml.add_bos_token", true);
  std::string bosPath = dir.file("bos.gguf");
  ASSERT_TRUE(withBos.write(bosPath, error)) << error;
  std::unique_ptr<Tokenizer> bosTokenizer =
      Tokenizer::loadDirectory(bosPath, error);
  ASSERT_TRUE(bosTokenizer) << error;
  EXPECT_EQ(bosTokenizer->prefixIds(), std::vector<int32_t>{4});

  std::unique_ptr<chat::ChatTemplate> chat = chat::ChatTemplate::loadDirectory(path, error);
  ASSERT_TRUE(chat) << error;
  std::string rendered;
  ASSERT_TRUE(chat->apply({{"user", std::string("ab")}}, false, rendered, error))
      << error;
  EXPECT_EQ(rendered, "ab<|im_end|>");
}

/// A SentencePiece vocabulary as the converter writes one: pieces, scores,
/// types (unknown, control, byte, normal), no merges.
GgufWriter sentencePieceFile() {
  GgufWriter w;
  w.setString("general.architecture", "llama");
  w.setString("tokenizer.ggml.model", "llama");
  w.setString("tokenizer.ggml.pre", "default");
  w.setStringArray("tokenizer.ggml.tokens",
                   {"<unk>", "<s>", "</s>", "<0x21>", "\u2581", "a", "b",
                    "ab", "\u2581ab", "ba"});
  w.setF32Array("tokenizer.ggml.scores",
                {0, 0, 0, 0, -10, -11, -12, -2, -3, -1});
  w.setI32Array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1, 1, 1});
  w.setU32("tokenizer.ggml.bos_token_id", 1);
  w.setU32("tokenizer.ggml.eos_token_id", 2);
  w.setU32("tokenizer.ggml.unknown_token_id", 0);
  return w;
}

TEST(GgufTokenizerTest, SentencePieceMergesByScore) {
  TempDir dir;
  std::string path = dir.file("spm.gguf"), error;
  auto encode = [&](const GgufWriter &w, const std::string &text) {
    std::vector<int32_t> ids;
    EXPECT_TRUE(w.write(path, error)) << error;
    std::unique_ptr<Tokenizer> tokenizer = Tokenizer::loadDirectory(path, error);
    EXPECT_TRUE(tokenizer) << error;
    if (tokenizer)
      EXPECT_TRUE(tokenizer->encode(text, Tokenizer::AddSpecial, ids, error))
          << error;
    return ids;
  };
  // "▁aba!": "ba" scores above "ab" (ids say the opposite), so it merges
  // first and "▁ab" never forms; "!" falls back to its byte piece; BOS is
  // added by default.
  GgufWriter w = sentencePieceFile();
  EXPECT_EQ(encode(w, "aba!"), (std::vector<int32_t>{1, 4, 5, 9, 3}));
  EXPECT_EQ(encode(w, "ab ab"), (std::vector<int32_t>{1, 8, 8}));
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::loadDirectory(path, error);
  ASSERT_TRUE(tokenizer) << error;
  std::vector<int32_t> ids = {1, 8, 5, 3, 2};
  std::string text;
  ASSERT_TRUE(tokenizer->decode(ids.data(), ids.size(), true, text, error));
  EXPECT_EQ(text, "aba!");
  // Without the prefix space (Gemma) and with EOS added.
  w.setBool("tokenizer.ggml.add_space_prefix", false);
  w.setBool("tokenizer.ggml.add_bos_token", false);
  w.setBool("tokenizer.ggml.add_eos_token", true);
  EXPECT_EQ(encode(w, "ab ab"), (std::vector<int32_t>{7, 8, 2}));
}

TEST(GgufTokenizerTest, RefusesWhatItCannotRead) {
  TempDir dir;
  std::string path = dir.file("t.gguf"), error;
  auto loadError = [&](const GgufWriter &w) {
    EXPECT_TRUE(w.write(path, error)) << error;
    EXPECT_EQ(Tokenizer::loadDirectory(path, error), nullptr);
    std::string prefix = "GGUF file '" + path + "': ";
    EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
    return error.substr(std::min(error.size(), prefix.size()));
  };
  GgufWriter w = tokenizerFile();
  w.setString("tokenizer.ggml.model", "t5");
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.model': 't5' is not "
                          "supported (supported: gpt2, byte-level BPE; "
                          "llama, SentencePiece BPE)");
  w = tokenizerFile();
  w.setString("tokenizer.ggml.pre", "deepseek-v3");
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.pre': 'deepseek-v3' "
                          "is not supported (supported: default, gpt-2, "
                          "llama-bpe, qwen2, gpt-4o)");
  w = tokenizerFile();
  w.setI32Array("tokenizer.ggml.token_type", {1, 1});
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.token_type' has 2 "
                          "entries for 5 tokens");
  w = tokenizerFile();
  w.setBool("tokenizer.ggml.add_bos_token", true);
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.add_bos_token' is "
                          "true but there is no tokenizer.ggml.bos_token_id");
  w = tokenizerFile();
  w.setU32("tokenizer.ggml.eos_token_id", 9);
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.eos_token_id': 9 is "
                          "not a token id (there are 5 tokens)");
  w = tokenizerFile();
  w.setStringArray("tokenizer.ggml.tokens", {"a", "b", "a", "<|im_end|>", "x"});
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.tokens': token 2 'a' "
                          "appears twice");
  w = sentencePieceFile();
  w.setF32Array("tokenizer.ggml.scores", {0, 0});
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.scores' has 2 "
                          "entries for 10 tokens");
  w = sentencePieceFile();
  w.setF32Array("tokenizer.ggml.scores",
                {0, 0, 0, 0, -10, -11, -12, NAN, -3, -1});
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.scores': the score "
                          "of token 7 is not finite");
  w = sentencePieceFile();
  w.setI32Array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1, 1, 7});
  EXPECT_EQ(loadError(w), "metadata key 'tokenizer.ggml.token_type': token 9 "
                          "has type 7 (llama.cpp's types are 1 to 6)");
  // llama.cpp adds a SentencePiece BOS unless the file says otherwise.
  GgufWriter noBos;
  noBos.setString("tokenizer.ggml.model", "llama");
  noBos.setStringArray("tokenizer.ggml.tokens", {"a"});
  noBos.setF32Array("tokenizer.ggml.scores", {0});
  EXPECT_EQ(loadError(noBos), "the tokenizer adds bos by default (there is "
                              "no tokenizer.ggml.add_bos_token) but there is "
                              "no tokenizer.ggml.bos_token_id");
  GgufWriter noTemplate;
  noTemplate.setStringArray("tokenizer.ggml.tokens", {"a"});
  ASSERT_TRUE(noTemplate.write(path, error)) << error;
  EXPECT_EQ(chat::ChatTemplate::loadDirectory(path, error), nullptr);
  EXPECT_EQ(error, "GGUF file '" + path +
                       "': metadata key 'tokenizer.chat_template' is missing");
}

} // namespace
