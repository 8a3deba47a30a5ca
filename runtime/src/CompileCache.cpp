//===- CompileCache.cpp - model folders compiled on first use -------------===//

#include "CompileCache.h"

#include "GgufConfig.h"

#include "Json.h"
#include "Safetensors.h"
#include "Support.h"
#include "attnrt/model_abi.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace attnrt {

/// What attn-compile prints on stderr that is kept for the error message.
constexpr size_t maxCompilerOutput = size_t(1) << 20;

uint64_t fnv1a64(const void *data, size_t size, uint64_t hash) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

//===----------------------------------------------------------------------===//
// Files and folders
//===----------------------------------------------------------------------===//

static std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

static std::string parentDir(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

static std::string errnoText(int code = errno) { return std::strerror(code); }

/// The whole of a file (MappedFile's messages: "cannot open: ...").
static bool readWholeFile(const std::string &path, std::string &text,
                          std::string &error) {
  MappedFile file;
  if (!file.open(path, error))
    return false;
  text.assign(reinterpret_cast<const char *>(file.data()), file.size());
  return true;
}

static bool isExecutableFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

static bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

static bool inGroup(gid_t gid) {
  if (getegid() == gid)
    return true;
  int n = getgroups(0, nullptr);
  if (n <= 0)
    return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  n = getgroups(n, groups.data());
  return n > 0 && std::find(groups.begin(), groups.begin() + n, gid) !=
                      groups.begin() + n;
}

bool mayWriteDirectory(const std::string &dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return false;
  // Creating an entry needs write and search permission on the folder.
  mode_t needed = st.st_uid == geteuid() ? (S_IWUSR | S_IXUSR)
                  : inGroup(st.st_gid)   ? (S_IWGRP | S_IXGRP)
                                         : (S_IWOTH | S_IXOTH);
  return (st.st_mode & needed) == needed &&
         access(dir.c_str(), W_OK | X_OK) == 0;
}

/// mkdir -p with `mode` for the folders it creates.
static bool makeDirectories(const std::string &path, mode_t mode,
                            std::string &error) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/')
      continue;
    std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      error = "cannot create " + quote(prefix) + ": " + errnoText();
      return false;
    }
  }
  if (!isDirectory(path)) {
    error = quote(path) + " is not a folder";
    return false;
  }
  return true;
}

/// A plain file name (the sidecar's library must stay in the cache folder).
static bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

/// Writes `text` to `path` through a fresh temporary file renamed over it.
static bool replaceFile(const std::string &path, const std::string &text,
                        std::string &error) {
  std::string pattern = path + ".XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    error = "cannot create " + quote(pattern) + ": " + errnoText();
    return false;
  }
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot write " + quote(name.data()) + ": " + errnoText();
      close(fd);
      unlink(name.data());
      return false;
    }
    written += static_cast<size_t>(n);
  }
  // Readable by whoever may read the folder, like the library beside it.
  fchmod(fd, 0644);
  if (close(fd) != 0 || rename(name.data(), path.c_str()) != 0) {
    error = "cannot write " + quote(path) + ": " + errnoText();
    unlink(name.data());
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The key
//===----------------------------------------------------------------------===//

/// The lines of /proc/cpuinfo that say what code the CPU runs: the model
/// name and the feature flags of the first processor (x86), or its
/// features and part numbers (Arm).
static std::string cpuIdentity() {
  static const char *const keys[] = {
      "model name",       "flags",       "Features", "CPU implementer",
      "CPU architecture", "CPU variant", "CPU part", "CPU revision"};
  std::string out;
  std::vector<bool> seen(sizeof(keys) / sizeof(keys[0]), false);
  FILE *cpuinfo = std::fopen("/proc/cpuinfo", "re");
  if (!cpuinfo)
    return "cpu: unknown (/proc/cpuinfo: " + errnoText() + ")\n";
  std::string line;
  int c;
  auto consume = [&]() {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      return;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t'))
      name.pop_back();
    std::string value = line.substr(colon + 1);
    size_t start = value.find_first_not_of(" \t");
    value = start == std::string::npos ? "" : value.substr(start);
    for (size_t k = 0; k < seen.size(); ++k)
      if (!seen[k] && name == keys[k]) {
        seen[k] = true;
        out += "cpu " + name + ": " + value + "\n";
      }
  };
  while ((c = std::fgetc(cpuinfo)) != EOF) {
    if (c == '\n') {
      consume();
      line.clear();
    } else {
      line += static_cast<char>(c);
    }
  }
  consume();
  std::fclose(cpuinfo);
  return out.empty() ? "cpu: unknown\n" : out;
}

//===----------------------------------------------------------------------===//
// Finding the compiler
//===----------------------------------------------------------------------===//

/// `name` searched in $PATH, as execvp would; "" when absent.
static std::string searchPath(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = joinPath(dir.empty() ? "." : dir, name);
    if (isExecutableFile(candidate))
      return candidate;
    start = end + 1;
  }
  return "";
}

// An address inside this object (libattnrt.so, or the executable the runtime
// is linked into), for dladdr.
static void anchor() {}

/// The attn-compile to run: `requested` (a path, or a name searched in
/// PATH), else $ATTN_COMPILE, else next to the running executable, else
/// ../bin/attn-compile beside libattnrt.so, else PATH.
static bool findCompiler(const std::string &requested, std::string &path,
                         std::string &error) {
  std::string given = requested, origin = "options.compiler";
  if (given.empty()) {
    const char *env = std::getenv("ATTN_COMPILE");
    if (env && *env) {
      given = env;
      origin = "ATTN_COMPILE";
    }
  }
  if (!given.empty()) {
    std::string where = "compiler " + quote(given) + " (from " + origin + ")";
    if (given.find('/') == std::string::npos) {
      path = searchPath(given);
      if (path.empty()) {
        error = where + " is not on PATH";
        return false;
      }
      return true;
    }
    struct stat st;
    if (stat(given.c_str(), &st) != 0) {
      error = where + ": " + errnoText();
      return false;
    }
    if (!isExecutableFile(given)) {
      error = where + " is not an executable file";
      return false;
    }
    path = given;
    return true;
  }

  std::vector<std::string> tried;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    tried.push_back(joinPath(parentDir(self), "attn-compile"));
  }
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&anchor), &info) && info.dli_fname &&
      std::strchr(info.dli_fname, '/'))
    tried.push_back(joinPath(parentDir(info.dli_fname), "../bin/attn-compile"));
  for (const std::string &candidate : tried)
    if (isExecutableFile(candidate)) {
      // Without the "lib/../bin" detour, for messages.
      char *resolved = realpath(candidate.c_str(), nullptr);
      path = resolved ? resolved : candidate;
      std::free(resolved);
      return true;
    }
  path = searchPath("attn-compile");
  if (!path.empty())
    return true;
  std::string places;
  for (const std::string &candidate : tried)
    places += quote(candidate) + ", ";
  error = "attn-compile not found (tried " + places +
          "and PATH); set ATTN_COMPILE or the compiler option";
  return false;
}

//===----------------------------------------------------------------------===//
// CompileCache
//===----------------------------------------------------------------------===//

void CompileCache::log(const std::string &line) const {
  if (settings.log)
    settings.log(settings.logUser, line.c_str());
}

std::string CompileCache::sidecarPath() const {
  return joinPath(cacheDir, hashName + ".key");
}

bool CompileCache::prepare(const CompileSettings &input, std::string &error) {
  settings = input;
  const std::string &dir = settings.modelDir;
  std::string config, message;
  // A GGUF file: the config.json its metadata stands for, as attn-compile
  // derives it, and unless one is asked for, the weight formats its tensor
  // types call for (the library depends on nothing else of the file).
  if (isGguf()) {
    bool derive = settings.weightFormat.empty();
    if (!ggufConfigJson(dir, config, error,
                        derive ? &settings.weightFormat : nullptr,
                        derive && settings.headFormat.empty()
                            ? &settings.headFormat
                            : nullptr))
      return false;
  } else if (!readWholeFile(joinPath(dir, "config.json"), config, message)) {
    error = "model folder " + quote(dir) + ": config.json: " + message;
    return false;
  }

  // Without a context the compiler's default applies (min(the config's
  // positions, 4096)): it is a function of the config and the compiler,
  // which the key holds.
  maxSeq = settings.context > 0 ? settings.context : 0;
  options = {"--quiet"};
  if (maxSeq > 0) {
    options.push_back("--max-seq");
    options.push_back(std::to_string(maxSeq));
  }
  // A GGUF file's format is always said: attn-compile's default for one
  // follows its tensor types, not f32.
  if (!settings.weightFormat.empty() &&
      (settings.weightFormat != "f32" || isGguf())) {
    options.push_back("--weight-format");
    options.push_back(settings.weightFormat);
  }
  // A head in the layers' format is no head format: one library, one key.
  if (settings.headFormat ==
      (settings.weightFormat.empty() ? "f32" : settings.weightFormat))
    settings.headFormat.clear();
  if (!settings.headFormat.empty()) {
    options.push_back("--head-format");
    options.push_back(settings.headFormat);
  }
  if (!settings.kvFormat.empty() && settings.kvFormat != "f32") {
    options.push_back("--kv-format");
    options.push_back(settings.kvFormat);
  }
  if (settings.inspect)
    options.push_back("--inspect");
  if (settings.tensorParallel > 1) {
    options.push_back("--tensor-parallel");
    options.push_back(std::to_string(settings.tensorParallel));
  }

  if (!findCompiler(settings.compiler, compilerPath, error))
    return false;
  MappedFile compiler;
  if (!compiler.open(compilerPath, message)) {
    error = "compiler " + quote(compilerPath) + ": " + message;
    return false;
  }
  uint64_t compilerHash = fnv1a64(compiler.data(), compiler.size());
  size_t compilerBytes = compiler.size();
  compiler.reset();

  // The config comes last, after its length: the text parses one way only.
  keyText = "attn compile cache key, format 1\n";
  keyText += format("runtime model ABI version: %d\n", ATTN_MODEL_ABI_VERSION);
  keyText += format("compiler: %zu bytes, FNV-1a %016llx\n", compilerBytes,
                    static_cast<unsigned long long>(compilerHash));
  keyText += "compile options:";
  for (const std::string &option : options)
    keyText += " " + option;
  keyText += "\n" + cpuIdentity();
  keyText += format("config.json: %zu bytes\n", config.size()) + config;
  hashName = format("%016llx", static_cast<unsigned long long>(
                                   fnv1a64(keyText.data(), keyText.size())));
  return chooseFolder(error);
}

/// Creates `dir` and its missing parents (private to the user, as the XDG
/// spec asks) and checks that we may write there.
static bool makeCacheFolder(const std::string &dir, std::string &error) {
  std::string message;
  if (!makeDirectories(dir, 0700, message)) {
    error = "cache folder " + quote(dir) + ": " + message;
    return false;
  }
  if (!mayWriteDirectory(dir)) {
    error = "cache folder " + quote(dir) + " is not writable";
    return false;
  }
  return true;
}

bool CompileCache::chooseFolder(std::string &error) {
  if (!settings.cacheDir.empty()) {
    cacheDir = settings.cacheDir;
    return makeCacheFolder(cacheDir, error);
  }

  // The model's own folder, when we may write there (a shared read-only
  // folder stays untouched, even for root).
  // Beside a GGUF file, in its folder.
  std::string modelFolder =
      isGguf() ? parentDir(settings.modelDir) : settings.modelDir;
  std::string local = joinPath(modelFolder, ".attn");
  if (isDirectory(local) ? mayWriteDirectory(local)
                         : mayWriteDirectory(modelFolder)) {
    int made = mkdir(local.c_str(), 0777) == 0 ? 0 : errno;
    if ((made == 0 || made == EEXIST) && mayWriteDirectory(local)) {
      cacheDir = local;
      return true;
    }
    log("cannot use " + quote(local) + " (" +
        (made && made != EEXIST ? errnoText(made)
                                : std::string("not a writable folder")) +
        "); caching in the user's cache folder");
  }

  const char *xdg = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  // The XDG spec ignores a relative XDG_CACHE_HOME.
  if (xdg && xdg[0] == '/') {
    cacheDir = joinPath(xdg, "attn");
  } else if (home && home[0] == '/') {
    cacheDir = joinPath(joinPath(home, ".cache"), "attn");
  } else {
    error = "no cache folder: " + quote(settings.modelDir) +
            " is not writable and neither XDG_CACHE_HOME nor HOME is set";
    return false;
  }
  return makeCacheFolder(cacheDir, error);
}

namespace {
/// A parsed sidecar: the library file it names and the key it was built for.
struct Sidecar {
  bool valid = false;
  std::string library;
  std::string key;
};
} // namespace

static Sidecar readSidecar(const std::string &path) {
  Sidecar sidecar;
  std::string text, ignored;
  if (!readWholeFile(path, text, ignored))
    return sidecar;
  const std::string prefix = "library ";
  size_t newline = text.find('\n');
  if (text.compare(0, prefix.size(), prefix) != 0 ||
      newline == std::string::npos)
    return sidecar;
  sidecar.library = text.substr(prefix.size(), newline - prefix.size());
  sidecar.key = text.substr(newline + 1);
  sidecar.valid = isPlainFileName(sidecar.library);
  return sidecar;
}

std::string CompileCache::lookup() const {
  Sidecar sidecar = readSidecar(sidecarPath());
  if (!sidecar.valid)
    return "";
  if (sidecar.key != keyText) {
    log("cache entry " + quote(sidecarPath()) +
        " was made for another key (a hash collision or a damaged "
        "file); rebuilding");
    return "";
  }
  return joinPath(cacheDir, sidecar.library);
}

/// The line of attn-compile's stderr that says what failed: the first one
/// with "error:", else the last non-empty one. Control bytes become spaces
/// so the message stays one line.
static std::string compilerErrorLine(const std::string &output) {
  std::string chosen, last;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos)
      end = output.size();
    std::string line = output.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      last = line;
      if (chosen.empty() && line.find("error:") != std::string::npos)
        chosen = line;
    }
    start = end + 1;
  }
  if (chosen.empty())
    chosen = last;
  for (char &c : chosen)
    if (static_cast<unsigned char>(c) < 0x20)
      c = ' ';
  return chosen.empty() ? "no message" : chosen;
}

/// Runs `args` (args[0] the executable; no shell), stdin and stdout on
/// /dev/null, and collects its stderr. `status` is waitpid's.
static bool runProgram(const std::vector<std::string> &args,
                       std::string &output, int &status, std::string &error) {
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) {
    error = "cannot create a pipe: " + errnoText();
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int spawned = posix_spawn(&pid, args[0].c_str(), &actions, nullptr,
                            argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (spawned != 0) {
    close(pipeFds[0]);
    error = "cannot run " + quote(args[0]) + ": " + errnoText(spawned);
    return false;
  }
  char buffer[4096];
  for (;;) {
    ssize_t n = read(pipeFds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (output.size() < maxCompilerOutput)
      output.append(buffer, std::min(static_cast<size_t>(n),
                                     maxCompilerOutput - output.size()));
  }
  close(pipeFds[0]);
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      error = "cannot wait for " + quote(args[0]) + ": " + errnoText();
      return false;
    }
  }
  return true;
}

static double secondsSince(const timespec &start) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - start.tv_sec) +
         static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9;
}

bool CompileCache::compile(const std::string &bad, std::string &library,
                           std::string &error) {
  std::string where = "cache folder " + quote(cacheDir) + ": ";
  // A fresh name for the library (never a rewritten one: a process that has
  // another build of it loaded would be handed that one by dlopen), held by
  // an empty placeholder until the compiled file is renamed over it.
  std::string pattern = joinPath(cacheDir, hashName + "-XXXXXX.so");
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkostemps(name.data(), 3, O_CLOEXEC);
  if (fd < 0) {
    error = where + "cannot create " + quote(pattern) + ": " + errnoText();
    return false;
  }
  close(fd);
  std::string finalPath = name.data();
  std::string tmpPath = finalPath + ".tmp";
  auto discard = [&]() {
    unlink(tmpPath.c_str());
    unlink(finalPath.c_str());
  };

  // A relative path starting with '-' would read as an option.
  auto operand = [](const std::string &path) {
    return path[0] == '-' ? "./" + path : path;
  };
  std::vector<std::string> args = {compilerPath, operand(settings.modelDir),
                                   "-o", operand(tmpPath)};
  args.insert(args.end(), options.begin(), options.end());
  log("compiling " + quote(settings.modelDir) +
      (maxSeq > 0 ? format(" (context %lld)", static_cast<long long>(maxSeq))
                  : std::string(" (the compiler's default context)")) +
      " with " + quote(compilerPath) + " into " + quote(finalPath));
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  std::string output;
  int status = 0;
  if (!runProgram(args, output, status, error)) {
    discard();
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string how = WIFEXITED(status)
                          ? format("exit code %d", WEXITSTATUS(status))
                          : format("killed by signal %d",
                                   WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    error = "compiling " + quote(settings.modelDir) + " failed (" + how +
            "): " + compilerErrorLine(output);
    discard();
    return false;
  }
  struct stat st;
  if (stat(tmpPath.c_str(), &st) != 0 || st.st_size == 0) {
    error = "compiling " + quote(settings.modelDir) + ": " +
            quote(compilerPath) + " exited 0 but wrote no library to " +
            quote(tmpPath);
    discard();
    return false;
  }
  if (rename(tmpPath.c_str(), finalPath.c_str()) != 0) {
    error = where + "cannot rename " + quote(tmpPath) + ": " + errnoText();
    discard();
    return false;
  }
  log(format("compiled in %.1f s", secondsSince(start)));

  // Publish under the folder's lock: read the sidecar, then replace it.
  int dirFd = open(cacheDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0) {
    error = where + "cannot open: " + errnoText();
    discard();
    return false;
  }
  while (flock(dirFd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      error = where + "cannot lock: " + errnoText();
      close(dirFd);
      discard();
      return false;
    }
  }
  std::string libraryName = finalPath.substr(finalPath.rfind('/') + 1);
  Sidecar current = readSidecar(sidecarPath());
  std::string currentPath =
      current.valid ? joinPath(cacheDir, current.library) : "";
  bool ok = true;
  if (current.valid && current.key == keyText && currentPath != bad &&
      access(currentPath.c_str(), R_OK) == 0) {
    // Another process published the same build meanwhile: use its library.
    discard();
    library = currentPath;
    log("another process compiled it first; using " + quote(library));
  } else if (replaceFile(sidecarPath(),
                         "library " + libraryName + "\n" + keyText, error)) {
    library = finalPath;
    // The library the sidecar named before is stale: another key's, or one
    // that did not load. (A process that has it loaded keeps its mapping.)
    if (current.valid && current.library != libraryName &&
        (current.key != keyText || currentPath == bad))
      unlink(currentPath.c_str());
  } else {
    error = where + error;
    discard();
    ok = false;
  }
  close(dirFd); // Releases the lock.
  return ok;
}

} // namespace attnrt
