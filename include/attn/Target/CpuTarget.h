//===- CpuTarget.h - The x86-64 CPU a library is compiled for ---*- C++ -*-===//
//
// One description of the machine code's target, decided once: the host (as
// -march=native) or a CPU named as `-march` names it, with feature edits
// ("x86-64-v3", "znver4,-avx512bf16"). Everything that depends on the
// target reads it from here: the vector width, the int8 dot product, AMX, the
// LLVM TargetMachine, and the features the manifest records so the runtime
// can refuse a library whose instructions the host lacks.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_CPUTARGET_H
#define ATTN_TARGET_CPUTARGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MCSubtargetInfo;
class TargetMachine;
} // namespace llvm

namespace mlir::attn {

class CpuTarget {
public:
  /// The machine this process runs on: its CPU name and every feature it
  /// has.
  static const CpuTarget &host();

  /// "native" (the host), or an LLVM x86-64 CPU name followed by
  /// comma-separated "+feature" / "-feature" edits. Errors name the unknown
  /// CPU or feature.
  static llvm::Expected<CpuTarget> parse(llvm::StringRef spec);

  /// The LLVM CPU name ("znver5", "x86-64-v3").
  llvm::StringRef cpu() const { return cpuName; }
  /// The spec it was parsed from ("native" for the host).
  llvm::StringRef spec() const { return specText; }
  bool isHost() const { return specText == "native"; }

  /// Whether code for this target may use LLVM feature `name` ("avx512f").
  bool has(llvm::StringRef name) const;

  /// f32 lanes per vector: 16 with AVX-512F, else 8.
  int64_t vectorWidth() const;
  /// The q8_0/q4_0 kernels' int8 dot product at `width` lanes: "vpdpbusd"
  /// (AVX-512 VNNI, or AVX-VNNI at 8 lanes), "vpmaddubsw" (AVX-512BW or
  /// AVX2), none without them.
  std::optional<llvm::StringRef> int8Dot(int64_t width) const;
  /// AMX tiles with bf16 products.
  bool amxBf16() const;
  /// AVX-512 BF16's vdpbf16ps, on a CPU that runs it faster than the f32
  /// FMAs it replaces (a tuning fact by CPU name: Zen 4 and Zen 5).
  bool fastBf16Dot() const;

  /// The features of model_abi.h's ATTN_MODEL_CPU_FEATURES table this
  /// target has, in the table's order: what the manifest records and the
  /// runtime checks before it runs the code.
  std::vector<std::string> requiredFeatures() const;

  /// A TargetMachine emitting position-independent code for this target.
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine() const;

private:
  CpuTarget() = default;
  static llvm::Expected<CpuTarget> parse(llvm::StringRef spec,
                                         llvm::StringRef cpu,
                                         llvm::StringRef features);
  std::string specText, cpuName, features;
  std::shared_ptr<const llvm::MCSubtargetInfo> subtarget;
};

} // namespace mlir::attn

#endif // ATTN_TARGET_CPUTARGET_H
