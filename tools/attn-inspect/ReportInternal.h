//===- ReportInternal.h - pieces shared by the report's files ---*- C++ -*-===//
//
// Not part of the interface of AttnInspectReport: the heat map renderer,
// the PNG writer and the page generator, which writeReport drives.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_INSPECT_REPORTINTERNAL_H
#define ATTN_TOOLS_ATTN_INSPECT_REPORTINTERNAL_H

#include "InspectReport.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attn::inspect {

/// The RGB pixels of one head's heat map, heatMapLayout(T) in size.
std::vector<uint8_t> renderHeatMap(const float *probabilities, int64_t T,
                                   const std::vector<std::string> &pieces);

/// Writes 8-bit RGB pixels as a PNG; false with `error` naming `path`.
bool writePng(const std::string &path, int64_t width, int64_t height,
              const std::vector<uint8_t> &rgb, std::string &error);

/// The text of index.html; `scores` holds the heads' scores, layer-major.
std::string renderPage(const InspectData &data, const std::vector<HeadScores> &scores);

/// "L<layer>H<head>": the PNG's base name and the page's name of a head.
std::string headName(int64_t layer, int64_t head);

/// A JSON number, null for NaN and infinities.
std::string jsonNumber(double value);

} // namespace attn::inspect

#endif // ATTN_TOOLS_ATTN_INSPECT_REPORTINTERNAL_H
