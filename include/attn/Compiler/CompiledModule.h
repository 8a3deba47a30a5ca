//===- CompiledModule.h - compile attn IR in-process and call it -*- C++ -*-===//
//
// The execution path of the end-to-end tests and the benchmarks: parse attn
// IR, run the attn-to-llvm pipeline, emit a shared library for the host CPU
// (the back end of attn-compile), dlopen it and call its functions through
// their C interface (`_mlir_ciface_<name>`, memrefs passed as descriptor
// pointers).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_COMPILEDMODULE_H
#define ATTN_COMPILER_COMPILEDMODULE_H

#include "attn/Pipelines/Pipelines.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace mlir::attn {

/// Block sizes and other knobs of one compilation.
struct CompileOptions {
  int64_t queryBlock = 64;
  int64_t kvBlock = 64;
  /// Adjusts the remaining pipeline options (vector width, fusion, ...).
  std::function<void(AttnPipelineOptions &)> configure;
};

/// How gtest prints a CompileOptions parameter.
inline void PrintTo(const CompileOptions &options, std::ostream *os) {
  *os << "query-block=" << options.queryBlock << " kv-block=" << options.kvBlock;
}

/// A shared library built from MLIR source and loaded into this process.
class CompiledModule {
public:
  /// Compiles `source` (every public function gets a C interface). On
  /// failure returns null and sets `error` to the diagnostics.
  static std::unique_ptr<CompiledModule>
  compile(const std::string &source, const CompileOptions &options,
          std::string &error);
  ~CompiledModule();

  /// The C interface of function `name`, or null.
  void *lookup(const std::string &name) const;

  /// Calls `name` with `args` (descriptor pointers and int64_t indices).
  template <typename... Args>
  bool call(const std::string &name, Args... args) const {
    void *symbol = lookup(name);
    if (!symbol)
      return false;
    reinterpret_cast<void (*)(Args...)>(symbol)(args...);
    return true;
  }

private:
  CompiledModule() = default;
  void *handle = nullptr;
  std::string directory;
};

/// A row-major tensor that owns its storage and lends a memref descriptor.
template <typename T, int Rank>
class Buffer {
public:
  Buffer(std::vector<T> values, std::array<int64_t, Rank> shape)
      : data(std::move(values)) {
    descriptor.basePtr = descriptor.data = data.data();
    descriptor.offset = 0;
    int64_t stride = 1;
    for (int dim = Rank - 1; dim >= 0; --dim) {
      descriptor.sizes[dim] = shape[dim];
      descriptor.strides[dim] = stride;
      stride *= shape[dim];
    }
  }
  StridedMemRefType<T, Rank> *memref() { return &descriptor; }
  const std::vector<T> &values() const { return data; }

private:
  std::vector<T> data;
  StridedMemRefType<T, Rank> descriptor;
};

using Buffer1D = Buffer<float, 1>;
using Buffer2D = Buffer<float, 2>;
using Buffer3D = Buffer<float, 3>;

} // namespace mlir::attn

#endif // ATTN_COMPILER_COMPILEDMODULE_H
