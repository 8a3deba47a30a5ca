//===- HeatMap.cpp - one head's attention as a PNG ------------------------===//
//
// A head's [T, T] probabilities as square cells in the viridis colormap
// (perceptually uniform, readable in grey and by most colour-blind readers),
// the masked upper triangle grey, the tokens on the left (queries) and the
// top (keys, one character under the other) when the cells are large enough
// for the 5x7 font. Written through libpng.
//
//===----------------------------------------------------------------------===//

#include "BitmapFont.h"
#include "ReportInternal.h"

#include <png.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace attn::inspect {

/// Viridis at 0, 1/8, ..., 1 (matplotlib's values); linear in between.
static const uint32_t kViridis[] = {0x440154, 0x472c7a, 0x3b528b, 0x2c728e, 0x21918c,
                                    0x28ae80, 0x5ec962, 0xaddc30, 0xfde725};

uint32_t heatColour(float p) {
  // NaN lands on 0 too: !(p > 0) holds for it.
  float x = !(p > 0) ? 0 : std::min(p, 1.0f) * 8;
  int k = std::min(static_cast<int>(x), 7);
  float f = x - static_cast<float>(k);
  uint32_t colour = 0;
  for (int shift = 16; shift >= 0; shift -= 8) {
    float a = static_cast<float>((kViridis[k] >> shift) & 0xff);
    float b = static_cast<float>((kViridis[k + 1] >> shift) & 0xff);
    colour |= static_cast<uint32_t>(std::lround(a + (b - a) * f)) << shift;
  }
  return colour;
}

/// Cells of at least 8 pixels fit a glyph; labels show this many characters.
constexpr int64_t kLabelCell = 8, kLabelChars = 8;
constexpr int kAdvanceX = kGlyphWidth + 1, kAdvanceY = kGlyphHeight + 1;
constexpr uint32_t kMarginColour = 0xffffff, kTextColour = 0x202020;

HeatMapLayout heatMapLayout(int64_t T) {
  HeatMapLayout layout;
  layout.cell = std::clamp<int64_t>(512 / std::max<int64_t>(T, 1), 1, 16);
  bool labels = layout.cell >= kLabelCell;
  layout.left = labels ? kLabelChars * kAdvanceX + 2 : 0;
  layout.top = labels ? kLabelChars * kAdvanceY + 2 : 0;
  layout.width = layout.left + T * layout.cell;
  layout.height = layout.top + T * layout.cell;
  return layout;
}

namespace {

struct Canvas {
  int64_t width, height;
  std::vector<uint8_t> rgb;

  void fill(int64_t x0, int64_t y0, int64_t w, int64_t h, uint32_t colour) {
    for (int64_t y = y0; y < y0 + h; ++y)
      for (int64_t x = x0; x < x0 + w; ++x) {
        uint8_t *pixel = &rgb[(y * width + x) * 3];
        pixel[0] = colour >> 16;
        pixel[1] = (colour >> 8) & 0xff;
        pixel[2] = colour & 0xff;
      }
  }
  void glyph(int64_t x0, int64_t y0, unsigned char c) {
    for (int y = 0; y < kGlyphHeight; ++y)
      for (int x = 0; x < kGlyphWidth; ++x)
        if (glyphPixel(c, x, y))
          fill(x0 + x, y0 + y, 1, 1, kTextColour);
  }
};

} // namespace

/// A token as at most kLabelChars font characters: escaped to one line,
/// each non-ASCII character one '?' (glyphPixel draws it so), cut with a
/// trailing '~' when longer.
static std::string labelText(const std::string &piece) {
  std::string label;
  for (unsigned char c : escapeTokenText(piece))
    if (c < 0x80 || c >= 0xc0) // skips UTF-8 continuation bytes
      label += static_cast<char>(c);
  if (label.size() > static_cast<size_t>(kLabelChars))
    label = label.substr(0, kLabelChars - 1) + "~";
  return label;
}

std::vector<uint8_t> renderHeatMap(const float *probabilities, int64_t T,
                                   const std::vector<std::string> &pieces) {
  HeatMapLayout layout = heatMapLayout(T);
  int64_t s = layout.cell;
  Canvas canvas{layout.width, layout.height,
                std::vector<uint8_t>(layout.width * layout.height * 3)};
  canvas.fill(0, 0, layout.width, layout.height, kMarginColour);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j)
      canvas.fill(layout.left + j * s, layout.top + i * s, s, s,
                  j > i ? kMaskedColour : heatColour(probabilities[i * T + j]));
  if (!layout.left)
    return canvas.rgb;
  for (int64_t t = 0; t < T; ++t) {
    std::string label = labelText(pieces[t]);
    int64_t n = static_cast<int64_t>(label.size());
    // Row labels end next to the grid, column labels end on top of it.
    int64_t rowX = layout.left - 2 - n * kAdvanceX + 1;
    int64_t rowY = layout.top + t * s + (s - kGlyphHeight) / 2;
    int64_t columnX = layout.left + t * s + (s - kGlyphWidth) / 2;
    int64_t columnY = layout.top - 2 - n * kAdvanceY + 1;
    for (int64_t k = 0; k < n; ++k) {
      canvas.glyph(rowX + k * kAdvanceX, rowY, label[k]);
      canvas.glyph(columnX, columnY + k * kAdvanceY, label[k]);
    }
  }
  return canvas.rgb;
}

/// libpng's error callback: keeps the message for writePng, then returns to
/// its setjmp.
static void pngError(png_structp png, png_const_charp message) {
  *static_cast<std::string *>(png_get_error_ptr(png)) = message;
  png_longjmp(png, 1);
}

/// The libpng calls, apart from writePng so that no object with a
/// destructor lives in the frame a png_error longjmps into.
static bool writeRows(png_structp png, png_infop info, FILE *file, png_uint_32 width,
                      png_uint_32 height, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png)))
    return false;
  png_init_io(png, file);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 9);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

bool writePng(const std::string &path, int64_t width, int64_t height,
              const std::vector<uint8_t> &rgb, std::string &error) {
  std::vector<png_bytep> rows(height);
  for (int64_t y = 0; y < height; ++y)
    rows[y] = const_cast<png_bytep>(rgb.data() + y * width * 3);
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string message = "cannot create the PNG writer";
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &message, pngError, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  bool written = info && writeRows(png, info, file, width, height, rows.data());
  png_destroy_write_struct(&png, &info);
  if (std::fclose(file) != 0 && written) {
    message = std::strerror(errno);
    written = false;
  }
  if (!written)
    error = "cannot write " + path + ": " + message;
  return written;
}

} // namespace attn::inspect
