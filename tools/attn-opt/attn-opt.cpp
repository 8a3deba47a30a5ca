//===- attn-opt.cpp - mlir-opt with the attn dialect and passes -----------===//

#include "attn/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::attn::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attn optimizer driver: the attn dialect and its passes\n",
      registry));
}
