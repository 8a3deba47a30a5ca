//===- NativeCodegen.h - LLVM dialect to a native shared library -*- C++ -*-===//
//
// The in-process back end shared by attn-compile and the end-to-end tests:
// translate a module in the LLVM dialect to LLVM IR, optimize it for the host
// CPU (every feature it has, as -march=native), emit an object file, and link
// that into a shared library.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_NATIVECODEGEN_H
#define ATTN_TARGET_NATIVECODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class DialectRegistry;
namespace attn {

/// Registers the translations from MLIR's LLVM-level dialects to LLVM IR.
void registerNativeCodegenTranslations(DialectRegistry &registry);

/// A TargetMachine for the host: its triple, CPU name and every feature the
/// CPU reports, position-independent code for a shared library.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine();

/// f32 lanes of the host's widest vector registers: 16 with AVX-512, else 8.
int64_t hostVectorWidth();

/// The int8 dot product the q8_0 / q4_0 kernels use at `width` f32 lanes on
/// this host (attn-lower-gemm's int8-dot): "vpdpbusd" with AVX-512 VNNI (or
/// AVX-VNNI at 8 lanes), else "vpmaddubsw" with AVX-512BW (16) or AVX2 (8);
/// none without them.
std::optional<llvm::StringRef> hostInt8Dot(int64_t width);

/// Whether the host runs the q8_0 / q4_0 kernels at its own vector width,
/// and its CPU name for messages.
bool hostHasInt8Dot();
std::string hostCpuName();

/// Whether the host CPU has AMX tiles with bf16 dot products (amx-tile and
/// amx-bf16: Sapphire Rapids and later). Linux still has to grant the
/// process their state (the runtime asks when a library uses them).
bool hostHasAmxBf16();

/// Translates `module` (fully in the LLVM dialect) to LLVM IR for `machine`.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                  llvm::TargetMachine &machine);

/// Runs LLVM's default -O<optLevel> pipeline tuned for `machine`.
llvm::Error optimizeLLVMIR(llvm::Module &module, llvm::TargetMachine &machine,
                           unsigned optLevel = 3);

/// Writes `module` as an object file at `path`.
llvm::Error writeObjectFile(llvm::Module &module, llvm::TargetMachine &machine,
                            llvm::StringRef path);

/// The libraries compiled models link against: libm, and LLVM's OpenMP
/// runtime (libomp, found where LLVM is installed, recorded as the rpath).
std::vector<std::string> modelLinkArgs();

/// Links `objects` into the shared library `output` with the system's C
/// compiler driver (clang-22, clang, cc or gcc, the first found), adding
/// `extraArgs` (e.g. -lm) after the objects.
llvm::Error linkSharedLibrary(llvm::ArrayRef<std::string> objects,
                              llvm::StringRef output,
                              llvm::ArrayRef<std::string> extraArgs = {});

/// translate + optimize + object + link (with modelLinkArgs()), with the
/// object in a temporary file next to `output`.
llvm::Error compileToSharedLibrary(ModuleOp module, llvm::StringRef output);

} // namespace attn
} // namespace mlir

#endif // ATTN_TARGET_NATIVECODEGEN_H
