//===- ModelSuite.cpp - whole models: compile, prefill, decode -------------===//
//
// LLaMA-110M, GPT-2 small, Qwen3-0.6B and Gemma-3-1B (or --models; random
// weights in their real formats, written once under --model-dir) compiled
// in-process as attn-compile would, then run through the runtime: prefill
// of a 128-token prompt and 128 decode steps after it, in tokens/s.
// Prefill is compute-bound: its FLOPs are set beside the FMA peak. Decode
// streams every projection weight once per token, plus the KV cache: those
// bytes are set beside the read bandwidth.
//
//===----------------------------------------------------------------------===//

#include "Suites.h"

#include "ModelWriter.h"
#include "attn/Compiler/ModelCompiler.h"
#include "attn/Compiler/ModelConfig.h"
#include "attn/Compiler/ModelLayout.h"
#include "attn/Target/NativeCodegen.h"
#include "attnrt/attnrt.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <cstdio>
#include <random>

using namespace attn::bench;

namespace {

constexpr int64_t kPrompt = 128, kGenerated = 128, kMaxSeq = 256;

/// Work per token of `config`, from its weights.
struct ModelCosts {
  /// Elements of the attention and MLP projections a token runs (of a
  /// mixture of experts, its top_k experts).
  double layerWeights = 0;
  /// Elements of the output projection (the last prompt token, every
  /// decode step).
  double outputWeights = 0;
  /// FLOPs per (query, cached key) pair over all layers and heads.
  double attentionPerKey = 0;
};

ModelCosts modelCosts(const mlir::attn::ModelConfig &config) {
  ModelCosts costs;
  bool sawTokenEmbedding = false;
  for (const mlir::attn::WeightSpec &weight : mlir::attn::modelWeights(config)) {
    double elements = static_cast<double>(weight.numElements());
    switch (weight.role) {
    case mlir::attn::WeightRole::Attention:
    case mlir::attn::WeightRole::Mlp:
      costs.layerWeights += elements;
      break;
    case mlir::attn::WeightRole::Output:
      costs.outputWeights = elements;
      break;
    case mlir::attn::WeightRole::Embedding:
      if (!sawTokenEmbedding && config.tieEmbeddings)
        costs.outputWeights = elements;
      sawTokenEmbedding = true;
      break;
    case mlir::attn::WeightRole::Norm:
      break;
    }
  }
  costs.layerWeights -= static_cast<double>(config.idleExpertParameters());
  costs.attentionPerKey = 4.0 * config.numLayers * config.numHeads * config.headDim;
  return costs;
}

/// Writes the model of a --models entry under `dir` unless it is there
/// already.
bool ensureModel(const std::string &preset, const std::string &dir) {
  if (llvm::sys::fs::exists(dir + "/model.safetensors") &&
      llvm::sys::fs::exists(dir + "/config.json"))
    return true;
  attn::modelgen::ModelSpec spec;
  std::string error;
  if (!modelEntrySpec(preset, spec, error)) {
    std::printf("model suite: %s\n", error.c_str());
    return false;
  }
  if (!attn::modelgen::writeModel(spec, dir, error)) {
    std::printf("model suite: cannot write %s to %s: %s\n", preset.c_str(),
                dir.c_str(), error.c_str());
    return false;
  }
  return true;
}

struct ModelRun {
  double compileSeconds = 0;
  std::map<int, double> prefillSeconds, decodeSeconds;
};

} // namespace

namespace {

/// One compiled and loaded copy of a model in one weight format.
struct LoadedModel {
  mlir::attn::WeightFormat format;
  double compileSeconds = 0;
  attnrt_model *model = nullptr;
  attnrt_session *session = nullptr;
  Range prefill, decode; // tokens/s over the rounds
  /// A server's slots: kBatch sessions decoded together.
  std::vector<attnrt_session *> group;
  Range batchDecode; // aggregate tokens/s of the group
  ~LoadedModel() {
    for (attnrt_session *s : group)
      attnrt_session_free(s);
    attnrt_session_free(session);
    attnrt_model_free(model);
  }
};

constexpr int64_t kBatch = 8, kBatchSteps = 64;

} // namespace

bool attn::bench::modelEntrySpec(const std::string &entry,
                                 attn::modelgen::ModelSpec &spec,
                                 std::string &error) {
  size_t colon = entry.find(':');
  std::string name = entry.substr(0, colon);
  if (!attn::modelgen::presetSpec(name, spec)) {
    error = "'" + name + "' is not an attn-make-model preset (attn-make-model "
            "--list-presets names them)";
    return false;
  }
  if (colon == std::string::npos)
    return true;
  std::string count = entry.substr(colon + 1);
  char *end = nullptr;
  long long layers = std::strtoll(count.c_str(), &end, 10);
  if (count.empty() || *end != '\0' || layers < 1 || layers > spec.layers) {
    error = "'" + entry + "': the layers after ':' must be 1 to " +
            std::to_string(spec.layers) + " (" + name + "'s)";
    return false;
  }
  spec.layers = layers;
  return true;
}

void attn::bench::runModelSuite(const MachineFigures &machine,
                                const BenchOptions &options) {
  constexpr int kRounds = 3;
  std::printf("\n## Models: prefill of %lld tokens, then %lld decode steps, per "
              "weight format (tokens/s, median (range) of %d interleaved rounds; "
              "prefill %% of the format's product peak: fp32 FMA, int8 dot for "
              "q8_0/q4_0, AMX bf16 tiles for bf16 where the CPU has them; decode GB/s of the weights (the KV cache it reads, mostly from cache, not counted) "
              "and %% of the read bandwidth, of the medians)\n",
              (long long)kPrompt, (long long)kGenerated, kRounds);
  std::printf("| model | weights | compile (s) | threads | prefill tok/s | %% peak | "
              "decode tok/s | GB/s | %% bandwidth |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  // The batched decode of each model and format, printed after the table.
  struct BatchFigure {
    mlir::attn::WeightFormat format;
    double single;
    std::string batched;
    double ratio;
  };
  struct BatchRow {
    const char *preset;
    int threads;
    std::vector<BatchFigure> figures;
  };
  std::vector<BatchRow> batchRows;
  for (const std::string &name : options.models) {
    const char *preset = name.c_str();
    std::string dir = options.modelDir + "/" + name;
    if (!ensureModel(preset, dir))
      continue;
    llvm::Expected<mlir::attn::ModelConfig> config =
        mlir::attn::loadModelConfig(dir);
    if (!config) {
      std::printf("model suite: %s\n", llvm::toString(config.takeError()).c_str());
      continue;
    }

    // Compile each format as attn-compile does, for this host, and load it.
    std::vector<std::unique_ptr<LoadedModel>> models;
    char error[512];
    std::vector<mlir::attn::WeightFormat> formats = {mlir::attn::WeightFormat::F32,
                                                     mlir::attn::WeightFormat::BF16};
    if (mlir::attn::hostHasInt8Dot())
      formats.insert(formats.end(),
                     {mlir::attn::WeightFormat::Q8_0, mlir::attn::WeightFormat::Q4_0});
    if (!options.formats.empty())
      llvm::erase_if(formats, [&](mlir::attn::WeightFormat format) {
        return !llvm::is_contained(options.formats,
                                   mlir::attn::weightFormatName(format));
      });
    for (mlir::attn::WeightFormat format : formats) {
      auto loaded = std::make_unique<LoadedModel>();
      loaded->format = format;
      mlir::attn::ModelCompileOptions compileOptions;
      compileOptions.maxSeq = kMaxSeq;
      compileOptions.weightFormat = format;
      compileOptions.output =
          dir + "/libmodel-" + mlir::attn::weightFormatName(format) + ".so";
      // The host's vector width, int8 dot product, AMX and vdpbf16ps, as
      // attn-compile chooses them (ModelCompileOptions' defaults).
      auto start = std::chrono::steady_clock::now();
      if (llvm::Error failure =
              mlir::attn::compileModel(*config, compileOptions, llvm::nulls())) {
        std::printf("model suite: %s: %s\n", preset,
                    llvm::toString(std::move(failure)).c_str());
        continue;
      }
      loaded->compileSeconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      loaded->model = attnrt_model_load(compileOptions.output.c_str(),
                                        (dir + "/model.safetensors").c_str(), error,
                                        sizeof error);
      if (loaded->model)
        loaded->session = attnrt_session_create(loaded->model, error, sizeof error);
      if (!loaded->session) {
        std::printf("model suite: %s: %s\n", preset, error);
        continue;
      }
      models.push_back(std::move(loaded));
    }
    if (models.empty())
      continue;
    int64_t vocab = attnrt_model_vocab_size(models.front()->model);
    std::vector<int32_t> prompt(kPrompt);
    std::mt19937 rng(7);
    for (int32_t &token : prompt)
      token = static_cast<int32_t>(rng() % vocab);
    std::vector<float> logits(vocab);
    bool failed = false;
    auto check = [&](int status) {
      if (status != ATTNRT_OK && !failed) {
        std::printf("model suite: %s: %s\n", preset, error);
        failed = true;
      }
    };

    ModelCosts costs = modelCosts(*config);
    // Prefill: every prompt token through the layers, attention over the
    // causal prefix, and the output projection of the last token.
    double prefillFlops =
        2.0 * costs.layerWeights * kPrompt + 2.0 * costs.outputWeights +
        costs.attentionPerKey * (kPrompt * (kPrompt + 1) / 2.0);
    // Decode: each step streams every projection weight (in the format's
    // bytes). Its reads of the f32 cache (128-256 positions: 9-19 MB for
    // LLaMA-110M) are not counted: they follow the cache's writes closely
    // and come mostly from the caches, and counting them as memory traffic
    // put q4_0 decode at 130% of the read bandwidth.
    auto decodeBytes = [&](mlir::attn::WeightFormat format) {
      return mlir::attn::bytesPerWeight(format) *
             (costs.layerWeights + costs.outputWeights) * kGenerated;
    };

    for (int threads : options.threads) {
      for (auto &m : models) {
        m->prefill.values.clear();
        m->decode.values.clear();
        if (!attnrt_model_set_num_threads(m->model, threads))
          setThreads(threads);
      }
      // The formats alternate round by round, so the machine's drift moves
      // both alike.
      for (int round = 0; round < kRounds && !failed; ++round) {
        for (auto &m : models) {
          double prefill = medianSeconds(std::max(1, options.repeats / kRounds), [&] {
            attnrt_session_reset(m->session);
            check(attnrt_prefill(m->session, prompt.data(), kPrompt, logits.data(), 0,
                                 error, sizeof error));
          });
          m->prefill.values.push_back(kPrompt / prefill);
          // Time the decode steps alone, after a fresh prefill.
          attnrt_session_reset(m->session);
          check(attnrt_prefill(m->session, prompt.data(), kPrompt, logits.data(), 0,
                               error, sizeof error));
          int32_t token = prompt.back();
          auto begin = std::chrono::steady_clock::now();
          for (int64_t step = 0; step < kGenerated; ++step) {
            check(attnrt_decode(m->session, token, logits.data(), error, sizeof error));
            token = static_cast<int32_t>(
                std::max_element(logits.begin(), logits.end()) - logits.begin());
          }
          double decode =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
                  .count();
          m->decode.values.push_back(kGenerated / decode);

          // The same model decoding kBatch sequences at once (each after the
          // same prompt), as attn-serve's slots do.
          if (m->group.empty()) {
            m->group.resize(kBatch);
            check(attnrt_session_create_group(m->model, kBatch, m->group.data(), error,
                                              sizeof error));
          }
          std::vector<int32_t> tokens(kBatch, prompt.back());
          std::vector<float> rows(kBatch * vocab);
          for (attnrt_session *s : m->group) {
            attnrt_session_reset(s);
            check(attnrt_prefill(s, prompt.data(), kPrompt, logits.data(), 0, error,
                                 sizeof error));
          }
          begin = std::chrono::steady_clock::now();
          for (int64_t step = 0; step < kBatchSteps && !failed; ++step) {
            check(attnrt_decode_batch(m->group.data(), tokens.data(), kBatch, rows.data(),
                                      error, sizeof error));
            for (int64_t i = 0; i < kBatch; ++i)
              tokens[i] = static_cast<int32_t>(
                  std::max_element(rows.begin() + i * vocab, rows.begin() + (i + 1) * vocab) -
                  (rows.begin() + i * vocab));
          }
          double batched =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
          m->batchDecode.values.push_back(kBatch * kBatchSteps / batched);
        }
      }
      if (failed)
        break;
      batchRows.push_back({preset, threads, {}});
      for (auto &m : models) {
        batchRows.back().figures.push_back(
            {m->format, m->decode.median(), m->batchDecode.format(0),
             m->batchDecode.median() / m->decode.median()});
        double prefillRate = m->prefill.median(), decodeRate = m->decode.median();
        double gbps = decodeBytes(m->format) / (kGenerated / decodeRate) / 1e9;
        // bf16 prefill runs on AMX tiles where the host has them, through
        // vdpbf16ps where that is fast (the compile options above).
        double amxPeak = machine.amxBf16Peak.count(threads) ? machine.amxBf16Peak.at(threads) : 0;
        bool bf16 = m->format == mlir::attn::WeightFormat::BF16;
        double peak = mlir::attn::isQuantized(m->format) ? machine.int8Peak.at(threads)
                      : bf16 && amxPeak > 0                 ? amxPeak
                      : bf16 && mlir::attn::CpuTarget::host().fastBf16Dot()
                          ? machine.bf16DotPeak.at(threads)
                          : machine.fmaPeak.at(threads);
        std::printf("| %s | %s | %.1f | %d | %s | %.0f%% | %s | %.1f | %.0f%% |\n", preset,
                    mlir::attn::weightFormatName(m->format), m->compileSeconds, threads,
                    m->prefill.format(0).c_str(),
                    100 * prefillFlops * prefillRate / kPrompt / peak,
                    m->decode.format(1).c_str(), gbps,
                    100 * gbps * 1e9 / machine.bandwidth.at(threads));
      }
    }
  }
  std::printf("\n## Batched decode: %lld sequences decoding together (attnrt_decode_batch "
              "over a session group, after a %lld-token prompt each, %lld steps), aggregate "
              "tokens/s (median (range), rounds interleaved with the single decode above)\n",
              (long long)kBatch, (long long)kPrompt, (long long)kBatchSteps);
  std::printf("| model | weights | threads | 1 sequence tok/s | %lld sequences tok/s | ratio |\n",
              (long long)kBatch);
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const BatchRow &row : batchRows)
    for (const BatchFigure &f : row.figures)
      std::printf("| %s | %s | %d | %.1f | %s | %.2fx |\n", row.preset,
                  mlir::attn::weightFormatName(f.format), row.threads, f.single,
                  f.batched.c_str(), f.ratio);
}