//===- CompiledModule.cpp - compile attn IR in-process and call it --------===//

#include "attn/Compiler/CompiledModule.h"

#include "attn/InitAll.h"
#include "attn/Target/CpuTarget.h"
#include "attn/Target/NativeCodegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <dlfcn.h>

using namespace mlir;

namespace mlir::attn {

std::unique_ptr<CompiledModule>
CompiledModule::compile(const std::string &source,
                        const CompileOptions &options, std::string &error) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerNativeCodegenTranslations(registry);
  MLIRContext context(registry);
  context.disableMultithreading();

  llvm::raw_string_ostream diagnostics(error);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnostics);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, &context, "test-input");
  if (!module)
    return nullptr;
  for (auto func : module->getOps<func::FuncOp>())
    if (func.isPublic())
      func->setAttr("llvm.emit_c_interface", UnitAttr::get(&context));

  PassManager pm(&context);
  AttnPipelineOptions pipelineOptions;
  pipelineOptions.queryBlock = options.queryBlock;
  pipelineOptions.kvBlock = options.kvBlock;
  // The host's choices, unless the test says otherwise; a test that only
  // narrows the vectors gets the host's int8 dot product at that width.
  llvm::cantFail(configureForTarget(pipelineOptions, CpuTarget::host()));
  // The bf16 kernel is each test's own choice: the widening one unless it
  // asks for AMX tiles or vdpbf16ps.
  pipelineOptions.amx = false;
  pipelineOptions.bf16Dot = false;
  int64_t hostWidth = pipelineOptions.vectorWidth;
  std::string hostDot = pipelineOptions.int8Dot;
  if (options.configure)
    options.configure(pipelineOptions);
  if (pipelineOptions.vectorWidth != hostWidth && pipelineOptions.int8Dot == hostDot)
    if (std::optional<llvm::StringRef> dot =
            CpuTarget::host().int8Dot(pipelineOptions.vectorWidth))
      pipelineOptions.int8Dot = dot->str();
  buildAttnToLLVMPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module)))
    return nullptr;

  std::unique_ptr<CompiledModule> compiled(new CompiledModule());
  SmallString<128> directory;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("attn-e2e", directory)) {
    error = "cannot create a temporary directory: " + ec.message();
    return nullptr;
  }
  compiled->directory = directory.str().str();
  std::string library = compiled->directory + "/module.so";
  if (llvm::Error err =
          compileToSharedLibrary(*module, library)) {
    error = llvm::toString(std::move(err));
    return nullptr;
  }
  compiled->handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!compiled->handle) {
    error = std::string("dlopen: ") + dlerror();
    return nullptr;
  }
  return compiled;
}

CompiledModule::~CompiledModule() {
  if (handle)
    dlclose(handle);
  if (!directory.empty())
    llvm::sys::fs::remove_directories(directory);
}

void *CompiledModule::lookup(const std::string &name) const {
  return dlsym(handle, ("_mlir_ciface_" + name).c_str());
}

} // namespace mlir::attn
