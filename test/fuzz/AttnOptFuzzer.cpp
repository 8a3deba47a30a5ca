//===- AttnOptFuzzer.cpp - attn-opt's parse, verify, canonicalize ---------===//
//
// The input is MLIR text. With the attn dialect registered (and func, arith,
// tensor, the dialects attn IR is written with), it must parse or fail with
// a diagnostic; a parsed module must verify or fail with a diagnostic; a
// verified module must canonicalize to IR that still verifies (the pass
// manager checks); and what the printer prints must parse again, in the
// custom and the generic form. Nothing may crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "attn/Dialect/Attn/IR/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

using namespace mlir;

namespace {

std::unique_ptr<MLIRContext> newContext() {
  DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, arith::ArithDialect, func::FuncDialect,
                  tensor::TensorDialect>();
  auto context = std::make_unique<MLIRContext>(
      registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

std::string print(ModuleOp module, bool generic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A context keeps every type and attribute it has seen: start a new one
  // now and then so a long run does not grow without bound.
  static std::unique_ptr<MLIRContext> context;
  static unsigned uses = 0;
  if (!context || ++uses % 4096 == 0)
    context = newContext();

  std::string diagnostics;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diag) {
    diagnostics += diag.str();
    diagnostics += '\n';
    return success();
  });

  // A NUL-terminated copy, as attn-opt's file buffers are: MLIR's lexer
  // reads up to 8 bytes past the end of a buffer that has no terminator
  // (an upstream quirk of parseSourceString on a bare StringRef).
  std::string text(reinterpret_cast<const char *>(data), size);
  ParserConfig config(context.get());
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module) {
    FUZZ_CHECK(!diagnostics.empty(), "parse failed without a diagnostic");
    return 0;
  }
  if (failed(verify(*module))) {
    FUZZ_CHECK(!diagnostics.empty(), "verify failed without a diagnostic");
    return 0;
  }

  // What verifies prints, and the printed text parses and verifies again.
  for (bool generic : {false, true}) {
    std::string printed = print(*module, generic);
    diagnostics.clear();
    OwningOpRef<ModuleOp> again = parseSourceString<ModuleOp>(printed, config);
    FUZZ_CHECK(again && succeeded(verify(*again)),
               "printed IR does not parse back:\n%s\n%s", printed.c_str(),
               diagnostics.c_str());
  }

  diagnostics.clear();
  PassManager pm(context.get());
  pm.addPass(createCanonicalizerPass());
  std::string before = print(*module, true);
  FUZZ_CHECK(succeeded(pm.run(*module)),
             "canonicalize broke the IR:\n%s\n%s", before.c_str(),
             diagnostics.c_str());
  std::string after = print(*module, false);
  diagnostics.clear();
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(after, config);
  FUZZ_CHECK(reparsed, "canonicalized IR does not parse back:\n%s\n%s",
             after.c_str(), diagnostics.c_str());
  return 0;
}
