//===- GgufModelWriterTest.cpp - attn-make-model --gguf -------------------===//
//
// The GGUF file of a model holds what llama.cpp's converter would write of
// its folder: the architecture's metadata from config.json, every tensor
// under its llama.cpp name, the llama architecture's q/k rows interleaved
// per head (and only there), 1-D tensors in F32, matrices in the chosen
// type by llama-quantize's rules, values equal to the folder's (F32) or its
// quantization. Read back with the runtime's GgufFile; independently
// checked once against gguf-py's reader and dequantizers (see the commit).
//
//===----------------------------------------------------------------------===//

#include "GgmlTypes.h"
#include "Gguf.h"
#include "GgufModelWriter.h"
#include "GgufNames.h"
#include "Half.h"
#include "ModelWriter.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

using namespace attn::modelgen;
using attnrt::GgmlType;
using attnrt::GgufFile;
using attnrt::GgufTensorInfo;

namespace {

struct TempDir : attn::testing::TempDir {
  TempDir() : attn::testing::TempDir("attn-make-model-gguf") {}
};

ModelSpec llama8() {
  ModelSpec spec;
  EXPECT_TRUE(presetSpec("tiny-llama", spec));
  spec.layers = 8;
  spec.hidden = 256;
  spec.ffn = 512;
  spec.heads = 4;
  spec.kvHeads = 2;
  return spec;
}

/// The planned tensors' values by HF name.
std::map<std::string, std::vector<float>> folderValues(const ModelSpec &spec) {
  std::vector<TensorDesc> tensors;
  std::string error;
  EXPECT_TRUE(planTensors(spec, tensors, error)) << error;
  std::map<std::string, std::vector<float>> values;
  for (const TensorDesc &t : tensors)
    values[t.name] = tensorValues(spec, t);
  return values;
}

std::vector<float> dequantized(const GgufFile &file, const GgufTensorInfo &t) {
  std::vector<float> out(static_cast<size_t>(t.elements));
  attnrt::dequantizeGgmlRow(t.type, file.tensorData(t), out.data(),
                            t.elements);
  return out;
}

uint64_t unsignedKey(const GgufFile &file, const std::string &key) {
  uint64_t value = 0;
  std::string error;
  EXPECT_TRUE(file.getUnsigned(key, value, error)) << error;
  return value;
}

TEST(GgufModelWriterTest, LlamaF32HoldsTheFolderWithQueryKeyRowsInterleaved) {
  TempDir dir;
  ModelSpec spec = llama8();
  std::string path = dir.sub("m.gguf"), error;
  ASSERT_TRUE(writeGgufModel(spec, path, "f32", error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(path, error)) << error;

  std::string_view arch;
  ASSERT_TRUE(file.getString("general.architecture", arch, error));
  EXPECT_EQ(arch, "llama");
  EXPECT_EQ(unsignedKey(file, "general.file_type"), 0u);
  EXPECT_EQ(unsignedKey(file, "llama.block_count"), 8u);
  EXPECT_EQ(unsignedKey(file, "llama.embedding_length"), 256u);
  EXPECT_EQ(unsignedKey(file, "llama.feed_forward_length"), 512u);
  EXPECT_EQ(unsignedKey(file, "llama.attention.head_count"), 4u);
  EXPECT_EQ(unsignedKey(file, "llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(unsignedKey(file, "llama.rope.dimension_count"), 64u);
  EXPECT_EQ(unsignedKey(file, "llama.context_length"),
            uint64_t(spec.maxPositions));
  EXPECT_EQ(unsignedKey(file, "llama.vocab_size"), uint64_t(spec.vocab));
  EXPECT_EQ(file.findKey("general.quantization_version"), nullptr);
  double theta = 0, eps = 0;
  ASSERT_TRUE(file.getFloat("llama.rope.freq_base", theta, error));
  ASSERT_TRUE(file.getFloat("llama.attention.layer_norm_rms_epsilon", eps,
                            error));
  EXPECT_EQ(theta, spec.ropeTheta);
  EXPECT_EQ(float(eps), float(spec.normEps));

  std::map<std::string, std::vector<float>> folder = folderValues(spec);
  ASSERT_EQ(file.tensors().size(), folder.size());
  for (const GgufTensorInfo &t : file.tensors()) {
    std::string hf = attnrt::hfTensorName("llama", t.name);
    ASSERT_TRUE(folder.count(hf)) << t.name << " -> " << hf;
    EXPECT_EQ(t.type, GgmlType::F32) << t.name;
    const std::vector<float> &expected = folder[hf];
    std::vector<float> got = dequantized(file, t);
    ASSERT_EQ(got.size(), expected.size()) << t.name;
    bool permuted = t.name.find(".attn_q.weight") != std::string::npos ||
                    t.name.find(".attn_k.weight") != std::string::npos;
    int64_t rowLength = t.dims[0], rows = t.elements / rowLength;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t at = permuted ? attnrt::ggufPermutedRow(r, 64) : r;
      for (int64_t c = 0; c < rowLength; ++c)
        ASSERT_EQ(got[at * rowLength + c], expected[r * rowLength + c])
            << t.name << " row " << r << " column " << c;
    }
    // The shape is HF's, reversed.
    std::vector<int64_t> dims(t.dims.rbegin(), t.dims.rend());
    EXPECT_EQ(t.shape(), dims);
  }
  // The interleaving: GGUF row 1 of head 0 is HF row 32 (the second half's
  // first), and row 2 is HF row 1.
  const GgufTensorInfo &q = file.tensors()[file.find("blk.0.attn_q.weight")];
  std::vector<float> got = dequantized(file, q);
  const std::vector<float> &hf = folder["model.layers.0.self_attn.q_proj.weight"];
  EXPECT_EQ(got[1 * 256], hf[32 * 256]);
  EXPECT_EQ(got[2 * 256], hf[1 * 256]);
}

TEST(GgufModelWriterTest, Qwen3KeepsRowsAndWritesItsKeys) {
  TempDir dir;
  ModelSpec spec;
  ASSERT_TRUE(presetSpec("tiny-qwen3", spec));
  std::string path = dir.sub("q.gguf"), error;
  ASSERT_TRUE(writeGgufModel(spec, path, "f32", error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(path, error)) << error;
  std::string_view arch;
  ASSERT_TRUE(file.getString("general.architecture", arch, error));
  EXPECT_EQ(arch, "qwen3");
  // head_dim is written in qwen3 configs: key and value lengths say it.
  EXPECT_GT(unsignedKey(file, "qwen3.attention.key_length"), 0u);
  EXPECT_EQ(file.findKey("qwen3.rope.dimension_count"), nullptr);
  std::map<std::string, std::vector<float>> folder = folderValues(spec);
  EXPECT_GE(file.find("blk.0.attn_q_norm.weight"), 0);
  for (const GgufTensorInfo &t : file.tensors())
    EXPECT_EQ(dequantized(file, t), folder[attnrt::hfTensorName("qwen3", t.name)])
        << t.name;
}

TEST(GgufModelWriterTest, QuantizedTypesFollowLlamaQuantize) {
  TempDir dir;
  ModelSpec spec = llama8();
  std::map<std::string, std::vector<float>> folder = folderValues(spec);
  std::string error;
  struct Case {
    const char *type;
    GgmlType matrices;
    double tolerance; // Largest |error| / max |value| of any tensor.
  };
  for (const Case &c : {Case{"q8_0", GgmlType::Q8_0, 0.01},
                        Case{"q4_0", GgmlType::Q4_0, 0.15},
                        Case{"q6_k", GgmlType::Q6_K, 0.03},
                        Case{"q4_k_m", GgmlType::Q4_K, 0.1},
                        Case{"bf16", GgmlType::BF16, 0.01}}) {
    std::string path = dir.sub(std::string(c.type) + ".gguf");
    ASSERT_TRUE(writeGgufModel(spec, path, c.type, error)) << error;
    GgufFile file;
    ASSERT_TRUE(file.open(path, error)) << error;
    for (const GgufTensorInfo &t : file.tensors()) {
      GgmlType expected = t.dims.size() == 1 ? GgmlType::F32 : c.matrices;
      // Below Q8_0 the output is Q6_K (llama-quantize's rule; the
      // converter writes Q8_0 and BF16 as they are).
      if (t.name == "output.weight" && c.matrices != GgmlType::Q8_0 &&
          c.matrices != GgmlType::BF16)
        expected = GgmlType::Q6_K;
      if (std::string(c.type) == "q4_k_m") {
        // In layers 0, 3, 6 and 7 of 8 (use_more_bits), attn_v and
        // ffn_down in Q6_K.
        int layer = -1;
        std::sscanf(t.name.c_str(), "blk.%d.", &layer);
        bool more = layer == 0 || layer == 3 || layer == 6 || layer == 7;
        if (more && (t.name.find("attn_v.weight") != std::string::npos ||
                     t.name.find("ffn_down.weight") != std::string::npos))
          expected = GgmlType::Q6_K;
      }
      EXPECT_EQ(t.type, expected) << c.type << " " << t.name;
      const std::vector<float> &ref = folder[attnrt::hfTensorName("llama", t.name)];
      std::vector<float> got = dequantized(file, t);
      bool permuted = t.name.find(".attn_q.weight") != std::string::npos ||
                      t.name.find(".attn_k.weight") != std::string::npos;
      double worst = 0, scale = 0;
      int64_t rowLength = t.dims[0];
      for (size_t i = 0; i < ref.size(); ++i) {
        int64_t r = int64_t(i) / rowLength, col = int64_t(i) % rowLength;
        int64_t at = permuted ? attnrt::ggufPermutedRow(r, 64) : r;
        worst = std::max(worst, double(std::fabs(got[at * rowLength + col] -
                                                 ref[i])));
        scale = std::max(scale, double(std::fabs(ref[i])));
      }
      EXPECT_LE(worst, c.tolerance * scale) << c.type << " " << t.name;
    }
  }
  // Rows of 64 are no whole K-quant super-block: llama-quantize's
  // fallbacks (q4_k -> q5_0, q6_k -> q8_0; rows of 172 -> f16).
  ModelSpec small;
  ASSERT_TRUE(presetSpec("tiny-llama", small));
  std::string path = dir.sub("small.gguf");
  ASSERT_TRUE(writeGgufModel(small, path, "q4_k_m", error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(path, error)) << error;
  auto typeOf = [&](const char *name) {
    return file.tensors()[file.find(name)].type;
  };
  EXPECT_EQ(typeOf("blk.0.attn_q.weight"), GgmlType::Q5_0);
  EXPECT_EQ(typeOf("output.weight"), GgmlType::Q8_0);
  EXPECT_EQ(typeOf("blk.0.ffn_down.weight"), GgmlType::F16);
}

// A folder converted by writeGgufFromFolder holds what the test model's own
// writer makes of it: the same metadata and every tensor's type, shape and
// bytes (F32 and quantized; tensors in the folder's order); a BF16 folder
// gives its values exactly.
TEST(GgufModelWriterTest, AFolderConvertsToTheSameFile) {
  TempDir dir;
  ModelSpec spec = llama8();
  std::string error;
  ASSERT_TRUE(writeModel(spec, dir.sub("folder"), error)) << error;
  for (const char *type : {"f32", "q4_k_m"}) {
    ASSERT_TRUE(writeGgufModel(spec, dir.sub("spec.gguf"), type, error))
        << error;
    ASSERT_TRUE(writeGgufFromFolder(dir.sub("folder"), dir.sub("folder.gguf"),
                                    type, error))
        << error;
    GgufFile a, b;
    ASSERT_TRUE(a.open(dir.sub("spec.gguf"), error)) << error;
    ASSERT_TRUE(b.open(dir.sub("folder.gguf"), error)) << error;
    ASSERT_EQ(a.metadata().size(), b.metadata().size());
    for (size_t i = 0; i < a.metadata().size(); ++i)
      EXPECT_EQ(a.metadata()[i].name, b.metadata()[i].name);
    ASSERT_EQ(a.tensors().size(), b.tensors().size());
    for (const GgufTensorInfo &t : a.tensors()) {
      int64_t at = b.find(t.name);
      ASSERT_GE(at, 0) << t.name;
      const GgufTensorInfo &u = b.tensors()[size_t(at)];
      EXPECT_EQ(t.type, u.type) << t.name;
      EXPECT_EQ(t.dims, u.dims) << t.name;
      ASSERT_EQ(t.end - t.begin, u.end - u.begin) << t.name;
      EXPECT_EQ(std::memcmp(a.tensorData(t), b.tensorData(u), t.end - t.begin),
                0)
          << type << " " << t.name;
    }
  }
  spec.dtype = DType::BF16;
  ASSERT_TRUE(writeModel(spec, dir.sub("bf16"), error)) << error;
  ASSERT_TRUE(writeGgufFromFolder(dir.sub("bf16"), dir.sub("bf16.gguf"), "f32",
                                  error))
      << error;
  GgufFile file;
  ASSERT_TRUE(file.open(dir.sub("bf16.gguf"), error)) << error;
  const GgufTensorInfo &w = file.tensors()[file.find("blk.3.ffn_up.weight")];
  std::vector<float> got = dequantized(file, w);
  std::vector<float> expected =
      folderValues(spec)["model.layers.3.mlp.up_proj.weight"];
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], attnrt::bfloat16ToFloat(attnrt::floatToBfloat16(expected[i])))
        << i;
  EXPECT_FALSE(writeGgufFromFolder(dir.sub("nothing"), dir.sub("n.gguf"), "f32",
                                   error));
  EXPECT_NE(error.find("nothing/config.json"), std::string::npos) << error;
}

// GPT-2 as convert_hf_to_gguf's GPT2Model writes it: Conv1D weights [in,
// out] transposed to [out, in], no causal-mask buffers, the output a copy of
// the token embedding, LayerNorm epsilon under its own key.
TEST(GgufModelWriterTest, Gpt2TransposesItsConv1DWeights) {
  TempDir dir;
  ModelSpec spec;
  ASSERT_TRUE(presetSpec("tiny-gpt2", spec));
  spec.extraBuffers = false;
  std::string path = dir.sub("g.gguf"), error;
  ASSERT_TRUE(writeGgufModel(spec, path, "f32", error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(path, error)) << error;
  std::map<std::string, std::vector<float>> folder = folderValues(spec);
  std::vector<TensorDesc> planned;
  ASSERT_TRUE(planTensors(spec, planned, error)) << error;
  std::string prefix = planned[0].name.rfind("transformer.", 0) == 0
                           ? "transformer."
                           : "";
  const GgufTensorInfo &qkv = file.tensors()[file.find("blk.1.attn_qkv.weight")];
  const std::vector<float> &conv = folder[prefix + "h.1.attn.c_attn.weight"];
  int64_t in = qkv.dims[0], out = qkv.dims[1];
  ASSERT_EQ(int64_t(conv.size()), in * out);
  EXPECT_EQ(out, 3 * in);
  std::vector<float> got = dequantized(file, qkv);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      ASSERT_EQ(got[o * in + i], conv[i * out + o]) << o << ", " << i;
  EXPECT_EQ(dequantized(file, file.tensors()[file.find("output.weight")]),
            folder[prefix + "wte.weight"]);
  EXPECT_GE(file.find("position_embd.weight"), 0);
  double epsilon = 0;
  EXPECT_TRUE(file.getFloat("gpt2.attention.layer_norm_epsilon", epsilon,
                            error))
      << error;
  for (const GgufTensorInfo &t : file.tensors())
    EXPECT_FALSE(attnrt::hfTensorName("gpt2", t.name).empty()) << t.name;
}

// Experts as the converter stacks them: one [experts, rows, columns]
// tensor per kind and layer, expert e's matrix the e-th slab; the router in
// F32 whatever the type; a layer with a dense MLP keeps ffn_gate/up/down.
TEST(GgufModelWriterTest, ExpertsAreStackedPerKind) {
  TempDir dir;
  ModelSpec spec;
  ASSERT_TRUE(presetSpec("tiny-qwen3-moe", spec));
  std::string path = dir.sub("m.gguf"), error;
  ASSERT_TRUE(writeGgufModel(spec, path, "q8_0", error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(path, error)) << error;
  EXPECT_EQ(unsignedKey(file, "qwen3moe.expert_count"), uint64_t(spec.experts));
  EXPECT_EQ(unsignedKey(file, "qwen3moe.expert_used_count"),
            uint64_t(spec.expertsPerToken));
  ASSERT_TRUE(writeGgufModel(spec, path, "f32", error)) << error;
  ASSERT_TRUE(file.open(path, error)) << error;
  std::map<std::string, std::vector<float>> folder = folderValues(spec);
  const GgufTensorInfo &up = file.tensors()[file.find("blk.2.ffn_up_exps.weight")];
  ASSERT_EQ(up.dims.size(), 3u);
  EXPECT_EQ(up.dims[2], spec.experts);
  std::vector<float> got = dequantized(file, up);
  int64_t slab = up.dims[0] * up.dims[1];
  for (int64_t e = 0; e < spec.experts; ++e) {
    std::string hf = attnrt::hfExpertName("qwen3moe", up.name, e);
    EXPECT_EQ(hf, "model.layers.2.mlp.experts." + std::to_string(e) +
                      ".up_proj.weight");
    std::vector<float> expert(got.begin() + e * slab,
                              got.begin() + (e + 1) * slab);
    EXPECT_EQ(expert, folder[hf]) << e;
  }
  // The preset's layer 1 is dense (mlp_only_layers).
  EXPECT_GE(file.find("blk.1.ffn_up.weight"), 0);
  EXPECT_LT(file.find("blk.1.ffn_gate_inp.weight"), 0);
  ASSERT_TRUE(writeGgufModel(spec, path, "q4_k_m", error)) << error;
  ASSERT_TRUE(file.open(path, error)) << error;
  EXPECT_EQ(file.tensors()[file.find("blk.0.ffn_gate_inp.weight")].type,
            GgmlType::F32);
  spec.normTopkProb = false;
  EXPECT_FALSE(writeGgufModel(spec, path, "f32", error));
  EXPECT_EQ(error, "cannot write qwen3_moe as GGUF: norm_topk_prob false "
                   "cannot be recorded (llama.cpp renormalizes the chosen "
                   "experts' weights)");
}

// Gemma 3 as Gemma3Model writes it: every *norm.weight as 1 + w (the q/k
// norms too), the sandwich norms under gguf-py's names, its local RoPE
// base, and the window pattern llama.cpp reads when it is not every sixth
// layer; Phi-3 with its projections fused and longrope as tensors.
TEST(GgufModelWriterTest, GemmaNormsShiftedAndPhi3Fused) {
  TempDir dir;
  ModelSpec gemma3;
  ASSERT_TRUE(presetSpec("tiny-gemma3", gemma3));
  gemma3.queryPreAttnScalar = 32; // llama.cpp's: head_dim.
  std::string error;
  ASSERT_TRUE(writeGgufModel(gemma3, dir.sub("g.gguf"), "f32", error)) << error;
  GgufFile file;
  ASSERT_TRUE(file.open(dir.sub("g.gguf"), error)) << error;
  std::map<std::string, std::vector<float>> folder = folderValues(gemma3);
  ASSERT_EQ(file.tensors().size(), folder.size());
  int shifted = 0;
  for (const GgufTensorInfo &t : file.tensors()) {
    std::string hf = attnrt::hfTensorName("gemma3", t.name);
    ASSERT_TRUE(folder.count(hf)) << t.name;
    std::vector<float> expected = folder[hf];
    if (attnrt::ggufShiftsNorm("gemma3", t.name)) {
      ++shifted;
      for (float &v : expected)
        v += 1.0f;
    }
    EXPECT_EQ(dequantized(file, t), expected) << t.name;
  }
  // Per layer attn, post-attention, pre- and post-feedforward, q and k;
  // and the final norm.
  EXPECT_EQ(shifted, 6 * 6 + 1);
  EXPECT_GE(file.find("blk.0.post_ffw_norm.weight"), 0);
  EXPECT_GE(file.find("blk.0.attn_k_norm.weight"), 0);
  EXPECT_EQ(unsignedKey(file, "gemma3.attention.sliding_window"), 8u);
  EXPECT_EQ(unsignedKey(file, "gemma3.attention.sliding_window_pattern"), 3u);
  double local = 0;
  ASSERT_TRUE(file.getFloat("gemma3.rope.freq_base_swa", local, error));
  EXPECT_EQ(local, 10000.0);

  ModelSpec phi3;
  ASSERT_TRUE(presetSpec("tiny-phi3-longrope", phi3));
  ASSERT_TRUE(writeGgufModel(phi3, dir.sub("p.gguf"), "f32", error)) << error;
  ASSERT_TRUE(file.open(dir.sub("p.gguf"), error)) << error;
  EXPECT_GE(file.find("blk.1.attn_qkv.weight"), 0);
  EXPECT_EQ(file.tensors()[file.find("blk.1.ffn_up.weight")].dims[1],
            2 * phi3.ffn); // gate and up.
  EXPECT_EQ(unsignedKey(file, "phi3.rope.dimension_count"), 12u);
  EXPECT_EQ(unsignedKey(file, "phi3.rope.scaling.original_context_length"),
            16u);
  double attention = 0;
  ASSERT_TRUE(file.getFloat("phi3.rope.scaling.attn_factor", attention, error));
  EXPECT_EQ(float(attention), float(std::sqrt(1.5)));
  const GgufTensorInfo &longFactors =
      file.tensors()[file.find("rope_factors_long.weight")];
  EXPECT_EQ(longFactors.dims, std::vector<int64_t>{6});
  EXPECT_EQ(dequantized(file, longFactors).back(), 20.0f);
}

// The token list is padded to the embedding's rows, as the converter pads
// it ("[PAD<id>]", unused): llama.cpp refuses a file where they differ.
TEST(GgufModelWriterTest, TokensPaddedToTheVocabulary) {
  TempDir dir;
  std::filesystem::create_directories(dir.sub("tok"));
  std::ofstream(dir.sub("tok/tokenizer.json")) << (
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
          "merges": ["a b"]},
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                            "trim_offsets": true, "use_regex": true},
          "added_tokens": [{"id": 3, "content": "<|end|>", "special": true}]})");
  ModelSpec spec;
  ASSERT_TRUE(presetSpec("tiny-qwen3", spec));
  std::string error;
  ASSERT_TRUE(writeGgufModel(spec, dir.sub("q.gguf"), "f32", error,
                             dir.sub("tok")))
      << error;
  GgufFile file;
  ASSERT_TRUE(file.open(dir.sub("q.gguf"), error)) << error;
  std::vector<std::string_view> tokens;
  ASSERT_TRUE(file.getStringArray("tokenizer.ggml.tokens", tokens, error))
      << error;
  ASSERT_EQ(int64_t(tokens.size()), spec.vocab);
  EXPECT_EQ(tokens[3], "<|end|>");
  EXPECT_EQ(tokens[4], "[PAD4]");
  EXPECT_EQ(file.tensors()[file.find("token_embd.weight")].dims[1],
            int64_t(tokens.size()));
}

TEST(GgufModelWriterTest, RefusesWhatAFileCannotSay) {
  TempDir dir;
  std::string error;
  ModelSpec neox;
  ASSERT_TRUE(presetSpec("tiny-gpt_neox", neox));
  EXPECT_FALSE(writeGgufModel(neox, dir.sub("g.gguf"), "f16", error));
  EXPECT_EQ(error, "cannot write gpt_neox as GGUF: only llama, mistral, "
                   "mixtral, qwen2, qwen3, qwen3_moe, gpt2, gemma, gemma2, "
                   "gemma3_text and phi3 models are written as GGUF so far");
  ModelSpec mistral;
  ASSERT_TRUE(presetSpec("tiny-mistral", mistral));
  EXPECT_FALSE(writeGgufModel(mistral, dir.sub("m.gguf"), "f16", error));
  EXPECT_EQ(error, "cannot write mistral as GGUF: GGUF files of the llama "
                   "architecture cannot record a sliding window");
  mistral.slidingWindow = 0;
  EXPECT_TRUE(writeGgufModel(mistral, dir.sub("m.gguf"), "f16", error))
      << error;
  ModelSpec scaled = llama8();
  ASSERT_TRUE(parseRopeScaling("dynamic:2", scaled.ropeScaling, error));
  EXPECT_FALSE(writeGgufModel(scaled, dir.sub("s.gguf"), "f16", error));
  EXPECT_EQ(error, "cannot write llama as GGUF: rope_scaling 'dynamic' is "
                   "not written to GGUF files of the llama architecture");
  ModelSpec gemma2;
  ASSERT_TRUE(presetSpec("tiny-gemma2", gemma2));
  gemma2.tieEmbeddings = true, gemma2.queryPreAttnScalar = 32;
  gemma2.attnSoftcap = 0; // null
  EXPECT_FALSE(writeGgufModel(gemma2, dir.sub("s.gguf"), "f16", error));
  EXPECT_EQ(error, "cannot write gemma2 as GGUF: the converter needs "
                   "attn_logit_softcapping and final_logit_softcapping (null "
                   "softcaps are not recorded: llama.cpp applies 50 and 30 "
                   "without them)");
  EXPECT_FALSE(writeGgufModel(llama8(), dir.sub("x.gguf"), "q3_k", error));
  EXPECT_EQ(error, "GGUF weight type 'q3_k' is not one of f32, f16, bf16, "
                   "q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m");
  EXPECT_FALSE(std::filesystem::exists(dir.sub("g.gguf")));
  EXPECT_FALSE(std::filesystem::exists(dir.sub("x.gguf")));
}

TEST(GgufModelWriterTest, CommandLine) {
  TempDir dir;
  std::string tool = std::string(ATTN_TOOLS_DIR) + "/attn-make-model";
  attn::testing::CommandResult r = attn::testing::run(
      tool + " --preset tiny-qwen2 --out " + dir.sub("f") + " --gguf " +
      dir.sub("f.gguf") + " --gguf-type q8_0");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("and " + dir.sub("f.gguf") + " (GGUF, q8_0)"),
            std::string::npos)
      << r.output;
  GgufFile file;
  std::string error;
  ASSERT_TRUE(file.open(dir.sub("f.gguf"), error)) << error;
  EXPECT_GE(file.find("blk.0.attn_q.bias"), 0);
  r = attn::testing::run(tool + " --preset tiny-gpt_neox --out " +
                         dir.sub("g") + " --gguf " + dir.sub("g.gguf"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.output.find("--gguf: cannot write gpt_neox as GGUF"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.sub("g"))) << "nothing written";
  r = attn::testing::run(tool + " --preset tiny-llama --out " + dir.sub("h") +
                         " --gguf-type q4_0");
  EXPECT_NE(r.output.find("--gguf-type needs --gguf FILE"), std::string::npos)
      << r.output;
}

} // namespace
