//===- InitAll.cpp - registration shared by attn-opt and attn-compile -----===//

#include "attn/InitAll.h"

#include "attn/Conversion/Passes.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/Transforms/BufferizableOpInterfaceImpl.h"
#include "attn/Dialect/Attn/Transforms/Passes.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

void mlir::attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect>();
  registerBufferizableOpInterfaceExternalModels(registry);
  // IR at any stage of our pipelines (linalg, vector, scf, omp, llvm, the
  // transform dialect) must parse in attn-opt, and the tiling,
  // bufferization and translation interfaces those dialects promise must be
  // implemented, or passes abort. Registering upstream's full set is the one
  // way that stays true as the pipelines grow.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void mlir::attn::registerAllPasses() {
  // Upstream passes stay available so users can replay or bisect a pipeline
  // stage by stage, as with mlir-opt.
  mlir::registerAllPasses();
  registerAttnConversionPasses();
  registerAttnDialectTransformsPasses();
  registerAttnTransformsPasses();
  registerAttnPipelines();
}
