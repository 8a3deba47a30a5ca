//===- PngRead.cpp - PNG decoding for the attn-inspect tests --------------===//

#include "PngRead.h"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace attn::inspect::test {

static void pngError(png_structp png, png_const_charp message) {
  *static_cast<std::string *>(png_get_error_ptr(png)) = message;
  png_longjmp(png, 1);
}

/// The libpng calls, in a frame without destructors for png_error to jump
/// into: reads the header, then (once `image` is sized) the rows.
static bool decode(png_structp png, png_infop info, FILE *file, RgbImage &image,
                   std::vector<png_bytep> &rows) {
  if (setjmp(png_jmpbuf(png)))
    return false;
  png_init_io(png, file);
  png_read_info(png, info);
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_read_update_info(png, info);
  image.width = png_get_image_width(png, info);
  image.height = png_get_image_height(png, info);
  image.rgb.resize(static_cast<size_t>(image.width) * image.height * 3);
  rows.resize(image.height);
  for (uint32_t y = 0; y < image.height; ++y)
    rows[y] = &image.rgb[static_cast<size_t>(y) * image.width * 3];
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  return true;
}

bool readPng(const std::string &path, RgbImage &image, std::string &error) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string message = "cannot create the PNG reader";
  std::vector<png_bytep> rows;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &message, pngError, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  bool ok = info && decode(png, info, file, image, rows);
  png_destroy_read_struct(&png, &info, nullptr);
  std::fclose(file);
  if (!ok)
    error = path + ": " + message;
  return ok;
}

} // namespace attn::inspect::test
