//===- NpyFuzzer.cpp - the two .npy readers -------------------------------===//
//
// The input is a .npy file. The runtime's attnrt_npy_read_f32 and the test
// oracle's attn::ref::readNpy (written independently) must each accept it or
// reject it with a message, never crash or allocate more than the file can
// hold. When both accept, they must agree on the shape and every bit of the
// data; whatever the runtime accepts must survive a write/read round trip.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "Npy.h"
#include "attnrt/attnrt.h"

#include <cstring>
#include <string>
#include <vector>

using attn::fuzz::MemFile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static MemFile input, output;
  const std::string &path = input.write(data, size);

  constexpr int32_t maxNdim = 8;
  float *values = nullptr;
  int64_t shape[maxNdim];
  int32_t ndim = -1;
  char error[512] = "";
  int rc = attnrt_npy_read_f32(path.c_str(), &values, shape, maxNdim, &ndim,
                               error, sizeof(error));
  std::vector<float> runtimeData;
  std::vector<int64_t> runtimeShape;
  if (rc == ATTNRT_OK) {
    FUZZ_CHECK(values && ndim >= 0 && ndim <= maxNdim, "ndim %d", ndim);
    int64_t elements = 1;
    for (int32_t i = 0; i < ndim; ++i)
      FUZZ_CHECK(shape[i] >= 0 &&
                     !__builtin_mul_overflow(elements, shape[i], &elements),
                 "shape");
    // The data is the file's tail: it cannot be larger than the input.
    FUZZ_CHECK(static_cast<uint64_t>(elements) * 4 <= size, "elements");
    runtimeData.assign(values, values + elements);
    runtimeShape.assign(shape, shape + ndim);
    attnrt_free(values);
  } else {
    FUZZ_CHECK(values == nullptr, "data left on failure");
    FUZZ_CHECK(error[0] != '\0' && std::strchr(error, '\n') == nullptr,
               "message: %s", error);
  }

  std::vector<float> refData;
  std::vector<int64_t> refShape;
  std::string refError;
  bool refOk = attn::ref::readNpy(path, refData, refShape, refError);
  if (!refOk)
    FUZZ_CHECK(!refError.empty(), "reference: empty message");

  if (rc == ATTNRT_OK && refOk) {
    FUZZ_CHECK(refShape == runtimeShape, "the readers disagree on the shape");
    FUZZ_CHECK(refData.size() == runtimeData.size() &&
                   (refData.empty() ||
                    std::memcmp(refData.data(), runtimeData.data(),
                                4 * refData.size()) == 0),
               "the readers disagree on the data");
  }

  if (rc == ATTNRT_OK) {
    // Round trip through the runtime's writer (and both readers).
    const std::string &out = output.write(nullptr, 0);
    int32_t n = static_cast<int32_t>(runtimeShape.size());
    FUZZ_CHECK(attnrt_npy_write_f32(out.c_str(), runtimeData.data(), n,
                                    runtimeShape.data(), error,
                                    sizeof(error)) == ATTNRT_OK,
               "write: %s", error);
    FUZZ_CHECK(attnrt_npy_read_f32(out.c_str(), &values, shape, maxNdim, &ndim,
                                   error, sizeof(error)) == ATTNRT_OK,
               "re-read: %s", error);
    FUZZ_CHECK(std::vector<int64_t>(shape, shape + ndim) == runtimeShape,
               "round-trip shape");
    FUZZ_CHECK(runtimeData.empty() ||
                   std::memcmp(values, runtimeData.data(),
                               4 * runtimeData.size()) == 0,
               "round-trip data");
    attnrt_free(values);
    FUZZ_CHECK(attn::ref::readNpy(out, refData, refShape, refError),
               "the reference cannot read the runtime's file: %s",
               refError.c_str());
    FUZZ_CHECK(refShape == runtimeShape, "reference round-trip shape");
  }
  return 0;
}
