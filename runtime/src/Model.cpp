//===- Model.cpp - loading a compiled model, sessions, prefill/decode -----===//
//
// A model is the dlopened library, its parsed manifest, and one f32 pointer
// per manifest weight: into the mapped safetensors file (or shard) when the
// tensor is F32 and aligned, otherwise into one buffer of converted copies.
// It is never written after load, so sessions on several threads can share
// it.
//
//===----------------------------------------------------------------------===//

#include "attnrt/attnrt.h"
#include "attnrt/version.h"

#include "CompileCache.h"
#include "Half.h"
#include "Manifest.h"
#include "Safetensors.h"
#include "Sampler.h"
#include "Scratch.h"
#include "Support.h"
#include "GgufNames.h"
#include "WeightFiles.h"
#include "attnrt/model_abi.h"

#include <algorithm>
#include <functional>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <memory>
#include <new>

using namespace attnrt;

struct attnrt_model {
  attnrt_model() = default;
  attnrt_model(const attnrt_model &) = delete;
  attnrt_model &operator=(const attnrt_model &) = delete;
  ~attnrt_model() {
    weightFiles.closeAll();
    converted.reset();
    if (library)
      dlclose(library);
  }

  void *library = nullptr;
  attn_model_prefill_fn prefill = nullptr;
  attn_model_decode_fn decode = nullptr;
  attn_model_set_num_threads_fn setNumThreads = nullptr;
  attn_model_pack_fn pack = nullptr;
  attn_model_set_allocator_fn setAllocator = nullptr;
  attn_model_decode_batch_fn decodeBatch = nullptr;
  attn_model_inspect_fn inspect = nullptr;
  attn_model_unembed_fn unembed = nullptr;
  attn_model_set_collectives_fn setCollectives = nullptr;
  /// The tensor-parallel group's hooks the library calls (it keeps the
  /// pointer), from the communicator the model was loaded with.
  attn_model_collectives collectives = {};

  std::string manifestJson;
  Manifest manifest;
  attnrt_model_info info = {};

  WeightFiles weightFiles;
  AlignedBuffer converted;
  /// The weights in the layouts the kernels read, filled by attn_model_pack.
  AlignedBuffer packed;
  /// The table the entry points take: one pointer per manifest weight, then
  /// one per packed buffer.
  std::vector<const float *> weights;
  std::string warnings;
  /// Where the library came from, and whether this load compiled it.
  std::string libraryPath;
  bool wasCompiled = false;
};

/// The KV caches of sessions made together (attnrt_session_create_group):
/// one buffer, a cache after another, which the compiled batched decode
/// takes whole. Shared by its sessions; freed with the last.
struct SessionGroup {
  AlignedBuffer caches;
  int64_t slots = 0;
};

struct attnrt_session {
  const attnrt_model *model = nullptr;
  /// The KV cache: this session's own buffer, or its slot of a group's.
  AlignedBuffer ownCache;
  std::shared_ptr<SessionGroup> group;
  int64_t slot = -1;
  float *kvCache() const {
    if (!group)
      return static_cast<float *>(ownCache.data());
    auto *base = static_cast<char *>(group->caches.data());
    return reinterpret_cast<float *>(base + slot * model->info.kv_cache_bytes);
  }
  // The logits row attnrt_generate samples from.
  AlignedBuffer logitsRow;
  int64_t position = 0;
  /// The compiled code's temporaries, kept between calls.
  ScratchCache scratch;
};

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

static bool loadLibrary(attnrt_model &model, const char *path,
                        std::string &error) {
  std::string where = "library " + quote(path) + ": ";
  // dlopen searches the library path for a bare name; the user means a file.
  std::string openPath = path;
  if (openPath.find('/') == std::string::npos)
    openPath = "./" + openPath;
  model.library = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!model.library) {
    const char *reason = dlerror();
    error = where + "cannot load: " + (reason ? reason : "unknown error");
    return false;
  }
  auto lookup = [&](const char *symbol) {
    return dlsym(model.library, symbol);
  };
  auto manifestFn = reinterpret_cast<attn_model_manifest_fn>(
      lookup(ATTN_MODEL_MANIFEST_SYMBOL));
  model.prefill = reinterpret_cast<attn_model_prefill_fn>(
      lookup(ATTN_MODEL_PREFILL_SYMBOL));
  model.decode =
      reinterpret_cast<attn_model_decode_fn>(lookup(ATTN_MODEL_DECODE_SYMBOL));
  model.setNumThreads = reinterpret_cast<attn_model_set_num_threads_fn>(
      lookup(ATTN_MODEL_SET_NUM_THREADS_SYMBOL));
  model.pack = reinterpret_cast<attn_model_pack_fn>(
      lookup(ATTN_MODEL_PACK_SYMBOL));
  model.setAllocator = reinterpret_cast<attn_model_set_allocator_fn>(
      lookup(ATTN_MODEL_SET_ALLOCATOR_SYMBOL));
  model.decodeBatch = reinterpret_cast<attn_model_decode_batch_fn>(
      lookup(ATTN_MODEL_DECODE_BATCH_SYMBOL));
  model.inspect = reinterpret_cast<attn_model_inspect_fn>(
      lookup(ATTN_MODEL_INSPECT_SYMBOL));
  model.unembed = reinterpret_cast<attn_model_unembed_fn>(
      lookup(ATTN_MODEL_UNEMBED_SYMBOL));
  model.setCollectives = reinterpret_cast<attn_model_set_collectives_fn>(
      lookup(ATTN_MODEL_SET_COLLECTIVES_SYMBOL));
  const char *missing = !manifestFn      ? ATTN_MODEL_MANIFEST_SYMBOL
                        : !model.prefill ? ATTN_MODEL_PREFILL_SYMBOL
                        : !model.decode  ? ATTN_MODEL_DECODE_SYMBOL
                                         : nullptr;
  if (missing) {
    error = where + "does not export " + missing +
            " (not a model built by attn-compile?)";
    return false;
  }
  const char *json = manifestFn();
  if (!json) {
    error = where + "attn_model_manifest() returned NULL";
    return false;
  }
  model.manifestJson = json;
  std::string message;
  if (!parseManifest(model.manifestJson, model.manifest, message)) {
    error = where + "manifest " + message;
    return false;
  }
  // Before any compiled code beyond the manifest runs: a library for a CPU
  // with instructions this one lacks would die of SIGILL.
  if (std::vector<std::string> missing =
          missingCpuFeatures(model.manifest.targetFeatures);
      !missing.empty()) {
    std::string names, cpu = hostCpuBrand();
    for (const std::string &name : missing)
      names += (names.empty() ? "" : ", ") + name;
    error = where + "was compiled for " + model.manifest.targetCpu +
            " and uses " + names + ", which this CPU" +
            (cpu.empty() ? "" : " (" + cpu + ")") +
            " lacks; compile it here (attn-compile without --target, or "
            "--target=x86-64-v3 for any AVX2 machine)";
    return false;
  }
  if (model.manifest.amxTiles && !allowAmxTiles(message)) {
    error = where + "uses AMX tiles (compiled on a CPU with amx-bf16), but " +
            message + "; recompile without them (attn-compile --no-amx)";
    return false;
  }
  // Compiled code takes its temporaries from the calling session's cache.
  if (model.setAllocator)
    model.setAllocator(scratchAllocate, scratchRelease);
  if (!model.manifest.packed.empty() && !model.pack) {
    error = where + "its manifest lists packed weights but it does not export " +
            ATTN_MODEL_PACK_SYMBOL;
    return false;
  }
  const Manifest &m = model.manifest;
  attnrt_model_info &info = model.info;
  info.architecture = m.architecture.c_str();
  info.vocab_size = m.vocabSize;
  info.hidden_size = m.hiddenSize;
  info.num_layers = m.numLayers;
  info.num_heads = m.numHeads;
  info.num_kv_heads = m.numKvHeads;
  info.head_dim = m.headDim;
  info.intermediate_size = m.intermediateSize;
  info.max_seq = m.maxSeq;
  info.kv_cache_bytes = m.kvCacheBytes;
  info.num_weights = static_cast<int64_t>(m.weights.size());
  info.weight_format = m.weightFormat.c_str();
  info.kv_format = m.kvFormat.c_str();
  info.attn_version = m.attnVersion.c_str();
  // The inspected arrays are shaped by the dimensions the manifest may omit.
  info.can_inspect = model.inspect && model.unembed && m.numLayers > 0 &&
                     m.numHeads > 0 && m.hiddenSize > 0;
  info.tensor_parallel = static_cast<int32_t>(m.tensorParallel);
  info.num_experts = m.numExperts;
  info.experts_per_token = m.expertsPerToken;
  return true;
}

/// Makes this process rank comm->rank of the library's tensor-parallel
/// group (before packing, which reads the rank's slices), or checks that a
/// library of the whole model has no group.
static bool joinGroup(attnrt_model &model, const char *path,
                      const attnrt_communicator *comm, std::string &error) {
  std::string where = "library " + quote(path) + ": ";
  int64_t ranks = model.manifest.tensorParallel;
  int64_t size = comm ? comm->size : 1;
  if (ranks == 1 && size == 1)
    return true;
  if (ranks == 1) {
    error = where + format("is the whole model (not compiled with --tensor-parallel) "
                           "but the group has %lld ranks",
                           static_cast<long long>(size));
    return false;
  }
  if (!comm) {
    error = where + format("is one rank of a %lld-way tensor-parallel split: load it "
                           "with a communicator of %lld ranks (mpirun -np %lld)",
                           static_cast<long long>(ranks), static_cast<long long>(ranks),
                           static_cast<long long>(ranks));
    return false;
  }
  if (size != ranks) {
    error = where + format("is one rank of a %lld-way tensor-parallel split but the "
                           "group has %lld ranks",
                           static_cast<long long>(ranks), static_cast<long long>(size));
    return false;
  }
  if (comm->rank < 0 || comm->rank >= size || !comm->all_reduce_sum || !comm->all_gather) {
    error = where + format("the communicator is invalid (rank %d of %d, or a null hook)",
                           comm->rank, comm->size);
    return false;
  }
  if (!model.setCollectives) {
    error = where + "its manifest says tensor_parallel but it does not export " +
            ATTN_MODEL_SET_COLLECTIVES_SYMBOL;
    return false;
  }
  model.collectives = {comm->rank, comm->size, comm->context, comm->all_reduce_sum,
                       comm->all_gather};
  model.setCollectives(&model.collectives);
  model.info.rank = comm->rank;
  return true;
}

/// Index of the first NaN/Inf in data[0, n), or -1. Blocks of branch-free
/// ORs vectorize; only a block that has a hit is searched again.
static int64_t findNonFinite(const float *data, int64_t n) {
  constexpr int64_t block = 1024;
  for (int64_t start = 0; start < n; start += block) {
    int64_t end = std::min(n, start + block);
    uint32_t any = 0;
    for (int64_t i = start; i < end; ++i)
      any |= isNonFinite(floatToBits(data[i]));
    if (!any)
      continue;
    for (int64_t i = start; i < end; ++i)
      if (isNonFinite(floatToBits(data[i])))
        return i;
  }
  return -1;
}

/// "[1, 7]": the multi-dimensional index of flat element `flat`.
static std::string unflatten(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return formatShape(index);
}

/// Reads a GGUF tensor's `elements` values at `src` into `dst`: its ggml
/// blocks dequantized, then the q/k rows llama.cpp's converter interleaved
/// put back in Hugging Face's order, or a transposed matrix transposed back
/// (both read whole tensors only), or Gemma's 1 + w norm weights shifted
/// back (in f32: exact whenever the converter's 1 + w was).
static void convertGgmlToF32(const TensorInfo &tensor, const uint8_t *src,
                             float *dst, int64_t elements) {
  dequantizeGgmlRow(tensor.ggml, src, dst, elements);
  if (tensor.shiftedNorm)
    for (int64_t i = 0; i < elements; ++i)
      dst[i] -= 1.0f;
  if (tensor.transposed && elements > 0) {
    // The file's rows are Hugging Face's columns.
    int64_t rows = tensor.shape[0], columns = tensor.shape[1];
    std::vector<float> file(dst, dst + elements);
    for (int64_t c = 0; c < columns; ++c)
      for (int64_t r = 0; r < rows; ++r)
        dst[r * columns + c] = file[static_cast<size_t>(c * rows + r)];
    return;
  }
  int64_t headDim = tensor.interleavedHeadDim;
  if (headDim == 0 || elements == 0)
    return;
  int64_t rowLength = tensor.shape.back();
  int64_t headSize = headDim * rowLength;
  std::vector<float> head(static_cast<size_t>(headSize));
  for (int64_t start = 0; start < elements; start += headSize) {
    std::memcpy(head.data(), dst + start, static_cast<size_t>(headSize) * 4);
    for (int64_t row = 0; row < headDim; ++row)
      std::memcpy(dst + start + row * rowLength,
                  head.data() + ggufPermutedRow(row, headDim) * rowLength,
                  static_cast<size_t>(rowLength) * 4);
  }
}

/// Widens `elements` values of `dtype` at `src` into `dst`.
static void convertToF32(DType dtype, const uint8_t *src, float *dst,
                         int64_t elements) {
  switch (dtype) {
  case DType::F32:
    std::memcpy(dst, src, static_cast<size_t>(elements) * 4);
    return;
  case DType::F16:
  case DType::BF16: {
    bool half = dtype == DType::F16;
    for (int64_t i = 0; i < elements; ++i) {
      // The source may be oddly aligned; memcpy compiles to a plain load.
      uint16_t bits;
      std::memcpy(&bits, src + 2 * i, 2);
      dst[i] = half ? halfToFloat(bits) : bfloat16ToFloat(bits);
    }
    return;
  }
  default:
    return; // Rejected before conversion.
  }
}

static bool isIgnored(const Manifest &manifest, const std::string &name) {
  for (const std::string &prefix : manifest.ignoredPrefixes)
    if (name.compare(0, prefix.size(), prefix) == 0)
      return true;
  for (const std::string &suffix : manifest.ignoredSuffixes)
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  for (const std::string &ignored : manifest.ignoredNames) {
    if (name == ignored)
      return true;
    for (const std::string &prefix : manifest.namePrefixes)
      if (name.size() == prefix.size() + ignored.size() &&
          name.compare(0, prefix.size(), prefix) == 0 &&
          name.compare(prefix.size(), std::string::npos, ignored) == 0)
        return true;
  }
  return false;
}

// The pointer handed out for weights with no elements: valid, never read.
alignas(64) static const float emptyWeight[16] = {};

/// Tells the kernel the pages of [data, data + bytes) will not be read
/// again: they are dropped (mapped file pages are re-read on a later access;
/// anonymous ones read as zero). Only whole pages inside the range.
static void releasePages(const void *data, size_t bytes) {
  const uintptr_t page = 4096;
  uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(page - 1);
  if (end > begin)
    madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

/// Allocates the packed buffers the manifest lists, lets the library fill
/// them one by one from the loaded weights (attn_model_pack), appends them to
/// the weight table, and releases each weight only packing reads as soon as
/// its last packed buffer is filled. `prepare(weight)` is called before the
/// first buffer that reads a weight (it widens an F16/BF16 one to F32 then).
/// Largest buffers first: resident memory peaks near one copy of the
/// weights plus the largest buffer's sources, not two copies.
static bool packWeights(attnrt_model &model, const std::string &where,
                        const std::function<bool(size_t)> &prepare,
                        std::string &error) {
  const Manifest &manifest = model.manifest;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const PackedSpec &spec : manifest.packed) {
    offsets.push_back(total);
    size_t bytes = (static_cast<size_t>(spec.bytes) + 63) / 64 * 64;
    if (__builtin_add_overflow(total, bytes, &total)) {
      error = where + "packed weights too large";
      return false;
    }
  }
  // Not zero-filled: attn_model_pack writes every byte, padding included,
  // and pages untouched until then are not resident.
  if (!manifest.packed.empty() && !model.packed.allocate(total, /*zeroFill=*/false)) {
    error = where + format("cannot allocate %zu bytes for the packed weights",
                           total);
    return false;
  }
  for (size_t offset : offsets)
    model.weights.push_back(reinterpret_cast<const float *>(
        static_cast<uint8_t *>(model.packed.data()) + offset));
  std::vector<float *> table;
  for (const float *pointer : model.weights)
    table.push_back(const_cast<float *>(pointer));

  auto release = [&](size_t weight) {
    if (!manifest.weights[weight].usedAtRunTime &&
        model.weights[weight] != emptyWeight)
      releasePages(model.weights[weight],
                   static_cast<size_t>(manifest.weights[weight].elements) * 4);
  };
  std::vector<size_t> uses(manifest.weights.size(), 0);
  for (const PackedSpec &spec : manifest.packed)
    for (size_t source : spec.sources)
      ++uses[source];
  std::vector<size_t> order(manifest.packed.size());
  for (size_t j = 0; j < order.size(); ++j)
    order[j] = j;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    int64_t bx = manifest.packed[x].bytes, by = manifest.packed[y].bytes;
    return bx != by ? bx > by : x < y;
  });
  std::vector<bool> prepared(manifest.weights.size(), false);
  for (size_t j : order) {
    for (size_t source : manifest.packed[j].sources) {
      if (!prepared[source] && !prepare(source))
        return false;
      prepared[source] = true;
    }
    int32_t status = model.pack(table.data(), static_cast<int32_t>(j));
    if (status != ATTN_MODEL_OK) {
      error = where + format("attn_model_pack failed on packed buffer %zu "
                             "(\"%s\") with code %d",
                             j, manifest.packed[j].name.c_str(), status);
      return false;
    }
    for (size_t source : manifest.packed[j].sources)
      if (--uses[source] == 0)
        release(source);
  }
  // Weights nothing reads at all.
  for (size_t i = 0; i < manifest.weights.size(); ++i)
    if (uses[i] == 0)
      release(i);
  return true;
}

static bool loadWeights(attnrt_model &model, const std::string &path,
                        std::string &error) {
  WeightFiles &files = model.weightFiles;
  if (!files.open(path, error))
    return false;
  const Manifest &manifest = model.manifest;
  const std::string &where = files.where();

  // Pass 1, cheap checks for every weight: presence, shape, dtype. Plan where
  // each one lives.
  struct Binding {
    size_t tensor;
    bool inPlace;
    size_t offset; // Into model.converted when !inPlace.
    /// The weight's elements within the tensor: all of them, or a slice of
    /// stacked experts (WeightSpec::sliceOf).
    int64_t first, elements;
  };
  // Tensor `t` (or its elements from `first` on) in the file's bytes.
  auto dataOf = [&](const Binding &binding) {
    return files.tensorData(binding.tensor) +
           binding.first * static_cast<int64_t>(dtypeSize(files.tensor(binding.tensor).dtype));
  };
  std::vector<Binding> bindings;
  bindings.reserve(manifest.weights.size());
  std::vector<bool> used(files.numTensors(), false);
  size_t convertedBytes = 0;
  // A tensor by `name`, or under one of the manifest's prefixes; -1.
  auto lookUp = [&](const std::string &name, std::string &tried) {
    int64_t found = files.find(name);
    tried += (tried.empty() ? "" : ", ") + quote(name);
    for (size_t p = 0; found < 0 && p < manifest.namePrefixes.size(); ++p) {
      std::string candidate = manifest.namePrefixes[p] + name;
      found = files.find(candidate);
      tried += ", " + quote(candidate);
    }
    return found;
  };
  for (const WeightSpec &weight : manifest.weights) {
    std::string tried;
    int64_t found = lookUp(weight.name, tried);
    // Else its slice of stacked experts, as transformers 5 saves them.
    const bool slice = found < 0 && !weight.sliceOf.empty();
    if (slice)
      found = lookUp(weight.sliceOf, tried);
    if (found < 0) {
      error = where + "missing tensor " + quote(weight.name) +
              " required by the model (tried " + tried + ")";
      return false;
    }
    size_t index = static_cast<size_t>(found);
    const TensorInfo &tensor = files.tensor(index);
    std::string tensorWhere =
        files.fileWhere(files.fileOf(index)) + "tensor " + quote(tensor.name);
    if (tensor.name != weight.name)
      tensorWhere += " (weight " + quote(weight.name) + ")";
    const std::vector<int64_t> &expected = slice ? weight.sliceShape : weight.shape;
    if (tensor.shape != expected) {
      error = tensorWhere + " has shape " + formatShape(tensor.shape) +
              ", the model expects " + formatShape(expected);
      return false;
    }
    if (tensor.isGgml && !canDequantizeGgml(tensor.ggml)) {
      error = tensorWhere + " has ggml type " + ggmlTypeTraits(tensor.ggml).name +
              ", which Attn does not read (it reads f32, f16, bf16, q4_0, q4_1, "
              "q5_0, q5_1, q8_0, q4_K, q5_K and q6_K)";
      return false;
    }
    if (!tensor.isGgml && tensor.dtype != DType::F32 &&
        tensor.dtype != DType::F16 && tensor.dtype != DType::BF16) {
      error = tensorWhere + " has dtype " + dtypeName(tensor.dtype) +
              "; only F32, F16 and BF16 weights can be loaded";
      return false;
    }
    if (tensor.isGgml && slice) {
      error = tensorWhere + " would be read as a slice of stacked experts, "
                            "which GGUF files do not hold";
      return false;
    }
    if (tensor.transposed && weight.elements != tensor.elements) {
      error = tensorWhere + " is stored transposed in the GGUF file and "
                            "cannot be read in part";
      return false;
    }
    used[index] = true;
    Binding binding = {index, false, 0, slice ? weight.sliceOffset : 0,
                       weight.elements};
    binding.inPlace = tensor.dtype == DType::F32 && tensor.interleavedHeadDim == 0 &&
                      !tensor.transposed && !tensor.shiftedNorm &&
                      (files.fileOffset(index) + 4 * binding.first) % alignof(float) == 0;
    if (!binding.inPlace && binding.elements > 0) {
      binding.offset = convertedBytes;
      // 64-byte aligned starts: what vectorized kernels like to see.
      size_t bytes = (static_cast<size_t>(binding.elements) * 4 + 63) / 64 * 64;
      if (__builtin_add_overflow(convertedBytes, bytes, &convertedBytes)) {
        error = where + "weights too large to convert";
        return false;
      }
    }
    bindings.push_back(binding);
  }

  // Not zero-filled: the conversion below writes every weight byte.
  if (convertedBytes > 0 &&
      !model.converted.allocate(convertedBytes, /*zeroFill=*/false)) {
    error = where + format("cannot allocate %zu bytes for the F16/BF16 weights "
                           "widened to F32",
                           convertedBytes);
    return false;
  }

  // Pass 2: convert what needs converting and check every value is finite.
  // An F16/BF16 weight only packing reads is widened just before the first
  // packed buffer that reads it (packWeights) and released after the last:
  // a bf16 checkpoint then never holds all of its weights in F32 at once
  // (a mixture of experts is mostly such weights).
  auto widen = [&](size_t i) {
    const Binding &binding = bindings[i];
    const TensorInfo &tensor = files.tensor(binding.tensor);
    const float *data = model.weights[i];
    if (!binding.inPlace && binding.elements > 0 && tensor.isGgml)
      convertGgmlToF32(tensor, dataOf(binding), const_cast<float *>(data),
                       binding.elements);
    else if (!binding.inPlace && binding.elements > 0)
      convertToF32(tensor.dtype, dataOf(binding), const_cast<float *>(data),
                   binding.elements);
    int64_t bad = findNonFinite(data, binding.elements);
    if (bad >= 0) {
      float value = data[bad];
      error = files.fileWhere(files.fileOf(binding.tensor)) + "tensor " +
              quote(tensor.name) +
              format(" element %lld ", static_cast<long long>(binding.first + bad)) +
              unflatten(binding.first + bad, tensor.shape) + " is " +
              (value != value ? "NaN"
               : value > 0    ? "+Inf"
                              : "-Inf") +
              " (non-finite weights are rejected)";
      return false;
    }
    return true;
  };
  model.weights.reserve(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding &binding = bindings[i];
    const float *data = emptyWeight;
    if (binding.elements > 0)
      data = binding.inPlace
                 ? reinterpret_cast<const float *>(dataOf(binding))
                 : reinterpret_cast<const float *>(
                       static_cast<uint8_t *>(model.converted.data()) + binding.offset);
    model.weights.push_back(data);
    if (!binding.inPlace && !manifest.weights[i].usedAtRunTime)
      continue; // widened when packed
    if (!widen(i))
      return false;
    // A mapped weight only packing reads leaves resident memory now; packing
    // faults it back in from the page cache, one buffer at a time.
    if (binding.inPlace && !manifest.weights[i].usedAtRunTime &&
        data != emptyWeight)
      releasePages(data, static_cast<size_t>(binding.elements) * 4);
  }

  model.warnings += files.warnings();
  for (size_t t = 0; t < files.numTensors(); ++t)
    if (!used[t] && !isIgnored(manifest, files.tensor(t).name))
      model.warnings += files.fileWhere(files.fileOf(t)) + "tensor " +
                        quote(files.tensor(t).name) +
                        " is not used by the model; ignored\n";

  auto prepare = [&](size_t i) {
    return bindings[i].inPlace || manifest.weights[i].usedAtRunTime || widen(i);
  };
  if (!packWeights(model, where, prepare, error))
    return false;

  // A file no run-time weight points into is unmapped now (its weights were
  // copied, or only packing read them), so resident memory holds one copy of
  // the weights.
  std::vector<bool> readsMapping(files.numFiles(), false);
  for (size_t i = 0; i < bindings.size(); ++i)
    if (bindings[i].inPlace && manifest.weights[i].usedAtRunTime &&
        model.weights[i] != emptyWeight)
      readsMapping[files.fileOf(bindings[i].tensor)] = true;
  for (size_t f = 0; f < files.numFiles(); ++f)
    if (!readsMapping[f])
      files.close(f);
  return true;
}

//===----------------------------------------------------------------------===//
// C API: models
//===----------------------------------------------------------------------===//

extern "C" {

attnrt_model *attnrt_model_load(const char *library_path,
                                const char *weights_path, char *error,
                                size_t error_size) {
  return attnrt_model_load_parallel(library_path, weights_path, nullptr, error,
                                    error_size);
}

attnrt_model *attnrt_model_load_parallel(const char *library_path,
                                         const char *weights_path,
                                         const attnrt_communicator *comm,
                                         char *error, size_t error_size) {
  return guarded<attnrt_model *>(
      error, error_size, nullptr, [&]() -> attnrt_model * {
        if (!library_path || !weights_path) {
          copyError("attnrt_model_load: null library or weights path", error,
                    error_size);
          return nullptr;
        }
        auto model = std::make_unique<attnrt_model>();
        std::string message;
        if (!loadLibrary(*model, library_path, message) ||
            !joinGroup(*model, library_path, comm, message) ||
            !loadWeights(*model, weights_path, message)) {
          copyError(message, error, error_size);
          return nullptr;
        }
        model->libraryPath = library_path;
        return model.release();
      });
}

attnrt_load_options attnrt_load_default_options(void) {
  attnrt_load_options options;
  std::memset(&options, 0, sizeof(options));
  return options;
}

attnrt_model *attnrt_model_load_dir(const char *model_dir,
                                    const attnrt_load_options *options,
                                    char *error, size_t error_size) {
  return attnrt_model_load_dir_parallel(model_dir, options, nullptr, error, error_size);
}

attnrt_model *attnrt_model_load_dir_parallel(const char *model_dir,
                                             const attnrt_load_options *options,
                                             const attnrt_communicator *group,
                                             char *error, size_t error_size) {
  return guarded<attnrt_model *>(
      error, error_size, nullptr, [&]() -> attnrt_model * {
        if (!model_dir || !*model_dir) {
          copyError("attnrt_model_load_dir: null or empty model folder",
                    error, error_size);
          return nullptr;
        }
        attnrt_load_options o =
            options ? *options : attnrt_load_default_options();
        if (o.context < 0) {
          copyError(format("attnrt_model_load_dir: context must be 0 (the "
                           "default) or positive, got %lld",
                           static_cast<long long>(o.context)),
                    error, error_size);
          return nullptr;
        }
        CompileSettings settings;
        settings.modelDir = model_dir;
        settings.context = o.context;
        settings.compiler = o.compiler ? o.compiler : "";
        settings.weightFormat = o.weight_format ? o.weight_format : "";
        const std::string &wf = settings.weightFormat;
        if (!wf.empty() && !isWeightFormat(wf)) {
          copyError("attnrt_model_load_dir: weight format '" + wf +
                        "' is not one of f32, bf16, q8_0, q4_0",
                    error, error_size);
          return nullptr;
        }
        settings.kvFormat = o.kv_format ? o.kv_format : "";
        if (!settings.kvFormat.empty() && !isKvFormat(settings.kvFormat)) {
          copyError("attnrt_model_load_dir: KV cache format '" + settings.kvFormat +
                        "' is not one of f32, bf16, f16",
                    error, error_size);
          return nullptr;
        }
        settings.headFormat = o.head_format ? o.head_format : "";
        if (!settings.headFormat.empty() && !isWeightFormat(settings.headFormat)) {
          copyError("attnrt_model_load_dir: head format '" + settings.headFormat +
                        "' is not one of f32, bf16, q8_0, q4_0",
                    error, error_size);
          return nullptr;
        }
        settings.inspect = o.inspect != 0;
        const attnrt_communicator *comm = group && group->size > 1 ? group : nullptr;
        settings.tensorParallel = comm ? comm->size : 1;
        settings.cacheDir = o.cache_dir ? o.cache_dir : "";
        settings.log = o.log;
        settings.logUser = o.log_user;
        CompileCache cache;
        std::string message;
        if (!cache.prepare(settings, message)) {
          copyError(message, error, error_size);
          return nullptr;
        }

        std::unique_ptr<attnrt_model> model;
        std::string library = cache.lookup(), bad;
        if (!library.empty()) {
          model = std::make_unique<attnrt_model>();
          if (!loadLibrary(*model, library.c_str(), message)) {
            // A cached build is disposable: one that does not load (another
            // ABI, a damaged file) is rebuilt, once.
            cache.log("cached " + message + "; rebuilding");
            model.reset();
            bad = library;
            library.clear();
          }
        }
        bool compiled = false;
        if (library.empty()) {
          if (!cache.compile(bad, library, message)) {
            copyError(message, error, error_size);
            return nullptr;
          }
          compiled = true;
          model = std::make_unique<attnrt_model>();
          if (!loadLibrary(*model, library.c_str(), message)) {
            copyError(message, error, error_size);
            return nullptr;
          }
        }
        if (!joinGroup(*model, library.c_str(), comm, message) ||
            !loadWeights(*model, model_dir, message)) {
          copyError(message, error, error_size);
          return nullptr;
        }
        model->libraryPath = library;
        model->wasCompiled = compiled;
        return model.release();
      });
}

const char *attnrt_model_library_path(const attnrt_model *model) {
  return model ? model->libraryPath.c_str() : "";
}

int attnrt_model_was_compiled(const attnrt_model *model) {
  return model && model->wasCompiled ? 1 : 0;
}

void attnrt_model_free(attnrt_model *model) { delete model; }

const attnrt_model_info *attnrt_model_get_info(const attnrt_model *model) {
  return model ? &model->info : nullptr;
}

int64_t attnrt_model_vocab_size(const attnrt_model *model) {
  return model ? model->info.vocab_size : 0;
}

int64_t attnrt_model_max_seq(const attnrt_model *model) {
  return model ? model->info.max_seq : 0;
}

const char *attnrt_version(void) { return ATTNRT_VERSION; }

const char *attnrt_model_weight_format(const attnrt_model *model) {
  return model ? model->info.weight_format : "";
}

const char *attnrt_model_architecture(const attnrt_model *model) {
  return model ? model->info.architecture : "";
}

const char *attnrt_model_manifest(const attnrt_model *model) {
  return model ? model->manifestJson.c_str() : "";
}

const char *attnrt_model_warnings(const attnrt_model *model) {
  return model ? model->warnings.c_str() : "";
}

int attnrt_model_set_num_threads(attnrt_model *model, int32_t n) {
  if (!model || !model->setNumThreads)
    return 0;
  model->setNumThreads(n);
  return 1;
}

//===----------------------------------------------------------------------===//
// C API: sessions
//===----------------------------------------------------------------------===//

static int fail(int code, const std::string &message, char *error,
                size_t errorSize) {
  copyError(message, error, errorSize);
  return code;
}

/// Fails (with the message) when `caches` sessions' KV caches and a logits
/// row do not fit the memory available: the buffers are zero-filled, and
/// touching more than the machine has ends in the OOM killer (or swap), not
/// in a failed allocation.
static bool checkSessionMemory(const attnrt_model *model, int64_t caches, char *error,
                               size_t errorSize) {
  size_t kvBytes = static_cast<size_t>(model->info.kv_cache_bytes) * caches;
  size_t rowBytes = static_cast<size_t>(model->info.vocab_size) * sizeof(float) * caches;
  const char *source = "";
  uint64_t available = availableMemory(source);
  if (static_cast<uint64_t>(kvBytes) + rowBytes <= available)
    return true;
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  std::string what = caches == 1 ? std::string("the KV cache needs")
                                 : format("%lld KV caches need", static_cast<long long>(caches));
  copyError(format("%s %.1f GiB (%lld positions%s), more than the %.1f GiB of memory "
                   "available (%s); use a smaller context",
                   what.c_str(), static_cast<double>(kvBytes + rowBytes) / gib,
                   static_cast<long long>(model->info.max_seq), caches == 1 ? "" : " each",
                   static_cast<double>(available) / gib, source),
            error, errorSize);
  return false;
}

/// A session of `model`: with its own KV cache, or with slot `slot` of
/// `group`'s.
static std::unique_ptr<attnrt_session> newSession(const attnrt_model *model,
                                                  std::shared_ptr<SessionGroup> group,
                                                  int64_t slot, char *error,
                                                  size_t errorSize) {
  auto session = std::make_unique<attnrt_session>();
  session->model = model;
  size_t kvBytes = static_cast<size_t>(model->info.kv_cache_bytes);
  if (group) {
    session->group = std::move(group);
    session->slot = slot;
  } else if (!session->ownCache.allocate(kvBytes)) {
    copyError(format("cannot allocate the KV cache (%zu bytes)", kvBytes), error, errorSize);
    return nullptr;
  }
  size_t rowBytes = static_cast<size_t>(model->info.vocab_size) * sizeof(float);
  if (!session->logitsRow.allocate(rowBytes)) {
    copyError(format("cannot allocate a logits row (%zu bytes)", rowBytes), error, errorSize);
    return nullptr;
  }
  return session;
}

attnrt_session *attnrt_session_create(const attnrt_model *model, char *error,
                                      size_t error_size) {
  return guarded<attnrt_session *>(
      error, error_size, nullptr, [&]() -> attnrt_session * {
        if (!model) {
          copyError("attnrt_session_create: null model", error, error_size);
          return nullptr;
        }
        if (!checkSessionMemory(model, 1, error, error_size))
          return nullptr;
        return newSession(model, nullptr, 0, error, error_size).release();
      });
}

int attnrt_session_create_group(const attnrt_model *model, int64_t n,
                                attnrt_session **sessions, char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!model || !sessions || n < 1)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_session_create_group: null model or sessions, or n < 1", error,
                  error_size);
    if (!checkSessionMemory(model, n, error, error_size))
      return ATTNRT_ERROR_MEMORY;
    auto group = std::make_shared<SessionGroup>();
    group->slots = n;
    size_t bytes = static_cast<size_t>(model->info.kv_cache_bytes) * n;
    if (!group->caches.allocate(bytes))
      return fail(ATTNRT_ERROR_MEMORY,
                  format("cannot allocate %lld KV caches (%zu bytes)",
                         static_cast<long long>(n), bytes),
                  error, error_size);
    std::vector<std::unique_ptr<attnrt_session>> made;
    for (int64_t slot = 0; slot < n; ++slot) {
      made.push_back(newSession(model, group, slot, error, error_size));
      if (!made.back())
        return ATTNRT_ERROR_MEMORY;
    }
    for (int64_t i = 0; i < n; ++i)
      sessions[i] = made[i].release();
    return ATTNRT_OK;
  });
}

void attnrt_session_free(attnrt_session *session) { delete session; }

void attnrt_session_reset(attnrt_session *session) {
  if (session)
    session->position = 0;
}

int64_t attnrt_session_position(const attnrt_session *session) {
  return session ? session->position : 0;
}

static const char *modelErrorName(int32_t code) {
  switch (code) {
  case ATTN_MODEL_ERROR_POSITION:
    return "position out of range";
  case ATTN_MODEL_ERROR_TOKEN:
    return "token out of range";
  default:
    return "unknown error";
  }
}

/// Fails with the first token id outside [0, vocab).
static int checkTokens(const int32_t *tokens, int64_t n, int64_t vocab, char *error,
                       size_t errorSize) {
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return fail(ATTNRT_ERROR_TOKEN,
                  format("token %d at index %lld is outside the vocabulary "
                         "[0, %lld)",
                         tokens[i], static_cast<long long>(i),
                         static_cast<long long>(vocab)),
                  error, errorSize);
  return ATTNRT_OK;
}

int attnrt_prefill(attnrt_session *session, const int32_t *tokens, int64_t n,
                   float *logits, int all_logits, char *error,
                   size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!session || !tokens || !logits)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_prefill: null session, tokens or logits", error,
                  error_size);
    if (n < 1)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  format("prefill needs at least one token, got %lld",
                         static_cast<long long>(n)),
                  error, error_size);
    const attnrt_model &model = *session->model;
    int64_t maxSeq = model.info.max_seq;
    int64_t position = session->position;
    if (n > maxSeq - position)
      return fail(ATTNRT_ERROR_POSITION,
                  format("prompt of %lld tokens at position %lld exceeds the "
                         "context of %lld positions",
                         static_cast<long long>(n),
                         static_cast<long long>(position),
                         static_cast<long long>(maxSeq)),
                  error, error_size);
    if (int code = checkTokens(tokens, n, model.info.vocab_size, error, error_size))
      return code;
    ScratchScope scratch(session->scratch);
    int32_t code = model.prefill(tokens, n, position, model.weights.data(),
                                 session->kvCache(),
                                 logits, all_logits ? 1 : 0);
    if (code != ATTN_MODEL_OK)
      return fail(ATTNRT_ERROR_MODEL,
                  format("compiled prefill failed with code %d (%s)", code,
                         modelErrorName(code)),
                  error, error_size);
    session->position += n;
    return ATTNRT_OK;
  });
}

int attnrt_decode(attnrt_session *session, int32_t token, float *logits,
                  char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!session || !logits)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_decode: null session or logits", error, error_size);
    const attnrt_model &model = *session->model;
    int64_t maxSeq = model.info.max_seq;
    int64_t position = session->position;
    if (position >= maxSeq)
      return fail(ATTNRT_ERROR_POSITION,
                  format("decode at position %lld exceeds the context of %lld "
                         "positions",
                         static_cast<long long>(position),
                         static_cast<long long>(maxSeq)),
                  error, error_size);
    int64_t vocab = model.info.vocab_size;
    if (token < 0 || token >= vocab)
      return fail(ATTNRT_ERROR_TOKEN,
                  format("token %d is outside the vocabulary [0, %lld)", token,
                         static_cast<long long>(vocab)),
                  error, error_size);
    ScratchScope scratch(session->scratch);
    int32_t code =
        model.decode(token, position, model.weights.data(),
                     session->kvCache(), logits);
    if (code != ATTN_MODEL_OK)
      return fail(ATTNRT_ERROR_MODEL,
                  format("compiled decode failed with code %d (%s)", code,
                         modelErrorName(code)),
                  error, error_size);
    session->position += 1;
    return ATTNRT_OK;
  });
}

int attnrt_decode_batch(attnrt_session *const *sessions, const int32_t *tokens, int64_t n,
                        float *logits, char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!sessions || !tokens || !logits || n < 1)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_decode_batch: null sessions, tokens or logits, or n < 1", error,
                  error_size);
    const attnrt_model *model = sessions[0] ? sessions[0]->model : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      const attnrt_session *session = sessions[i];
      auto bad = [&](int code, const std::string &what) {
        return fail(code, format("attnrt_decode_batch: session %lld ", static_cast<long long>(i)) +
                              what,
                    error, error_size);
      };
      if (!session)
        return bad(ATTNRT_ERROR_ARGUMENT, "is null");
      if (session->model != model)
        return bad(ATTNRT_ERROR_ARGUMENT, "belongs to another model than session 0");
      for (int64_t j = 0; j < i; ++j)
        if (sessions[j] == session)
          return bad(ATTNRT_ERROR_ARGUMENT,
                     format("is also session %lld", static_cast<long long>(j)));
      if (session->position >= model->info.max_seq)
        return bad(ATTNRT_ERROR_POSITION,
                   format("is at position %lld, past the context of %lld positions",
                          static_cast<long long>(session->position),
                          static_cast<long long>(model->info.max_seq)));
      if (tokens[i] < 0 || tokens[i] >= model->info.vocab_size)
        return bad(ATTNRT_ERROR_TOKEN,
                   format("has token %d, outside the vocabulary [0, %lld)", tokens[i],
                          static_cast<long long>(model->info.vocab_size)));
    }
    // Checked: no step can fail on its arguments now. Sessions of one group
    // run as one batch when the library has the batched entry point.
    const int64_t vocab = model->info.vocab_size;
    const std::shared_ptr<SessionGroup> &group = sessions[0]->group;
    // One row is the decode entry point's: its kernels are the matrix-vector
    // ones, faster for a single row than the batch's matrix products.
    bool together = n > 1 && model->decodeBatch && group &&
                    std::all_of(sessions, sessions + n,
                                [&](const attnrt_session *s) { return s->group == group; });
    if (together) {
      std::vector<int64_t> positions(n), slots(n);
      for (int64_t i = 0; i < n; ++i) {
        positions[i] = sessions[i]->position;
        slots[i] = sessions[i]->slot;
      }
      ScratchScope scratch(sessions[0]->scratch);
      int32_t code = model->decodeBatch(tokens, positions.data(), slots.data(), n,
                                        model->weights.data(),
                                        static_cast<float *>(group->caches.data()), group->slots,
                                        logits);
      if (code != ATTN_MODEL_OK)
        return fail(ATTNRT_ERROR_MODEL,
                    format("compiled batched decode failed with code %d (%s)", code,
                           modelErrorName(code)),
                    error, error_size);
      for (int64_t i = 0; i < n; ++i)
        sessions[i]->position += 1;
      return ATTNRT_OK;
    }
    for (int64_t i = 0; i < n; ++i)
      if (int code = attnrt_decode(sessions[i], tokens[i], logits + i * vocab, error, error_size))
        return code;
    return ATTNRT_OK;
  });
}

/// Fails unless the session's library can inspect.
static int checkCanInspect(const attnrt_session *session, const char *function,
                           char *error, size_t errorSize) {
  if (session->model->info.can_inspect)
    return ATTNRT_OK;
  return fail(ATTNRT_ERROR_ARGUMENT,
              std::string(function) +
                  ": the model's library has no inspection entry points; load it "
                  "with attnrt_load_options.inspect (attn-compile --inspect)",
              error, errorSize);
}

int attnrt_inspect(attnrt_session *session, const int32_t *tokens, int64_t n,
                   float *attention, float *residual, float *final_norm,
                   float *logits, char *error, size_t error_size) {
  return attnrt_inspect_routing(session, tokens, n, attention, residual, final_norm, logits,
                                nullptr, nullptr, error, error_size);
}

int attnrt_inspect_routing(attnrt_session *session, const int32_t *tokens, int64_t n,
                           float *attention, float *residual, float *final_norm,
                           float *logits, int32_t *experts, float *expert_weights,
                           char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!session || !tokens)
      return fail(ATTNRT_ERROR_ARGUMENT, "attnrt_inspect: null session or tokens",
                  error, error_size);
    if (int code = checkCanInspect(session, "attnrt_inspect", error, error_size))
      return code;
    const attnrt_model &model = *session->model;
    const attnrt_model_info &info = model.info;
    if ((experts || expert_weights) && info.num_experts == 0)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  format("attnrt_inspect_routing: the model (%s) is not a mixture of "
                         "experts: it has no routing to write",
                         info.architecture),
                  error, error_size);
    if (n < 1 || n > info.max_seq)
      return fail(ATTNRT_ERROR_POSITION,
                  format("attnrt_inspect: a prompt of %lld tokens does not fit the "
                         "context of %lld positions (at least 1 token)",
                         static_cast<long long>(n), static_cast<long long>(info.max_seq)),
                  error, error_size);
    if (int code = checkTokens(tokens, n, info.vocab_size, error, error_size))
      return code;
    // Buffers of their own for the outputs the caller does not want: the
    // compiled code takes its outputs as non-aliasing.
    const int64_t sizes[] = {info.num_layers * info.num_heads * n * n,
                             (info.num_layers + 1) * n * info.hidden_size,
                             n * info.hidden_size, n * info.vocab_size};
    float *outputs[] = {attention, residual, final_norm, logits};
    std::vector<float> spare[4];
    for (int i = 0; i < 4; ++i)
      if (!outputs[i]) {
        spare[i].resize(static_cast<size_t>(sizes[i]));
        outputs[i] = spare[i].data();
      }
    const size_t routed = static_cast<size_t>(info.num_layers * n * info.experts_per_token);
    std::vector<int32_t> spareExperts(experts ? 0 : routed);
    std::vector<float> spareWeights(expert_weights ? 0 : routed);
    ScratchScope scratch(session->scratch);
    int32_t code = model.inspect(tokens, n, model.weights.data(), session->kvCache(),
                                 outputs[0], outputs[1], outputs[2],
                                 experts ? experts : spareExperts.data(),
                                 expert_weights ? expert_weights : spareWeights.data(),
                                 outputs[3]);
    if (code != ATTN_MODEL_OK)
      return fail(ATTNRT_ERROR_MODEL,
                  format("compiled inspect failed with code %d (%s)", code,
                         modelErrorName(code)),
                  error, error_size);
    session->position = n;
    return ATTNRT_OK;
  });
}

int attnrt_unembed(attnrt_session *session, const float *hidden, int64_t n,
                   float *logits, char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!session || !hidden || !logits)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_unembed: null session, hidden or logits", error, error_size);
    if (int code = checkCanInspect(session, "attnrt_unembed", error, error_size))
      return code;
    if (n < 1)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  format("attnrt_unembed: needs at least one row, got %lld",
                         static_cast<long long>(n)),
                  error, error_size);
    const attnrt_model &model = *session->model;
    ScratchScope scratch(session->scratch);
    int32_t code = model.unembed(hidden, n, model.weights.data(), logits);
    if (code != ATTN_MODEL_OK)
      return fail(ATTNRT_ERROR_MODEL,
                  format("compiled unembed failed with code %d (%s)", code,
                         modelErrorName(code)),
                  error, error_size);
    return ATTNRT_OK;
  });
}

int attnrt_generate(attnrt_session *session, attnrt_sampler *sampler,
                    const int32_t *prompt, int64_t n_prompt, int32_t *out,
                    int64_t n_generate, char *error, size_t error_size) {
  return guarded<int>(error, error_size, ATTNRT_ERROR_MEMORY, [&]() -> int {
    if (!session || !sampler || !prompt || (n_generate > 0 && !out))
      return fail(ATTNRT_ERROR_ARGUMENT,
                  "attnrt_generate: null session, sampler, prompt or output",
                  error, error_size);
    if (n_prompt < 1 || n_generate < 0)
      return fail(
          ATTNRT_ERROR_ARGUMENT,
          format("attnrt_generate: needs a prompt of at least one token "
                 "and n_generate >= 0 (got %lld and %lld)",
                 static_cast<long long>(n_prompt),
                 static_cast<long long>(n_generate)),
          error, error_size);
    const attnrt_model &model = *session->model;
    int64_t vocab = model.info.vocab_size;
    if (sampler->maxVocab < vocab)
      return fail(ATTNRT_ERROR_ARGUMENT,
                  format("the sampler holds %lld logits, the model has a "
                         "vocabulary of %lld",
                         static_cast<long long>(sampler->maxVocab),
                         static_cast<long long>(vocab)),
                  error, error_size);
    int64_t maxSeq = model.info.max_seq;
    int64_t position = session->position;
    if (n_prompt > maxSeq - position ||
        n_generate > maxSeq - position - n_prompt)
      return fail(
          ATTNRT_ERROR_POSITION,
          format("prompt of %lld tokens plus %lld generated at position "
                 "%lld exceeds the context of %lld positions",
                 static_cast<long long>(n_prompt),
                 static_cast<long long>(n_generate),
                 static_cast<long long>(position),
                 static_cast<long long>(maxSeq)),
          error, error_size);
    float *row = static_cast<float *>(session->logitsRow.data());
    int code =
        attnrt_prefill(session, prompt, n_prompt, row, 0, error, error_size);
    for (int64_t i = 0; code == ATTNRT_OK && i < n_generate; ++i) {
      int32_t token = attnrt_sample(sampler, row, vocab);
      if (token < 0)
        return fail(ATTNRT_ERROR_MODEL, "every logit is NaN: nothing to sample",
                    error, error_size);
      out[i] = token;
      code = attnrt_decode(session, token, row, error, error_size);
    }
    return code;
  });
}

} // extern "C"
