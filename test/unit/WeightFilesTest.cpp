//===- WeightFilesTest.cpp - sharded weights and model folders ------------===//
//
// attnrt_model_load with a shard index (model.safetensors.index.json) or a
// folder, against the mock model: the same logits as one file, every index
// error on one line naming the index and the shard, warnings for tensors the
// index does not name, and each shard unmapped once nothing reads it.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

using namespace attnrt::test;

namespace {

const char *shard1 = "model-00001-of-00002.safetensors";
const char *shard2 = "model-00002-of-00002.safetensors";

class ShardedWeightsTest : public ::testing::Test {
protected:
  /// Writes the mock's tensors as two shards (wte and mix.weight, then
  /// mix.bias and head.bias) and their index.
  void writeShards(const std::vector<Tensor> &tensors) {
    writeFile(dir.file(shard1), safetensorsBytes({tensors[0], tensors[1]}));
    writeFile(dir.file(shard2), safetensorsBytes({tensors[2], tensors[3]}));
    writeFile(index, indexJson({{tensors[0].name, shard1},
                                {tensors[1].name, shard1},
                                {tensors[2].name, shard2},
                                {tensors[3].name, shard2}}));
  }

  /// All-logits prefill of the prompt on a fresh session.
  std::vector<float> run(attnrt_model *model) {
    char error[256] = "";
    SessionPtr session(attnrt_session_create(model, error, sizeof(error)));
    EXPECT_NE(session, nullptr) << error;
    std::vector<float> logits(prompt.size() * mockVocab);
    EXPECT_EQ(attnrt_prefill(session.get(), prompt.data(),
                             static_cast<int64_t>(prompt.size()), logits.data(),
                             1, error, sizeof(error)),
              ATTNRT_OK)
        << error;
    return logits;
  }

  /// The load error of `weights`, checked to be one line.
  std::string loadError(const std::string &weights) {
    std::string error;
    EXPECT_EQ(loadModel(mockLibrary(), weights, error), nullptr);
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    return error;
  }

  std::string indexWhere() const { return "index '" + index + "': "; }

  TempDir dir;
  std::string index = dir.file("model.safetensors.index.json");
  MockWeights weights = mockWeights();
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
};

TEST_F(ShardedWeightsTest, ShardsEqualOneFile) {
  std::string single = dir.file("single.safetensors");
  writeFile(single, safetensorsBytes(mockTensors(weights)));
  writeShards(mockTensors(weights));
  std::string error;
  ModelPtr one = loadModel(mockLibrary(), single, error);
  ASSERT_NE(one, nullptr) << error;
  // The index itself, and the folder that holds it (no model.safetensors).
  for (const std::string &path : {index, dir.name()}) {
    ModelPtr sharded = loadModel(mockLibrary(), path, error);
    ASSERT_NE(sharded, nullptr) << path << ": " << error;
    EXPECT_STREQ(attnrt_model_warnings(sharded.get()), "");
    EXPECT_EQ(run(sharded.get()), run(one.get())) << path;
  }
}

TEST_F(ShardedWeightsTest, FolderPrefersTheSingleFile) {
  // Both forms: model.safetensors wins, as in transformers.
  MockWeights other = mockWeights(2);
  writeShards(mockTensors(other));
  writeFile(dir.file("model.safetensors"),
            safetensorsBytes(mockTensors(weights)));
  std::string error;
  ModelPtr model = loadModel(mockLibrary(), dir.name(), error);
  ASSERT_NE(model, nullptr) << error;
  std::vector<float> logits = run(model.get());
  std::vector<float> expected = mockReference(weights, prompt);
  ASSERT_EQ(logits.size(), expected.size());
  for (size_t i = 0; i < logits.size(); ++i)
    ASSERT_NEAR(logits[i], expected[i], 1e-5) << i;
}

TEST_F(ShardedWeightsTest, FolderWithNeither) {
  EXPECT_EQ(loadError(dir.name()), "weights folder '" + dir.name() +
                                       "': holds neither model.safetensors nor "
                                       "model.safetensors.index.json");
}

TEST_F(ShardedWeightsTest, MissingShard) {
  writeShards(mockTensors(weights));
  ASSERT_EQ(unlink(dir.file(shard2).c_str()), 0);
  // Named by the first tensor (in name order) the index puts there.
  EXPECT_EQ(loadError(index),
            indexWhere() + "shard '" + shard2 +
                "' (named by tensor 'h.0.mix.bias'): cannot open: No such "
                "file or directory");
  EXPECT_EQ(loadError(dir.name()),
            indexWhere() + "shard '" + shard2 +
                "' (named by tensor 'h.0.mix.bias'): cannot open: No such "
                "file or directory");
}

TEST_F(ShardedWeightsTest, BrokenShardNamesIndexAndShard) {
  writeShards(mockTensors(weights));
  writeFile(dir.file(shard1), "short");
  EXPECT_EQ(loadError(index),
            indexWhere() + "shard '" + shard1 +
                "' (named by tensor 'h.0.mix.weight'): is 5 bytes, too short "
                "for the 8-byte header length of a safetensors file");
}

TEST_F(ShardedWeightsTest, TensorNotInItsShard) {
  std::vector<Tensor> tensors = mockTensors(weights);
  writeShards(tensors);
  // head.bias is in shard 2; the index says shard 1.
  writeFile(index, indexJson({{"wte.weight", shard1},
                              {"h.0.mix.weight", shard1},
                              {"h.0.mix.bias", shard2},
                              {"head.bias", shard1}}));
  EXPECT_EQ(loadError(index), indexWhere() +
                                  "tensor 'head.bias' is mapped to shard '" +
                                  shard1 + "', which does not hold it");
}

TEST_F(ShardedWeightsTest, TensorInTwoShards) {
  std::vector<Tensor> tensors = mockTensors(weights);
  writeShards(tensors);
  writeFile(dir.file(shard2),
            safetensorsBytes({tensors[2], tensors[3], tensors[0]}));
  EXPECT_EQ(loadError(index), indexWhere() +
                                  "tensor 'wte.weight' is in both shard '" +
                                  shard1 + "' and shard '" + shard2 + "'");
}

TEST_F(ShardedWeightsTest, ShardNamesArePlainFileNames) {
  writeShards(mockTensors(weights));
  for (const char *name : {"../model.safetensors", "sub/model.safetensors",
                           "/etc/passwd", "..", ".", ""}) {
    writeFile(index, indexJson({{"head.bias", name}}));
    EXPECT_EQ(loadError(index),
              indexWhere() + "tensor 'head.bias' names shard '" + name +
                  "', which is not a plain file name in the index's folder");
  }
  // An escaped NUL would cut the name short at open().
  writeFile(index, "{\"weight_map\": {\"head.bias\": \"a\\u0000b\"}}");
  EXPECT_EQ(loadError(index),
            indexWhere() + "tensor 'head.bias' names shard 'a\\x00b', which "
                           "is not a plain file name in the index's folder");
}

TEST_F(ShardedWeightsTest, MalformedIndex) {
  writeShards(mockTensors(weights));
  writeFile(index, "{\"weight_map\": {\"a\": \"b\",}}");
  std::string error = loadError(index);
  EXPECT_EQ(error.rfind(indexWhere() + "not valid JSON: at byte ", 0), 0u)
      << error;
  writeFile(index, "");
  error = loadError(index);
  EXPECT_EQ(error.rfind(indexWhere() + "not valid JSON: ", 0), 0u) << error;
  writeFile(index, "[]");
  EXPECT_EQ(loadError(index), indexWhere() + "is an array, not a JSON object");
  writeFile(index, "{\"metadata\": {}}");
  EXPECT_EQ(loadError(index), indexWhere() + "has no \"weight_map\"");
  writeFile(index, "{\"weight_map\": [\"a\"]}");
  EXPECT_EQ(loadError(index),
            indexWhere() + "\"weight_map\" is an array, not an object");
  writeFile(index, "{\"weight_map\": {\"head.bias\": 2}}");
  EXPECT_EQ(loadError(index), indexWhere() +
                                  "\"weight_map\" entry 'head.bias' is a "
                                  "number, not a shard file name");
  ASSERT_EQ(unlink(index.c_str()), 0);
  EXPECT_EQ(loadError(index),
            indexWhere() + "cannot open: No such file or directory");
}

TEST_F(ShardedWeightsTest, ErrorsNameTheShardOrTheIndex) {
  std::vector<Tensor> tensors = mockTensors(weights);
  tensors[3] = f32Tensor("head.bias", {41}, std::vector<float>(41, 0.0f));
  writeShards(tensors);
  EXPECT_EQ(loadError(index), "weights file '" + dir.file(shard2) +
                                  "': tensor 'head.bias' has shape [41], the "
                                  "model expects [40]");
  // A weight no shard has: the set (the index) is what lacks it.
  writeFile(index, indexJson({{"wte.weight", shard1},
                              {"h.0.mix.weight", shard1},
                              {"h.0.mix.bias", shard2}}));
  writeFile(dir.file(shard2), safetensorsBytes({tensors[2]}));
  EXPECT_EQ(loadError(index),
            indexWhere() + "missing tensor 'head.bias' required by the model "
                           "(tried 'head.bias', 'transformer.head.bias', "
                           "'model.head.bias')");
}

TEST_F(ShardedWeightsTest, UnindexedAndUnusedTensorsWarn) {
  std::vector<Tensor> tensors = mockTensors(weights);
  Tensor stray = f32Tensor("h.0.stray", {2}, {1, 2});
  Tensor unused = f32Tensor("h.0.unused", {2}, {3, 4});
  writeFile(dir.file(shard1),
            safetensorsBytes({tensors[0], tensors[1], stray}));
  writeFile(dir.file(shard2),
            safetensorsBytes({tensors[2], tensors[3], unused}));
  writeFile(index, indexJson({{"wte.weight", shard1},
                              {"h.0.mix.weight", shard1},
                              {"h.0.mix.bias", shard2},
                              {"head.bias", shard2},
                              {"h.0.unused", shard2}}));
  std::string error;
  ModelPtr model = loadModel(mockLibrary(), index, error);
  ASSERT_NE(model, nullptr) << error;
  EXPECT_EQ(std::string(attnrt_model_warnings(model.get())),
            indexWhere() + "tensor 'h.0.stray' of shard '" + shard1 +
                "' is not in the weight_map; ignored\n" + "weights file '" +
                dir.file(shard2) +
                "': tensor 'h.0.unused' is not used by the model; ignored\n");
  // A tensor the index does not name is not part of the model: a weight
  // stored only that way is missing.
  writeFile(index, indexJson({{"wte.weight", shard1},
                              {"h.0.mix.weight", shard1},
                              {"h.0.mix.bias", shard2}}));
  EXPECT_EQ(loadError(index),
            indexWhere() + "missing tensor 'head.bias' required by the model "
                           "(tried 'head.bias', 'transformer.head.bias', "
                           "'model.head.bias')");
}

/// Whether /proc/self/maps has a mapping of `path`.
bool isMapped(const std::string &path) {
  std::string maps = readFile("/proc/self/maps");
  return maps.find(" " + path + "\n") != std::string::npos;
}

TEST_F(ShardedWeightsTest, EachShardIsUnmappedOnceNothingReadsIt) {
  // Shard 1 holds F32 weights the model reads in place; shard 2 holds BF16
  // weights widened to copies, so nothing reads its mapping after load.
  std::vector<Tensor> f32 = mockTensors(weights);
  std::vector<Tensor> bf16 = mockTensorsAs(weights, "BF16");
  writeShards({f32[0], f32[1], bf16[2], bf16[3]});
  std::string error;
  {
    ModelPtr model = loadModel(mockLibrary(), index, error);
    ASSERT_NE(model, nullptr) << error;
    EXPECT_TRUE(isMapped(dir.file(shard1)));
    EXPECT_FALSE(isMapped(dir.file(shard2)));
    std::vector<float> logits = run(model.get());
    std::vector<float> expected = mockReference(weights, prompt);
    for (size_t i = 0; i < logits.size(); ++i)
      ASSERT_NEAR(logits[i], expected[i], 1e-5) << i;
  }
  EXPECT_FALSE(isMapped(dir.file(shard1)));
  // All converted: no shard stays mapped.
  writeShards(mockTensorsAs(weights, "F16"));
  ModelPtr model = loadModel(mockLibrary(), index, error);
  ASSERT_NE(model, nullptr) << error;
  EXPECT_FALSE(isMapped(dir.file(shard1)));
  EXPECT_FALSE(isMapped(dir.file(shard2)));
}

} // namespace
