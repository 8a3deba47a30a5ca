//===- Version.cpp - Attn's version, for --version and manifests ---------===//

#include "attn/Support/Version.h"

#include "attn/Support/VersionInfo.h"

const char *attnVersion() { return ATTN_VERSION_TEXT; }
const char *attnGitCommit() { return ATTN_GIT_COMMIT_TEXT; }
const char *attnLlvmVersion() { return ATTN_LLVM_VERSION_TEXT; }

std::string attnVersionText(const std::string &tool) {
  std::string text = tool + " (Attn) " + attnVersion() + "\n";
  text += std::string("built with LLVM/MLIR ") + attnLlvmVersion() + "\n";
  if (*attnGitCommit())
    text += std::string("from git commit ") + attnGitCommit() + "\n";
  return text;
}
