//===- ModelConfigFuzzer.cpp - attn-compile's config.json reader ----------===//
//
// The input is a config.json. mlir::attn::parseModelConfig must return a
// config or an error naming the file, never crash. An accepted config must
// be consistent (positive sizes within the limits, heads dividing as stated),
// every derived size must be computable without overflow, and the manifest
// attn-compile would embed for it must be accepted by the runtime's own
// manifest parser. Small accepted configs are built into attn IR, which must
// verify.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "Manifest.h"
#include "attn/Compiler/ModelBuilder.h"
#include "attn/Compiler/ModelCompiler.h"
#include "attn/Compiler/ModelConfig.h"
#include "attn/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::attn;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    registerAllDialects(registry);
    auto *c = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

void checkConfig(const ModelConfig &c) {
  for (int64_t v : {c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads,
                    c.numKvHeads, c.headDim, c.intermediateSize,
                    c.maxPositions})
    FUZZ_CHECK(v > 0, "a non-positive size was accepted");
  FUZZ_CHECK(c.numHeads % c.numKvHeads == 0, "kv heads %lld do not divide %lld",
             static_cast<long long>(c.numKvHeads),
             static_cast<long long>(c.numHeads));
  if (c.architecture == "gpt2")
    FUZZ_CHECK(c.headDim * c.numHeads == c.hiddenSize, "gpt2 head split");
  if (c.positions.kind == PositionKind::Rotary)
    FUZZ_CHECK(c.headDim % 2 == 0, "odd rotary head_dim");
  // Epsilon and theta become f32 attributes: they must stay positive and
  // finite as f32 (test/Compiler/config-f32-range.test).
  auto f32Positive = [](double v) {
    float f = static_cast<float>(v);
    return f > 0 && std::isfinite(f);
  };
  FUZZ_CHECK(f32Positive(c.norm.epsilon) && f32Positive(c.positions.theta),
             "epsilon %g / theta %g accepted outside the f32 range",
             c.norm.epsilon, c.positions.theta);

  // Every weight's element count and the KV cache size fit int64.
  int64_t total = 0;
  for (const mlir::attn::WeightSpec &w : modelWeights(c)) {
    int64_t elements = 1;
    for (int64_t dim : w.shape)
      FUZZ_CHECK(dim > 0 && !__builtin_mul_overflow(elements, dim, &elements),
                 "weight '%s' overflows", w.name.c_str());
    FUZZ_CHECK(!__builtin_add_overflow(total, elements, &total) &&
                   total <= INT64_MAX / 4,
               "total weights overflow");
  }
  int64_t kvAll = 0;
  FUZZ_CHECK(!__builtin_mul_overflow(c.numLayers * 2, c.maxPositions, &kvAll) &&
                 !__builtin_mul_overflow(kvAll, c.kvFeatures() * 4, &kvAll),
             "KV cache bytes overflow");

  // The cache holds the positions resolveMaxSeq gives (the config's, at
  // most 4096 by default), a sliding window's layers only their window.
  llvm::Expected<int64_t> maxSeq = resolveMaxSeq(c, 0);
  FUZZ_CHECK(static_cast<bool>(maxSeq), "resolveMaxSeq(0) failed");
  int64_t kv = 0;
  for (int64_t layer = 0; layer < c.numLayers; ++layer) {
    int64_t rows = kvCacheRows(c, layer, *maxSeq);
    FUZZ_CHECK(rows > 0 && rows <= *maxSeq, "layer %lld caches %lld rows of %lld",
               static_cast<long long>(layer), static_cast<long long>(rows),
               static_cast<long long>(*maxSeq));
    kv += 2 * rows * c.kvFeatures() * 4; // at most kvAll: no overflow
  }
  FUZZ_CHECK(kvCacheBytes(c, *maxSeq, KvFormat::F32) == kv, "kvCacheBytes");
  printModelSummary(c, *maxSeq, llvm::nulls());

  // The manifest attn-compile embeds must be one the runtime loads.
  ModelBuildOptions options;
  options.maxSeq = *maxSeq;
  std::string json = buildManifestJson(c, options);
  attnrt::Manifest manifest;
  std::string error;
  FUZZ_CHECK(attnrt::parseManifest(json, manifest, error),
             "the runtime rejects the compiler's manifest: %s\n%s",
             error.c_str(), json.c_str());
  FUZZ_CHECK(manifest.kvCacheBytes == kv && manifest.maxSeq == *maxSeq &&
                 manifest.vocabSize == c.vocabSize,
             "manifest values");

  // Small models: the whole attn module, which must verify.
  if (c.hiddenSize <= 128 && c.intermediateSize <= 512 && c.numLayers <= 2 &&
      c.vocabSize <= 512 && c.maxPositions <= 128 && c.numHeads <= 16 &&
      c.queryFeatures() <= 256) {
    std::string diagnostics;
    ScopedDiagnosticHandler collect(&context(), [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = buildModelModule(context(), c, options);
    FUZZ_CHECK(module, "buildModelModule failed:\n%s", diagnostics.c_str());
    FUZZ_CHECK(succeeded(verify(*module)),
               "the built module does not verify:\n%s", diagnostics.c_str());
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<ModelConfig> config = parseModelConfig(text, "config.json");
  if (!config) {
    std::string message = llvm::toString(config.takeError());
    FUZZ_CHECK(llvm::StringRef(message).starts_with("config.json: "),
               "message does not name the file: %s", message.c_str());
    // One line: strings from the config are echoed escaped
    // (test/Compiler/config-unescaped-strings.test).
    FUZZ_CHECK(message.find_first_of("\n\r") == std::string::npos,
               "the message is not one line: %s", message.c_str());
    return 0;
  }
  checkConfig(*config);
  return 0;
}
