//===- attn-npy-compare.cpp - Compare two float32 .npy files --------------===//
//
// attn-npy-compare ACTUAL.npy EXPECTED.npy [--max-abs X]
//
// Prints "max abs error: <value> at [i, j]" and exits 1 when the error is
// above X, the shapes differ, or any element is NaN (a NaN must never pass a
// tolerance). Matching infinities count as equal. Errors: one line
// "attn-npy-compare: error: ...", exit 1.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

using namespace attn::ref;

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "attn-npy-compare: error: " << message << "\n";
  std::exit(1);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The multi-index of flat element `flat` of a C-order array.
std::vector<int64_t> unflatten(size_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<int64_t>(flat % shape[d]);
    flat /= shape[d];
  }
  return index;
}

std::string formatFloat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> files;
  std::optional<double> maxAbs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help") {
      std::cout << "usage: attn-npy-compare ACTUAL.npy EXPECTED.npy "
                   "[--max-abs X]\n";
      return 0;
    }
    if (arg == "--max-abs" || arg.rfind("--max-abs=", 0) == 0) {
      std::string text;
      if (arg == "--max-abs") {
        if (i + 1 >= argc)
          fail("--max-abs expects a value");
        text = argv[++i];
      } else {
        text = arg.substr(std::string("--max-abs=").size());
      }
      char *end = nullptr;
      double x = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(x >= 0))
        fail("--max-abs expects a non-negative number, got '" + text + "'");
      maxAbs = x;
    } else if (arg.rfind("--", 0) == 0) {
      fail("unknown flag '" + arg + "'");
    } else {
      files.push_back(arg);
    }
  }
  if (files.size() != 2)
    fail("expected two files: ACTUAL.npy EXPECTED.npy");

  std::vector<float> actual, expected;
  std::vector<int64_t> actualShape, expectedShape;
  std::string error;
  if (!readNpy(files[0], actual, actualShape, error) ||
      !readNpy(files[1], expected, expectedShape, error))
    fail(error);
  if (actualShape != expectedShape)
    fail("shape mismatch: " + files[0] + " is " + shapeText(actualShape) +
         ", " + files[1] + " is " + shapeText(expectedShape));
  if (actual.empty()) {
    std::cout << "max abs error: 0 (empty arrays of shape "
              << shapeText(actualShape) << ")\n";
    return 0;
  }

  double worst = 0.0;
  size_t worstAt = 0;
  bool sawNan = false;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected[i];
    if (std::isnan(a) || std::isnan(e)) {
      // Report the first NaN; it fails whatever the tolerance.
      worst = std::nan("");
      worstAt = i;
      sawNan = true;
      break;
    }
    double diff = a == e ? 0.0 : std::fabs(a - e);
    if (diff > worst) {
      worst = diff;
      worstAt = i;
    }
  }
  std::cout << "max abs error: " << (sawNan ? "nan" : formatFloat(worst))
            << " at " << shapeText(unflatten(worstAt, actualShape)) << "\n";
  std::string where = " at " + shapeText(unflatten(worstAt, actualShape)) +
                      " (actual " + formatFloat(actual[worstAt]) +
                      ", expected " + formatFloat(expected[worstAt]) + ")";
  if (sawNan)
    fail("NaN" + where);
  if (maxAbs && worst > *maxAbs)
    fail("max abs error " + formatFloat(worst) + " > " + formatFloat(*maxAbs) +
         where);
  return 0;
}
