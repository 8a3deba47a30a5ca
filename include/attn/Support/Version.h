//===- Version.h - Attn's version, for --version and manifests -*- C++ -*-===//
//
// Plain C++ (no LLVM), so every tool links it, those over the runtime too.
// Global names: the tools alias `attn` to mlir::attn.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SUPPORT_VERSION_H
#define ATTN_SUPPORT_VERSION_H

#include <string>

/// project(VERSION), e.g. "0.2.0".
const char *attnVersion();
/// The git commit the build was configured at ("" outside a checkout).
const char *attnGitCommit();
/// The LLVM/MLIR release the build used, e.g. "22.1.8".
const char *attnLlvmVersion();
/// What `TOOL --version` prints: "TOOL (Attn) 0.2.0", the LLVM/MLIR version
/// and, from a checkout, the commit; one fact per line.
std::string attnVersionText(const std::string &tool);

#endif // ATTN_SUPPORT_VERSION_H
