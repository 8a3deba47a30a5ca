//===- PngRead.h - PNG decoding for the attn-inspect tests ------*- C++ -*-===//

#ifndef ATTN_TEST_INSPECT_PNGREAD_H
#define ATTN_TEST_INSPECT_PNGREAD_H

#include <cstdint>
#include <string>
#include <vector>

namespace attn::inspect::test {

struct RgbImage {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb; // 3 bytes per pixel, row-major

  /// Pixel (x, y) as 0xRRGGBB.
  uint32_t at(uint32_t x, uint32_t y) const {
    const uint8_t *p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
    return static_cast<uint32_t>(p[0]) << 16 | p[1] << 8 | p[2];
  }
};

/// Decodes any PNG libpng reads to 8-bit RGB (alpha dropped, grey and
/// palettes expanded); false with `error` when the file is not a PNG.
bool readPng(const std::string &path, RgbImage &image, std::string &error);

} // namespace attn::inspect::test

#endif // ATTN_TEST_INSPECT_PNGREAD_H
