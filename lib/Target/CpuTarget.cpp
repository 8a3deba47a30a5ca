//===- CpuTarget.cpp - The x86-64 CPU a library is compiled for -----------===//

#include "attn/Target/CpuTarget.h"

#include "attnrt/model_abi.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir::attn;

static llvm::Expected<const llvm::Target *> nativeTarget(const llvm::Triple &triple) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for host triple '" +
                                   triple.str() + "': " + error);
  return target;
}

static llvm::Triple processTriple() {
  return llvm::Triple(llvm::sys::getProcessTriple());
}

const CpuTarget &CpuTarget::host() {
  static const CpuTarget target = [] {
    llvm::SubtargetFeatures features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.getKey(), feature.getValue());
    llvm::Expected<CpuTarget> host =
        parse("native", llvm::sys::getHostCPUName(), features.getString());
    if (!host)
      llvm::report_fatal_error(host.takeError());
    return std::move(*host);
  }();
  return target;
}

llvm::Expected<CpuTarget> CpuTarget::parse(llvm::StringRef spec) {
  if (spec.empty() || spec == "native")
    return host();
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, ',');
  llvm::SubtargetFeatures edits;
  for (llvm::StringRef edit : llvm::ArrayRef(parts).drop_front()) {
    edit = edit.trim();
    if (edit.size() < 2 || (edit[0] != '+' && edit[0] != '-'))
      return llvm::createStringError(
          "--target: '" + edit.str() +
          "' is not a feature edit (write +feature or -feature, e.g. "
          "x86-64-v3,+avxvnni)");
    edits.AddFeature(edit.drop_front(), edit[0] == '+');
  }
  llvm::StringRef cpu = parts.front().trim();
  if (cpu == "native") {
    // The host with edits: its features first, so that an edit wins.
    std::string features = host().features;
    if (!edits.getString().empty())
      features += "," + edits.getString();
    return parse(spec, host().cpuName, features);
  }
  return parse(spec, cpu, edits.getString());
}

llvm::Expected<CpuTarget> CpuTarget::parse(llvm::StringRef spec,
                                           llvm::StringRef cpu,
                                           llvm::StringRef features) {
  llvm::Triple triple = processTriple();
  llvm::Expected<const llvm::Target *> target = nativeTarget(triple);
  if (!target)
    return target.takeError();
  // An unknown CPU or feature makes LLVM print a warning and ignore it:
  // check both first so that a typo is an error, not a generic library.
  std::unique_ptr<llvm::MCSubtargetInfo> probe(
      (*target)->createMCSubtargetInfo(triple, "generic", ""));
  if (!probe)
    return llvm::createStringError("no subtarget information for " + triple.str());
  if (!probe->isCPUStringValid(cpu))
    return llvm::createStringError(
        "--target: unknown CPU '" + cpu.str() +
        "' (an x86-64 CPU as -march names it: x86-64-v3, x86-64-v4, znver4, "
        "sapphirerapids, ...; or native)");
  for (llvm::StringRef feature : llvm::split(features, ',')) {
    llvm::StringRef name = feature.drop_front();
    if (!feature.empty() &&
        !llvm::any_of(probe->getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &kv) {
                        return name == kv.Key;
                      }))
      return llvm::createStringError("--target: unknown CPU feature '" +
                                     name.str() + "' (LLVM's names: avx2, "
                                     "avx512f, avx512vnni, amx-bf16, ...)");
  }
  CpuTarget result;
  result.specText = spec.str();
  result.cpuName = cpu.str();
  result.features = features.str();
  result.subtarget.reset(
      (*target)->createMCSubtargetInfo(triple, cpu, features));
  if (!result.subtarget)
    return llvm::createStringError("no subtarget information for " + cpu.str());
  return result;
}

bool CpuTarget::has(llvm::StringRef name) const {
  return subtarget->checkFeatures(("+" + name).str());
}

int64_t CpuTarget::vectorWidth() const { return has("avx512f") ? 16 : 8; }

std::optional<llvm::StringRef> CpuTarget::int8Dot(int64_t width) const {
  if (width == 16 && has("avx512f") && has("avx512bw"))
    return llvm::StringRef(has("avx512vnni") ? "vpdpbusd" : "vpmaddubsw");
  if (width == 8 && has("avx2"))
    return llvm::StringRef((has("avx512vnni") && has("avx512vl")) || has("avxvnni")
                               ? "vpdpbusd"
                               : "vpmaddubsw");
  return std::nullopt;
}

bool CpuTarget::amxBf16() const { return has("amx-tile") && has("amx-bf16"); }

bool CpuTarget::fastBf16Dot() const {
  // Zen 4/5 issue vdpbf16ps at the FMA rate with twice the products per
  // instruction; Sapphire Rapids ran a pair-packed version at half the FMA
  // rate (docs/benchmarks.md), and uses AMX there instead.
  return has("avx512bf16") && llvm::is_contained({"znver4", "znver5"}, cpuName);
}

std::vector<std::string> CpuTarget::requiredFeatures() const {
  std::vector<std::string> required;
#define ATTN_REQUIRE(llvmName, leaf, subleaf, reg, bit, state)                                    \
  if (has(llvmName))                                                           \
    required.push_back(llvmName);
  ATTN_MODEL_CPU_FEATURES(ATTN_REQUIRE)
#undef ATTN_REQUIRE
  return required;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
CpuTarget::createTargetMachine() const {
  llvm::Triple triple = processTriple();
  llvm::Expected<const llvm::Target *> target = nativeTarget(triple);
  if (!target)
    return target.takeError();
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine((*target)->createTargetMachine(
      triple, cpuName, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("could not create a target machine for " +
                                   triple.str() + " (" + cpuName + ")");
  return std::move(machine);
}
