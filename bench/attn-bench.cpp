//===- attn-bench.cpp - Attn's kernels and models beside the machine's limits ===//
//
//   attn-bench [--only machine,matmul,attention,models,tokenizer]
//              [--repeats N] [--threads 1,2] [--model-dir DIR]
//              [--models llama-110m,gpt2-small,qwen3-0.6b,gemma3-1b]
//              [--test-data DIR]
//
// Every figure is the median of --repeats runs after a warm-up, measured in
// one run beside the machine's own FMA peak and read bandwidth (measured
// right before each suite, each the best of 5 and the best seen so far in
// the run, since noise only lowers them), so that the ratios hold on a
// shared, noisy machine. The machine table comes last. OpenBLAS (libopenblas, loaded with
// dlopen after clearing OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which would
// otherwise pin it to 256-bit kernels) runs the same matrix shapes.
//
//===----------------------------------------------------------------------===//

#include "MachineLimits.h"
#include "Suites.h"

#include "ModelWriter.h"

#include "attn/Compiler/ModelLayout.h"
#include "attn/Support/Version.h"
#include "attn/Target/NativeCodegen.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace attn::bench;

namespace {

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ','))
    if (!part.empty())
      parts.push_back(part);
  return parts;
}

constexpr const char *kUsage =
    "usage: attn-bench [--only machine,matmul,attention,models,tokenizer] "
    "[--repeats N] [--threads 1,2] [--model-dir DIR] [--models PRESET[:LAYERS],...] "
    "[--formats f32,bf16,q8_0,q4_0] [--test-data DIR]\n";

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr, "attn-bench: error: %s\n%s", message, kUsage);
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  // OpenBLAS reads these when it is loaded; clear them before dlopen.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");

  BenchOptions options;
  std::vector<std::string> only = {"machine", "matmul", "attention", "models",
                                   "tokenizer"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage((arg + " expects a value").c_str());
      return argv[++i];
    };
    if (arg == "--only")
      only = split(value());
    else if (arg == "--repeats")
      options.repeats = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--threads") {
      options.threads.clear();
      for (const std::string &t : split(value()))
        options.threads.push_back(std::max(1, std::atoi(t.c_str())));
    } else if (arg == "--model-dir")
      options.modelDir = value();
    else if (arg == "--models") {
      options.models = split(value());
      attn::modelgen::ModelSpec spec;
      std::string error;
      for (const std::string &name : options.models)
        if (!attn::bench::modelEntrySpec(name, spec, error))
          usage(("--models: " + error).c_str());
    } else if (arg == "--formats") {
      options.formats = split(value());
      for (const std::string &name : options.formats)
        if (!mlir::attn::parseWeightFormat(name))
          usage(("--formats: '" + name + "' is not f32, bf16, q8_0 or q4_0").c_str());
    }
    else if (arg == "--test-data")
      options.testData = value();
    else if (arg == "--help") {
      std::printf("%s", kUsage);
      return 0;
    } else if (arg == "--version") {
      std::printf("%s", attnVersionText("attn-bench").c_str());
      return 0;
    } else
      usage(("unknown argument '" + arg + "'").c_str());
  }
  auto wants = [&](const char *suite) {
    for (const std::string &name : only)
      if (name == suite)
        return true;
    return false;
  };

  std::printf("attn-bench: %s, repeats %d (median after warm-up)\n",
              hostHasAvx512() ? "AVX-512" : "AVX2", options.repeats);
  // The limits are measured again right before each suite and the best seen
  // so far is kept: a neighbour's burst during one measurement then cannot
  // make a ratio exceed what the machine did in this run.
  MachineFigures machine;
  auto measureLimits = [&] {
    for (int threads : options.threads) {
      double peak = measureFmaPeak(threads);
      machine.fmaPeak[threads] = std::max(machine.fmaPeak[threads], peak);
      machine.int8Peak[threads] =
          std::max(machine.int8Peak[threads], measureInt8DotPeak(threads));
      machine.bf16DotPeak[threads] =
          std::max(machine.bf16DotPeak[threads], measureBf16DotPeak(threads));
      if (mlir::attn::hostHasAmxBf16())
        machine.amxBf16Peak[threads] =
            std::max(machine.amxBf16Peak[threads], measureAmxBf16Peak(threads));
      for (size_t bytes : kBandwidthProbeSizes) {
        double bandwidth = measureReadBandwidth(threads, bytes);
        double &best = machine.bandwidthAt[bytes][threads];
        best = std::max(best, bandwidth);
        machine.bandwidth[threads] = std::max(machine.bandwidth[threads], bandwidth);
      }
    }
  };
  if (wants("matmul")) {
    measureLimits();
    runMatmulSuite(machine, options);
  }
  if (wants("attention")) {
    measureLimits();
    runAttentionSuite(machine, options);
  }
  if (wants("models")) {
    measureLimits();
    runModelSuite(machine, options);
  }
  if (wants("tokenizer"))
    runTokenizerSuite(options);
  if (wants("machine")) {
    measureLimits();
    printMachine(machine, options);
  }
  return 0;
}
