//===- ModelFolderTest.cpp - model folders compiled on first use ----------===//
//
// attnrt_model_load_dir on real tiny models made by this build's
// attn-make-model and compiled by its attn-compile: the first load compiles,
// the next reuses; whatever the key covers (config.json, the context) makes
// another library; a damaged or tampered cache entry, or a library of
// another ABI, is rebuilt; read-only folders are not written; a missing
// compiler, a failing compile and an unwritable cache are one-line errors;
// sharded weights give the single file's logits bit for bit; a context
// that cannot fit in memory is refused by the session, quickly.
//
// Every cache goes to a temporary folder (cache_dir, or XDG_CACHE_HOME),
// never to $HOME.
//
//===----------------------------------------------------------------------===//

#include "attnrt/model_abi.h"
#include "attnrt/version.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace attnrt::test;

namespace {

std::string shellQuote(const std::string &arg) {
  std::string quoted = "'";
  for (char c : arg)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The names in a folder, sorted ("" entries excluded).
std::vector<std::string> listDir(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string realPath(const std::string &path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) ? buffer : path;
}

/// Resident memory of this process, from /proc/self/status.
long residentKiB() {
  std::string status = readFile("/proc/self/status");
  size_t at = status.find("VmRSS:");
  return at == std::string::npos ? -1 : std::atol(status.c_str() + at + 6);
}

/// MemAvailable of /proc/meminfo, in bytes.
uint64_t memAvailable() {
  std::string meminfo = readFile("/proc/meminfo");
  size_t at = meminfo.find("MemAvailable:");
  return at == std::string::npos
             ? 0
             : std::strtoull(meminfo.c_str() + at + 13, nullptr, 10) * 1024;
}

/// Sets an environment variable for the lifetime of the object.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old, hadValue = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (hadValue)
      setenv(name, saved.c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::string saved;
  bool hadValue = false;
};

struct Load {
  ModelPtr model;
  std::string error;
  std::vector<std::string> log;
};

void collectLog(void *user, const char *line) {
  static_cast<std::vector<std::string> *>(user)->push_back(line);
}

class ModelFolderTest : public ::testing::Test {
protected:
  /// attn-make-model --preset tiny-llama --out DIR `args`.
  void makeModel(const std::string &dir, const std::string &args = "") {
    std::string command = shellQuote(ATTNRT_TEST_ATTN_MAKE_MODEL) +
                          " --preset tiny-llama --quiet --out " +
                          shellQuote(dir) + " " + args;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }

  /// attnrt_model_load_dir with this build's compiler and the test's cache
  /// folder unless `options` says otherwise.
  Load load(const std::string &dir, attnrt_load_options options) {
    Load result;
    options.log = collectLog;
    options.log_user = &result.log;
    char error[2048] = "";
    result.model.reset(
        attnrt_model_load_dir(dir.c_str(), &options, error, sizeof(error)));
    result.error = error;
    return result;
  }
  Load load(const std::string &dir, int64_t context = 0) {
    attnrt_load_options options = attnrt_load_default_options();
    options.compiler = ATTNRT_TEST_ATTN_COMPILE;
    options.cache_dir = cache.c_str();
    options.context = context;
    return load(dir, options);
  }

  /// The error of a load that must fail, checked to be one line.
  std::string loadError(const std::string &dir, attnrt_load_options options) {
    Load result = load(dir, options);
    EXPECT_EQ(result.model, nullptr);
    EXPECT_EQ(result.error.find('\n'), std::string::npos) << result.error;
    return result.error;
  }

  /// Every logits row of a prefill of `tokens` on a fresh session.
  static std::vector<float> logits(attnrt_model *model,
                                   const std::vector<int32_t> &tokens) {
    char error[512] = "";
    SessionPtr session(attnrt_session_create(model, error, sizeof(error)));
    EXPECT_NE(session, nullptr) << error;
    if (!session)
      return {};
    std::vector<float> out(tokens.size() * attnrt_model_vocab_size(model));
    EXPECT_EQ(attnrt_prefill(session.get(), tokens.data(),
                             static_cast<int64_t>(tokens.size()), out.data(), 1,
                             error, sizeof(error)),
              ATTNRT_OK)
        << error;
    return out;
  }

  /// The cache files: sidecars (.key) and libraries (.so).
  std::vector<std::string> cacheFiles(const std::string &dir) const {
    return listDir(dir);
  }

  TempDir root;
  std::string model = root.file("model");
  std::string cache = root.file("cache");
  std::string xdg = root.file("xdg");
  // No test may write to $HOME, nor pick up a compiler from the caller's
  // environment.
  ScopedEnv xdgEnv{"XDG_CACHE_HOME", xdg.c_str()};
  ScopedEnv compilerEnv{"ATTN_COMPILE", nullptr};
  std::vector<int32_t> prompt = {5, 17, 3, 99, 42};
};

TEST_F(ModelFolderTest, FirstLoadCompilesTheNextReuses) {
  makeModel(model);
  Load first = load(model);
  ASSERT_NE(first.model, nullptr) << first.error;
  EXPECT_EQ(attnrt_model_was_compiled(first.model.get()), 1);
  std::string library = attnrt_model_library_path(first.model.get());
  EXPECT_EQ(library.rfind(cache + "/", 0), 0u) << library;
  ASSERT_EQ(first.log.size(), 2u);
  EXPECT_EQ(first.log[0].rfind("compiling '" + model +
                                   "' (the compiler's default context) with '" +
                                   std::string(ATTNRT_TEST_ATTN_COMPILE) +
                                   "' into '" + library + "'",
                               0),
            0u)
      << first.log[0];
  EXPECT_EQ(first.log[1].rfind("compiled in ", 0), 0u) << first.log[1];
  // One sidecar and the library it names.
  std::vector<std::string> files = cacheFiles(cache);
  ASSERT_EQ(files.size(), 2u);
  std::string hash = files[0].substr(0, 16);
  EXPECT_EQ(files[1], hash + ".key");
  EXPECT_EQ(cache + "/" + files[0], library);
  std::string sidecar = readFile(cache + "/" + files[1]);
  EXPECT_EQ(
      sidecar.rfind("library " + files[0] + "\nattn compile cache key", 0), 0u)
      << sidecar;
  EXPECT_NE(sidecar.find("compile options: --quiet\n"), std::string::npos);
  EXPECT_NE(sidecar.find("\ncpu "), std::string::npos);
  EXPECT_NE(sidecar.find(readFile(model + "/config.json")), std::string::npos);

  Load second = load(model);
  ASSERT_NE(second.model, nullptr) << second.error;
  EXPECT_EQ(attnrt_model_was_compiled(second.model.get()), 0);
  EXPECT_EQ(attnrt_model_library_path(second.model.get()), library);
  EXPECT_TRUE(second.log.empty());
  EXPECT_EQ(logits(second.model.get(), prompt),
            logits(first.model.get(), prompt));
  EXPECT_EQ(cacheFiles(cache), files);

  // attnrt_model_load: the path it was given, nothing compiled.
  std::string error;
  ModelPtr direct = loadModel(library, model, error);
  ASSERT_NE(direct, nullptr) << error;
  EXPECT_EQ(attnrt_model_library_path(direct.get()), library);
  EXPECT_EQ(attnrt_model_was_compiled(direct.get()), 0);
}

TEST_F(ModelFolderTest, ShardedWeightsGiveTheSingleFilesLogits) {
  std::string sharded = root.file("sharded");
  makeModel(model);
  makeModel(sharded, "--shards 3");
  ASSERT_TRUE(exists(sharded + "/model.safetensors.index.json"));
  ASSERT_FALSE(exists(sharded + "/model.safetensors"));
  Load single = load(model);
  ASSERT_NE(single.model, nullptr) << single.error;
  Load shards = load(sharded);
  ASSERT_NE(shards.model, nullptr) << shards.error;
  // The same config.json: one library serves both folders.
  EXPECT_EQ(attnrt_model_was_compiled(shards.model.get()), 0);
  EXPECT_STREQ(attnrt_model_warnings(shards.model.get()), "");
  std::vector<float> expected = logits(single.model.get(), prompt);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(logits(shards.model.get(), prompt), expected);
  // Shard errors come through load_dir as they do through attnrt_model_load.
  ASSERT_EQ(unlink((sharded + "/model-00002-of-00003.safetensors").c_str()), 0);
  Load broken = load(sharded);
  EXPECT_EQ(broken.model, nullptr);
  EXPECT_EQ(broken.error,
            "index '" + sharded +
                "/model.safetensors.index.json': shard "
                "'model-00002-of-00003.safetensors' (named by tensor "
                "'model.layers.0.mlp.down_proj.weight'): cannot open: No such "
                "file or directory");
}

TEST_F(ModelFolderTest, AGgufFileGivesTheFoldersLogits) {
  // attn-make-model --gguf writes the folder's model as llama.cpp would:
  // metadata for config.json, llama.cpp's names, q/k rows interleaved per
  // head. Loaded as F32 it is the folder's model bit for bit (the loader
  // undoes the interleaving: without that RoPE pairs the wrong features).
  std::string shape = "--layers 2 --hidden 256 --ffn 512 --kv-heads 2 ";
  std::string gguf = root.file("model.gguf");
  makeModel(model, shape + "--gguf " + shellQuote(gguf) + " --gguf-type f32");
  Load folder = load(model);
  ASSERT_NE(folder.model, nullptr) << folder.error;
  Load file = load(gguf);
  ASSERT_NE(file.model, nullptr) << file.error;
  EXPECT_STREQ(attnrt_model_warnings(file.model.get()), "");
  std::vector<float> expected = logits(folder.model.get(), prompt);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(logits(file.model.get(), prompt), expected);

  // A Q4_0 file runs as q4_0 unless told otherwise (the file's blocks,
  // given back by dequantize-requantize), its output as llama-quantize
  // keeps it (Q6_K, or Q8_0 for rows of 224, not whole 256-blocks) in
  // q8_0: exactly the logits of its folder run with --weight-format q4_0
  // --head-format q8_0 (Q8_0 likewise: docs/gguf.md, measured by hand).
  std::string q4 = root.file("q4.gguf"), q4km = root.file("q4km.gguf");
  makeModel(root.file("q4"), "--layers 2 --hidden 224 --ffn 512 --kv-heads 2 "
                             "--gguf " + shellQuote(q4) + " --gguf-type q4_0");
  Load q4File = load(q4);
  ASSERT_NE(q4File.model, nullptr) << q4File.error;
  EXPECT_STREQ(attnrt_model_weight_format(q4File.model.get()), "q4_0");
  EXPECT_STREQ(attnrt_model_weight_format(file.model.get()), "f32");
  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  options.cache_dir = cache.c_str();
  options.weight_format = "q4_0";
  options.head_format = "q8_0";
  Load q4Folder = load(root.file("q4"), options);
  ASSERT_NE(q4Folder.model, nullptr) << q4Folder.error;
  std::vector<float> q4Logits = logits(q4File.model.get(), prompt);
  EXPECT_EQ(q4Logits, logits(q4Folder.model.get(), prompt));
  options.head_format = nullptr; // The head in q4_0 too: other logits.
  Load q4Head = load(root.file("q4"), options);
  ASSERT_NE(q4Head.model, nullptr) << q4Head.error;
  EXPECT_NE(q4Logits, logits(q4Head.model.get(), prompt));
  options.head_format = "q4_0"; // The weights' own: the same library.
  Load sameHead = load(root.file("q4"), options);
  ASSERT_NE(sameHead.model, nullptr) << sameHead.error;
  EXPECT_EQ(attnrt_model_was_compiled(sameHead.model.get()), 0);
  options.head_format = "q5_k";
  EXPECT_EQ(load(root.file("q4"), options).error,
            "attnrt_model_load_dir: head format 'q5_k' is not one of f32, "
            "bf16, q8_0, q4_0");

  // Without a cache folder the library goes beside the file, in .attn. A
  // Q4_K_M file (q4_K, q6_K and f32 tensors, no kernels of their own yet)
  // would run as q8_0 (GgufConfigTest has the rule for every type); asked
  // for f32, it runs in f32.
  makeModel(root.file("q4km"), shape + "--gguf " + shellQuote(q4km) +
                                   " --gguf-type q4_k_m");
  options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  options.weight_format = "f32";
  Load beside = load(q4km, options);
  ASSERT_NE(beside.model, nullptr) << beside.error;
  EXPECT_EQ(listDir(root.file(".attn")).size(), 2u); // Library and sidecar.
  EXPECT_STREQ(attnrt_model_weight_format(beside.model.get()), "f32");
  EXPECT_EQ(logits(beside.model.get(), prompt).size(), expected.size());

  // A truncated file is refused by name.
  std::string bytes = readFile(gguf);
  writeFile(root.file("short.gguf"), bytes.substr(0, bytes.size() - 100));
  Load broken = load(root.file("short.gguf"));
  EXPECT_EQ(broken.model, nullptr);
  EXPECT_EQ(broken.error.rfind("GGUF file '" + root.file("short.gguf") +
                                   "': tensor 'output.weight': data [",
                               0),
            0u)
      << broken.error;
}

TEST_F(ModelFolderTest, EditingConfigJsonRebuilds) {
  makeModel(model);
  Load first = load(model);
  ASSERT_NE(first.model, nullptr) << first.error;
  std::string library = attnrt_model_library_path(first.model.get());
  // One more space: the same model, other bytes, another key.
  std::string config = readFile(model + "/config.json");
  writeFile(model + "/config.json", config + " ");
  Load edited = load(model);
  ASSERT_NE(edited.model, nullptr) << edited.error;
  EXPECT_EQ(attnrt_model_was_compiled(edited.model.get()), 1);
  EXPECT_NE(attnrt_model_library_path(edited.model.get()), library);
  // The other key's entry is left alone: editing back reuses it.
  EXPECT_EQ(cacheFiles(cache).size(), 4u);
  writeFile(model + "/config.json", config);
  Load back = load(model);
  ASSERT_NE(back.model, nullptr) << back.error;
  EXPECT_EQ(attnrt_model_was_compiled(back.model.get()), 0);
  EXPECT_EQ(attnrt_model_library_path(back.model.get()), library);
}

TEST_F(ModelFolderTest, ATamperedSidecarRebuilds) {
  makeModel(model);
  std::string library, sidecar, original;
  {
    Load first = load(model);
    ASSERT_NE(first.model, nullptr) << first.error;
    library = attnrt_model_library_path(first.model.get());
    std::vector<std::string> files = cacheFiles(cache);
    ASSERT_EQ(files.size(), 2u);
    sidecar = cache + "/" + files[1];
    original = readFile(sidecar);
  }
  // What a hash collision looks like: a sidecar whose key is another's.
  std::string tampered = original;
  size_t at = tampered.find("compile options: --quiet\n");
  ASSERT_NE(at, std::string::npos);
  tampered.replace(at, 25, "compile options: --quiet --max-seq 65\n");
  writeFile(sidecar, tampered);
  Load second = load(model);
  ASSERT_NE(second.model, nullptr) << second.error;
  EXPECT_EQ(attnrt_model_was_compiled(second.model.get()), 1);
  std::string rebuilt = attnrt_model_library_path(second.model.get());
  EXPECT_NE(rebuilt, library);
  ASSERT_FALSE(second.log.empty());
  EXPECT_EQ(second.log[0], "cache entry '" + sidecar +
                               "' was made for another key (a hash collision "
                               "or a damaged file); rebuilding");
  // The other key's library is gone, the sidecar holds this key again.
  EXPECT_FALSE(exists(library));
  std::string restored = readFile(sidecar);
  EXPECT_EQ(restored.substr(restored.find('\n')),
            original.substr(original.find('\n')));
  EXPECT_EQ(cacheFiles(cache).size(), 2u);
  // A sidecar that names no plain library file is no entry at all.
  writeFile(sidecar, "library ../../etc/passwd\n" +
                         original.substr(original.find('\n') + 1));
  Load third = load(model);
  ASSERT_NE(third.model, nullptr) << third.error;
  EXPECT_EQ(attnrt_model_was_compiled(third.model.get()), 1);
}

TEST_F(ModelFolderTest, ALibraryOfAnotherAbiIsRebuiltOnce) {
  makeModel(model);
  std::string library;
  {
    Load first = load(model);
    ASSERT_NE(first.model, nullptr) << first.error;
    library = attnrt_model_library_path(first.model.get());
  }
  // The cached file replaced (renamed over, as a build would) by a library
  // built for ABI 1.
  writeFile(library + ".new", readFile(ATTNRT_TEST_MOCK_MODEL_OLD_ABI));
  ASSERT_EQ(rename((library + ".new").c_str(), library.c_str()), 0);
  Load second = load(model);
  ASSERT_NE(second.model, nullptr) << second.error;
  EXPECT_EQ(attnrt_model_was_compiled(second.model.get()), 1);
  ASSERT_FALSE(second.log.empty());
  EXPECT_EQ(second.log[0], "cached library '" + library +
                               "': manifest abi_version is 1 (made by an "
                               "attn-compile older than 0.2.0), this runtime "
                               "(Attn " ATTNRT_VERSION ") supports " +
                               std::to_string(ATTN_MODEL_ABI_VERSION) +
                               ": rebuild the model with a matching attn-compile; rebuilding");
  EXPECT_FALSE(exists(library));
  EXPECT_EQ(cacheFiles(cache).size(), 2u);
  EXPECT_FALSE(logits(second.model.get(), prompt).empty());

  // A damaged file (not a library at all) is rebuilt the same way.
  std::string rebuilt = attnrt_model_library_path(second.model.get());
  second.model.reset();
  writeFile(rebuilt + ".new", "garbage");
  ASSERT_EQ(rename((rebuilt + ".new").c_str(), rebuilt.c_str()), 0);
  Load third = load(model);
  ASSERT_NE(third.model, nullptr) << third.error;
  EXPECT_EQ(attnrt_model_was_compiled(third.model.get()), 1);
}

TEST_F(ModelFolderTest, TheContextChangesTheLibrary) {
  makeModel(model);
  Load standard = load(model);
  ASSERT_NE(standard.model, nullptr) << standard.error;
  EXPECT_EQ(attnrt_model_max_seq(standard.model.get()), 64);
  Load shorter = load(model, 32);
  ASSERT_NE(shorter.model, nullptr) << shorter.error;
  EXPECT_EQ(attnrt_model_was_compiled(shorter.model.get()), 1);
  EXPECT_EQ(attnrt_model_max_seq(shorter.model.get()), 32);
  EXPECT_NE(std::string(attnrt_model_manifest(shorter.model.get()))
                .find("\"max_seq\":32"),
            std::string::npos)
      << attnrt_model_manifest(shorter.model.get());
  EXPECT_NE(attnrt_model_library_path(shorter.model.get()),
            std::string(attnrt_model_library_path(standard.model.get())));
  // RoPE has no position table: LLaMA may run longer than its config says.
  Load longer = load(model, 200);
  ASSERT_NE(longer.model, nullptr) << longer.error;
  EXPECT_EQ(attnrt_model_max_seq(longer.model.get()), 200);
  // The same logits wherever the cache ends.
  EXPECT_EQ(logits(longer.model.get(), prompt),
            logits(standard.model.get(), prompt));
  // The default is the compiler's (the config's positions): the runtime
  // does not read config.json's families, so naming the same context is
  // another entry of the same library.
  Load explicit64 = load(model, 64);
  ASSERT_NE(explicit64.model, nullptr) << explicit64.error;
  EXPECT_EQ(attnrt_model_was_compiled(explicit64.model.get()), 1);
  EXPECT_EQ(attnrt_model_max_seq(explicit64.model.get()), 64);
  EXPECT_EQ(logits(explicit64.model.get(), prompt),
            logits(standard.model.get(), prompt));

  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  options.cache_dir = cache.c_str();
  options.context = -1;
  EXPECT_EQ(loadError(model, options),
            "attnrt_model_load_dir: context must be 0 (the default) or "
            "positive, got -1");

  // The weight format is part of the compile: a bf16 library is another
  // cache entry, with other logits (its weights are rounded).
  options.context = 64;
  options.weight_format = "fp8";
  EXPECT_EQ(loadError(model, options),
            "attnrt_model_load_dir: weight format 'fp8' is not one of f32, bf16, q8_0, q4_0");
  options.weight_format = "bf16";
  char message[512] = "";
  ModelPtr bf16(attnrt_model_load_dir(model.c_str(), &options, message, sizeof message));
  ASSERT_NE(bf16, nullptr) << message;
  EXPECT_EQ(attnrt_model_was_compiled(bf16.get()), 1);
  EXPECT_NE(std::string(attnrt_model_library_path(bf16.get())),
            std::string(attnrt_model_library_path(explicit64.model.get())));
  EXPECT_NE(logits(bf16.get(), prompt), logits(explicit64.model.get(), prompt));

  // So is the KV cache format: an f16 cache is yet another entry, its
  // manifest says so and its buffer is half the f32 one's.
  options.weight_format = nullptr;
  options.kv_format = "int8";
  EXPECT_EQ(loadError(model, options),
            "attnrt_model_load_dir: KV cache format 'int8' is not one of f32, bf16, f16");
  options.kv_format = "f16";
  ModelPtr f16(attnrt_model_load_dir(model.c_str(), &options, message, sizeof message));
  ASSERT_NE(f16, nullptr) << message;
  EXPECT_EQ(attnrt_model_was_compiled(f16.get()), 1);
  EXPECT_NE(std::string(attnrt_model_library_path(f16.get())),
            std::string(attnrt_model_library_path(explicit64.model.get())));
  EXPECT_STREQ(attnrt_model_get_info(f16.get())->kv_format, "f16");
  EXPECT_EQ(2 * attnrt_model_get_info(f16.get())->kv_cache_bytes,
            attnrt_model_get_info(explicit64.model.get())->kv_cache_bytes);
  EXPECT_NE(logits(f16.get(), prompt), logits(explicit64.model.get(), prompt));
}

TEST_F(ModelFolderTest, AHugeConfigContextIsNotTheDefault) {
  // Today's configs state 32768 to 131072 positions; at 1048576 this model's
  // KV cache would take 256 GiB. (32 layers of 8 heads of 128: the layers
  // share one block function, so the model compiles in ~4 s, where 4 layers
  // of heads of 1024 took ~23 s per context.)
  makeModel(model, "--layers 32 --heads 8 --kv-heads 8 --head-dim 128 "
                   "--ffn 64 --max-positions 1048576 --dtype BF16");
  Load standard = load(model);
  ASSERT_NE(standard.model, nullptr) << standard.error;
  EXPECT_EQ(attnrt_model_max_seq(standard.model.get()), 4096);
  Load small = load(model, 16);
  ASSERT_NE(small.model, nullptr) << small.error;
  EXPECT_EQ(attnrt_model_max_seq(small.model.get()), 16);
  std::vector<int32_t> three = {1, 2, 3};
  EXPECT_EQ(logits(small.model.get(), three).size(), 3u * 101);

  Load full = load(model, 1048576);
  ASSERT_NE(full.model, nullptr) << full.error;
  const attnrt_model_info *info = attnrt_model_get_info(full.model.get());
  EXPECT_EQ(info->max_seq, 1048576);
  EXPECT_EQ(info->kv_cache_bytes, int64_t(256) << 30);
  if (static_cast<uint64_t>(info->kv_cache_bytes) < memAvailable())
    GTEST_SKIP() << "this machine could hold the 256 GiB KV cache";
  long before = residentKiB();
  auto start = std::chrono::steady_clock::now();
  char error[512] = "";
  EXPECT_EQ(attnrt_session_create(full.model.get(), error, sizeof(error)),
            nullptr);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string message = error;
  EXPECT_EQ(message.rfind("the KV cache needs 256.0 GiB (1048576 positions), "
                          "more than the ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find(" of memory available (MemAvailable in "
                         "/proc/meminfo); use a smaller context"),
            std::string::npos)
      << message;
  // Refused before anything was allocated or touched.
  EXPECT_LT(seconds, 0.5);
  EXPECT_LT(residentKiB() - before, 16 * 1024);
}

TEST_F(ModelFolderTest, TheModelFolderCachesWhenWritable) {
  makeModel(model);
  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  Load result = load(model, options);
  ASSERT_NE(result.model, nullptr) << result.error;
  std::string library = attnrt_model_library_path(result.model.get());
  EXPECT_EQ(library.rfind(model + "/.attn/", 0), 0u) << library;
  EXPECT_FALSE(exists(xdg));
}

TEST_F(ModelFolderTest, AReadOnlyModelFolderUsesTheUserCache) {
  makeModel(model);
  // Mode 555, as the shared model folders in CI: not written even by root.
  ASSERT_EQ(chmod(model.c_str(), 0555), 0);
  std::vector<std::string> before = listDir(model);
  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  Load result = load(model, options);
  ASSERT_NE(result.model, nullptr) << result.error;
  std::string library = attnrt_model_library_path(result.model.get());
  EXPECT_EQ(library.rfind(xdg + "/attn/", 0), 0u) << library;
  EXPECT_EQ(listDir(model), before);
  // Created private, as the XDG spec asks.
  struct stat st;
  ASSERT_EQ(stat((xdg + "/attn").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // HOME's cache when XDG_CACHE_HOME is unset (or relative, which the spec
  // says to ignore).
  std::string home = root.file("home");
  ScopedEnv homeEnv("HOME", home.c_str());
  ScopedEnv relative("XDG_CACHE_HOME", "relative/cache");
  Load fromHome = load(model, options);
  ASSERT_NE(fromHome.model, nullptr) << fromHome.error;
  EXPECT_EQ(std::string(attnrt_model_library_path(fromHome.model.get()))
                .rfind(home + "/.cache/attn/", 0),
            0u)
      << attnrt_model_library_path(fromHome.model.get());
}

TEST_F(ModelFolderTest, FallsBackWhenTheFolderCacheCannotBeCreated) {
  makeModel(model);
  // A file where the cache folder would go.
  writeFile(model + "/.attn", "");
  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  Load result = load(model, options);
  ASSERT_NE(result.model, nullptr) << result.error;
  EXPECT_EQ(std::string(attnrt_model_library_path(result.model.get()))
                .rfind(xdg + "/attn/", 0),
            0u);
  ASSERT_FALSE(result.log.empty());
  EXPECT_EQ(result.log[0], "cannot use '" + model +
                               "/.attn' (not a writable folder); caching in "
                               "the "
                               "user's cache folder");
}

TEST_F(ModelFolderTest, AnUnwritableCacheIsAnError) {
  makeModel(model);
  ASSERT_EQ(mkdir(cache.c_str(), 0555), 0);
  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  options.cache_dir = cache.c_str();
  EXPECT_EQ(loadError(model, options),
            "cache folder '" + cache + "' is not writable");
  std::string file = root.file("file");
  writeFile(file, "");
  std::string below = file + "/cache";
  options.cache_dir = below.c_str();
  EXPECT_EQ(loadError(model, options), "cache folder '" + below +
                                           "': cannot create '" + below +
                                           "': Not a directory");
}

TEST_F(ModelFolderTest, AMissingCompilerIsAnError) {
  makeModel(model);
  attnrt_load_options options = attnrt_load_default_options();
  options.cache_dir = cache.c_str();
  options.compiler = "/no/such/attn-compile";
  EXPECT_EQ(loadError(model, options),
            "compiler '/no/such/attn-compile' (from options.compiler): No "
            "such file or directory");
  options.compiler = "no-such-attn-compile";
  EXPECT_EQ(loadError(model, options),
            "compiler 'no-such-attn-compile' (from options.compiler) is not on "
            "PATH");
  options.compiler = nullptr;
  {
    ScopedEnv env("ATTN_COMPILE", "/no/such/attn-compile");
    EXPECT_EQ(loadError(model, options),
              "compiler '/no/such/attn-compile' (from ATTN_COMPILE): No such "
              "file or directory");
  }
  {
    ScopedEnv env("ATTN_COMPILE", model.c_str());
    EXPECT_EQ(loadError(model, options),
              "compiler '" + model +
                  "' (from ATTN_COMPILE) is not an executable file");
  }
  // Nothing was written for a load that failed.
  EXPECT_TRUE(cacheFiles(cache).empty());
}

TEST_F(ModelFolderTest, TheCompilerIsFoundBesideTheRuntime) {
  // No option, no ATTN_COMPILE: this test links build/lib/libattnrt.so, and
  // build/bin/attn-compile is its ../bin/attn-compile.
  makeModel(model);
  attnrt_load_options options = attnrt_load_default_options();
  options.cache_dir = cache.c_str();
  Load result = load(model, options);
  ASSERT_NE(result.model, nullptr) << result.error;
  ASSERT_FALSE(result.log.empty());
  std::string expected = "with '" + realPath(ATTNRT_TEST_ATTN_COMPILE) + "'";
  EXPECT_NE(result.log[0].find(expected), std::string::npos) << result.log[0];
  // $ATTN_COMPILE comes first, and a name is searched in PATH.
  std::string bin = root.file("bin");
  ASSERT_EQ(mkdir(bin.c_str(), 0700), 0);
  ASSERT_EQ(symlink(ATTNRT_TEST_ATTN_COMPILE, (bin + "/my-compile").c_str()),
            0);
  std::string path =
      bin + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  ScopedEnv pathEnv("PATH", path.c_str());
  ScopedEnv env("ATTN_COMPILE", "my-compile");
  options.context = 32; // Another key, so that it compiles.
  Load named = load(model, options);
  ASSERT_NE(named.model, nullptr) << named.error;
  ASSERT_FALSE(named.log.empty());
  EXPECT_NE(named.log[0].find("with '" + bin + "/my-compile'"),
            std::string::npos)
      << named.log[0];
}

TEST_F(ModelFolderTest, AFailingCompileShowsTheCompilersError) {
  makeModel(model);
  std::string config = readFile(model + "/config.json");
  size_t at = config.find("\"num_key_value_heads\": 2");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, 24, "\"num_key_value_heads\": 3");
  writeFile(model + "/config.json", config);
  attnrt_load_options options = attnrt_load_default_options();
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  options.cache_dir = cache.c_str();
  EXPECT_EQ(loadError(model, options),
            "compiling '" + model +
                "' failed (exit code 1): attn-compile: error: " + model +
                "/config.json: num_key_value_heads (3) does not divide "
                "num_attention_heads (4)");
  // A compiler that fails without a word, and one killed by a signal.
  options.compiler = "/bin/false";
  EXPECT_EQ(loadError(model, options),
            "compiling '" + model + "' failed (exit code 1): no message");
  std::string script = root.file("crash.sh");
  writeFile(script, "#!/bin/sh\necho 'about to crash' >&2\nkill -9 $$\n");
  ASSERT_EQ(chmod(script.c_str(), 0700), 0);
  options.compiler = script.c_str();
  EXPECT_EQ(loadError(model, options),
            "compiling '" + model +
                "' failed (killed by signal 9): about to crash");
  // One that succeeds without writing anything.
  options.compiler = "/bin/true";
  std::string error = loadError(model, options);
  EXPECT_NE(error.find("' exited 0 but wrote no library to '"),
            std::string::npos)
      << error;
  // No file is left behind by a failed compile.
  EXPECT_TRUE(cacheFiles(cache).empty());
  // No config.json at all.
  ASSERT_EQ(unlink((model + "/config.json").c_str()), 0);
  options.compiler = ATTNRT_TEST_ATTN_COMPILE;
  EXPECT_EQ(loadError(model, options),
            "model folder '" + model +
                "': config.json: cannot open: No such file or directory");
}

TEST_F(ModelFolderTest, ConcurrentFirstLoadsShareOneLibrary) {
  makeModel(model);
  // Two loads at once with an empty cache: both compile, one publishes, the
  // other uses the published library and removes its own.
  Load results[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i)
    threads[i] = std::thread([&, i] { results[i] = load(model); });
  for (std::thread &thread : threads)
    thread.join();
  for (const Load &result : results)
    ASSERT_NE(result.model, nullptr) << result.error;
  std::vector<std::string> files = cacheFiles(cache);
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);
  std::string library = cache + "/" + files[0];
  int compiled = 0;
  for (const Load &result : results) {
    compiled += attnrt_model_was_compiled(result.model.get());
    EXPECT_EQ(logits(result.model.get(), prompt),
              logits(results[0].model.get(), prompt));
  }
  EXPECT_GE(compiled, 1);
  // Whichever way the race went, a later load reuses what is published.
  Load later = load(model);
  ASSERT_NE(later.model, nullptr) << later.error;
  EXPECT_EQ(attnrt_model_was_compiled(later.model.get()), 0);
  EXPECT_EQ(attnrt_model_library_path(later.model.get()), library);
}

TEST_F(ModelFolderTest, NullArguments) {
  char error[256] = "";
  EXPECT_EQ(attnrt_model_load_dir(nullptr, nullptr, error, sizeof(error)),
            nullptr);
  EXPECT_STREQ(error, "attnrt_model_load_dir: null or empty model folder");
  EXPECT_STREQ(attnrt_model_library_path(nullptr), "");
  EXPECT_EQ(attnrt_model_was_compiled(nullptr), 0);
  attnrt_load_options options = attnrt_load_default_options();
  EXPECT_EQ(options.context, 0);
  EXPECT_EQ(options.compiler, nullptr);
  EXPECT_EQ(options.cache_dir, nullptr);
  EXPECT_EQ(options.log, nullptr);
  EXPECT_EQ(options.log_user, nullptr);
}

} // namespace
