//===- BitmapFont.h - a 5x7 pixel font for the heat maps --------*- C++ -*-===//
//
// Token texts on the heat maps' axes without a font library: printable
// ASCII as 5x7 glyphs (one pixel of spacing makes a 6x8 advance).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_INSPECT_BITMAPFONT_H
#define ATTN_TOOLS_ATTN_INSPECT_BITMAPFONT_H

#include <cstdint>

namespace attn::inspect {

constexpr int kGlyphWidth = 5, kGlyphHeight = 7;

/// Whether pixel (x, y) of byte c's glyph is set, x in [0, 5), y in [0, 7).
/// A space is drawn as a middle dot so that it stays visible; other bytes
/// outside printable ASCII (control bytes, UTF-8) as '?'.
bool glyphPixel(unsigned char c, int x, int y);

} // namespace attn::inspect

#endif // ATTN_TOOLS_ATTN_INSPECT_BITMAPFONT_H
