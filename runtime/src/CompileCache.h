//===- CompileCache.h - model folders compiled on first use ----*- C++ -*-===//
//
// attnrt_model_load_dir's compile step: the library of a model folder is
// built by spawning attn-compile once and kept in a cache folder, keyed by
// everything that makes a library stale: the bytes of config.json, the
// compile options (the context), the host CPU (/proc/cpuinfo's model name
// and flags), the compiler (a hash of the attn-compile executable's bytes)
// and the runtime's ATTN_MODEL_ABI_VERSION.
//
// Cache layout, in the cache folder:
//   <hash>.key          the sidecar: "library <hash>-XXXXXX.so\n", then the
//                       full key text; <hash> is the key's 64-bit FNV-1a.
//   <hash>-XXXXXX.so    the library it names.
// A library is used only when the sidecar's key equals this load's key byte
// for byte, so a hash collision can never load a stale library. Libraries
// are never rewritten: a build goes to a fresh name (compiled into a
// temporary file, renamed into place) and is published by renaming a new
// sidecar over the old one under an flock of the cache folder, which is the
// only step two processes serialize on. A process that loses a race to
// compile the same key uses the winner's library; a sidecar's replaced
// library is deleted when its key differs or it failed to load.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRT_COMPILECACHE_H
#define ATTNRT_COMPILECACHE_H

#include "attnrt/attnrt.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnrt {

struct CompileSettings {
  std::string modelDir;
  /// KV cache positions; 0 = min(the config's, 4096).
  int64_t context = 0;
  /// attn-compile to run; "" searches for it (attnrt.h).
  std::string compiler;
  /// attn-compile --weight-format; "" or "f32": the compiler's default
  /// (for a GGUF file "" is what its tensor types call for).
  std::string weightFormat;
  /// attn-compile --head-format; "": weightFormat's (for a GGUF file whose
  /// weightFormat is "", what its output tensor's type calls for).
  std::string headFormat;
  /// attn-compile --kv-format; "" or "f32": the compiler's default.
  std::string kvFormat;
  /// attn-compile --inspect.
  bool inspect = false;
  /// attn-compile --tensor-parallel (1: the whole model).
  int64_t tensorParallel = 1;
  /// "" chooses MODEL_DIR/.attn or the XDG cache (attnrt.h).
  std::string cacheDir;
  attnrt_log_fn log = nullptr;
  void *logUser = nullptr;
};

class CompileCache {
public:
  /// Reads config.json (a GGUF file's metadata as config.json), finds and
  /// hashes the compiler, builds the key and
  /// chooses (creating it if needed) the cache folder. One-line errors
  /// naming what failed.
  bool prepare(const CompileSettings &settings, std::string &error);

  /// The cached library whose sidecar holds this key, or "".
  std::string lookup() const;

  /// Compiles the model into the cache and publishes it; `library` is the
  /// path to load. `bad` is a cached library that failed to load (it is
  /// replaced even though its key matches), or "".
  bool compile(const std::string &bad, std::string &library,
               std::string &error);

  /// Sends a progress line to the caller's log function, if any.
  void log(const std::string &line) const;

  const std::string &key() const { return keyText; }
  const std::string &folder() const { return cacheDir; }

private:
  bool chooseFolder(std::string &error);
  /// The model is a GGUF file rather than a folder.
  bool isGguf() const {
    const std::string &m = settings.modelDir;
    return m.size() > 5 && m.compare(m.size() - 5, 5, ".gguf") == 0;
  }
  std::string sidecarPath() const;

  CompileSettings settings;
  std::string compilerPath;
  /// The compiler's arguments after "MODEL_DIR -o OUTPUT".
  std::vector<std::string> options;
  int64_t maxSeq = 0; // 0: left to the compiler.
  std::string keyText;
  std::string hashName; // 16 hex digits.
  std::string cacheDir;
};

/// 64-bit FNV-1a.
uint64_t fnv1a64(const void *data, size_t size,
                 uint64_t hash = 0xcbf29ce484222325ull);

/// Whether this process may create files in `dir` by its permission bits
/// (checked by hand: root's access() ignores them, and a read-only shared
/// folder must stay untouched even for root) and by access(), which knows
/// read-only mounts and ACLs.
bool mayWriteDirectory(const std::string &dir);

} // namespace attnrt

#endif // ATTNRT_COMPILECACHE_H
