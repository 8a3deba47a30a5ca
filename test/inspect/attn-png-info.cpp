//===- attn-png-info.cpp - what a PNG holds, for check-page.sh ------------===//
//
//   attn-png-info FILE.png
//
// Prints "WIDTH HEIGHT COLOURS FRACTION": the size, the number of distinct
// RGB colours and the fraction of pixels whose colour differs from the most
// common one (the background). Exits 1 when FILE is not a readable PNG.
// check-page.sh uses it to tell a rendered page from a blank one (python3
// here has no imaging library).
//
//===----------------------------------------------------------------------===//

#include "PngRead.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

using namespace attn::inspect::test;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fputs("usage: attn-png-info FILE.png\n", stderr);
    return 1;
  }
  RgbImage image;
  std::string error;
  if (!readPng(argv[1], image, error)) {
    std::fprintf(stderr, "attn-png-info: error: %s\n", error.c_str());
    return 1;
  }
  std::unordered_map<uint32_t, uint64_t> counts;
  for (uint32_t y = 0; y < image.height; ++y)
    for (uint32_t x = 0; x < image.width; ++x)
      ++counts[image.at(x, y)];
  uint64_t background = 0;
  for (const auto &entry : counts)
    background = std::max(background, entry.second);
  uint64_t pixels = static_cast<uint64_t>(image.width) * image.height;
  std::printf("%u %u %zu %.4f\n", image.width, image.height, counts.size(),
              pixels ? static_cast<double>(pixels - background) / pixels : 0.0);
  return 0;
}
