//===- NativeCodegen.cpp - LLVM dialect to a native shared library --------===//

#include "attn/Target/NativeCodegen.h"
#include "attn/Target/CpuTarget.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;

void mlir::attn::registerNativeCodegenTranslations(DialectRegistry &registry) {
  registerAllToLLVMIRTranslations(registry);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::attn::createHostTargetMachine() {
  return CpuTarget::host().createTargetMachine();
}

int64_t mlir::attn::hostVectorWidth() { return CpuTarget::host().vectorWidth(); }

std::optional<llvm::StringRef> mlir::attn::hostInt8Dot(int64_t width) {
  return CpuTarget::host().int8Dot(width);
}

bool mlir::attn::hostHasInt8Dot() {
  return hostInt8Dot(hostVectorWidth()).has_value();
}

bool mlir::attn::hostHasAmxBf16() { return CpuTarget::host().amxBf16(); }

std::string mlir::attn::hostCpuName() { return llvm::sys::getHostCPUName().str(); }

llvm::Expected<std::unique_ptr<llvm::Module>>
mlir::attn::translateToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                              llvm::TargetMachine &machine) {
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return llvm::createStringError(
        "translation to LLVM IR failed (is every op in the LLVM dialect?)");
  llvmModule->setDataLayout(machine.createDataLayout());
  llvmModule->setTargetTriple(machine.getTargetTriple());
  std::string verifierErrors;
  llvm::raw_string_ostream os(verifierErrors);
  if (llvm::verifyModule(*llvmModule, &os))
    return llvm::createStringError("invalid LLVM IR: " + verifierErrors);
  return llvmModule;
}

llvm::Error mlir::attn::optimizeLLVMIR(llvm::Module &module,
                                       llvm::TargetMachine &machine,
                                       unsigned optLevel) {
  llvm::LoopAnalysisManager loopAM;
  llvm::FunctionAnalysisManager functionAM;
  llvm::CGSCCAnalysisManager cgsccAM;
  llvm::ModuleAnalysisManager moduleAM;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(moduleAM);
  builder.registerCGSCCAnalyses(cgsccAM);
  builder.registerFunctionAnalyses(functionAM);
  builder.registerLoopAnalyses(loopAM);
  builder.crossRegisterProxies(loopAM, functionAM, cgsccAM, moduleAM);
  llvm::OptimizationLevel level = optLevel >= 3   ? llvm::OptimizationLevel::O3
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                                  : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager passes =
      level == llvm::OptimizationLevel::O0
          ? builder.buildO0DefaultPipeline(level)
          : builder.buildPerModuleDefaultPipeline(level);
  passes.run(module, moduleAM);
  return llvm::Error::success();
}

llvm::Error mlir::attn::writeObjectFile(llvm::Module &module,
                                        llvm::TargetMachine &machine,
                                        llvm::StringRef path) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError("cannot write object file '" + path.str() +
                                   "': " + ec.message());
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, out.os(), nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(module);
  out.keep();
  return llvm::Error::success();
}

/// The first C compiler driver on PATH, or an error naming what was tried.
static llvm::Expected<std::string> findLinkerDriver() {
  for (const char *name : {"clang-22", "clang", "cc", "gcc"}) {
    if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
      return *path;
  }
  return llvm::createStringError(
      "no C compiler driver to link with: install clang-22 (scripts/setup.sh)");
}

llvm::Error mlir::attn::linkSharedLibrary(llvm::ArrayRef<std::string> objects,
                                          llvm::StringRef output,
                                          llvm::ArrayRef<std::string> extraArgs) {
  llvm::Expected<std::string> driver = findLinkerDriver();
  if (!driver)
    return driver.takeError();
  SmallVector<std::string> args = {*driver, "-shared", "-o", output.str()};
  args.append(objects.begin(), objects.end());
  args.append(extraArgs.begin(), extraArgs.end());
  SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*driver, argRefs, std::nullopt, {}, 0,
                                         0, &message);
  if (status != 0)
    return llvm::createStringError("linking '" + output.str() + "' with " +
                                   *driver + " failed (exit " +
                                   std::to_string(status) + ")" +
                                   (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}

std::vector<std::string> mlir::attn::modelLinkArgs() {
  std::string dir = ATTN_LLVM_LIBRARY_DIR;
  return {"-lm", "-L" + dir, "-lomp", "-Wl,-rpath," + dir};
}

llvm::Error mlir::attn::compileToSharedLibrary(ModuleOp module,
                                               llvm::StringRef output) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createHostTargetMachine();
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> llvmModule =
      translateToLLVMIR(module, context, **machine);
  if (!llvmModule)
    return llvmModule.takeError();
  if (llvm::Error error = optimizeLLVMIR(**llvmModule, **machine))
    return error;

  std::string object = (output + ".o").str();
  if (llvm::Error error = writeObjectFile(**llvmModule, **machine, object))
    return error;
  llvm::Error linked = linkSharedLibrary({object}, output, modelLinkArgs());
  llvm::sys::fs::remove(object);
  return linked;
}
