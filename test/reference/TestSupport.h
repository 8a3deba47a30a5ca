//===- TestSupport.h - temporary folders and commands for the tests -*- C++ -*-===//
//
// What the reference's and the model writer's tests share: a fresh folder
// per test, and running a tool with its exit code and output.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_REFERENCE_TESTSUPPORT_H
#define ATTN_TEST_REFERENCE_TESTSUPPORT_H

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace attn::testing {

/// A fresh folder per test (named after it and the process), removed
/// afterwards.
class TempDir {
public:
  explicit TempDir(const std::string &prefix) {
    const ::testing::TestInfo *info =
        ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = prefix + "-" + (info ? info->test_suite_name() : "x") + "-" +
                       (info ? info->name() : "y") + "-" +
                       std::to_string(static_cast<long>(::getpid()));
    for (char &c : name)
      if (c == '/')
        c = '_';
    path = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string sub(const std::string &name) const { return (path / name).string(); }

  std::filesystem::path path;
};

struct CommandResult {
  int exitCode = -1;
  std::string output; ///< stdout and stderr
};

/// Runs `command` through the shell, stderr merged into the output.
inline CommandResult run(const std::string &command) {
  CommandResult result;
  std::FILE *pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return result;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0)
    result.output.append(buf, n);
  int status = ::pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

} // namespace attn::testing

#endif // ATTN_TEST_REFERENCE_TESTSUPPORT_H
