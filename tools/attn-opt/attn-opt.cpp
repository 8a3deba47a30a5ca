//===- attn-opt.cpp - mlir-opt with the attn dialect and passes -----------===//

#include "attn/InitAll.h"
#include "attn/Support/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  // Attn's version (and the LLVM/MLIR it was built with), not LLVM's alone.
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << attnVersionText("attn-opt"); });
  mlir::attn::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attn optimizer driver: the attn dialect and its passes\n",
      registry));
}
