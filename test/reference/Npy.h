//===- Npy.h - float32 .npy files -------------------------------*- C++ -*-===//
//
// Reads and writes the NumPy .npy format for C-order little-endian float32
// arrays, the format `--dump-logits` uses. Written independently of the
// runtime's writer so that the comparison tools check it rather than share
// its bugs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_REFERENCE_NPY_H
#define ATTN_TEST_REFERENCE_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace attn {
namespace ref {

/// Writes `data` (row-major, product(shape) values) as format 1.0 '<f4',
/// with the header padded so that the data starts at a multiple of 64, as
/// numpy does. Returns false and sets `error` (naming the file) on failure.
bool writeNpy(const std::string &path, const std::vector<float> &data,
              const std::vector<int64_t> &shape, std::string &error);

/// Reads a '<f4' C-order .npy file (format 1.0, 2.0 or 3.0).
bool readNpy(const std::string &path, std::vector<float> &data,
             std::vector<int64_t> &shape, std::string &error);

} // namespace ref
} // namespace attn

#endif // ATTN_TEST_REFERENCE_NPY_H
