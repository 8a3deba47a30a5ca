//===- SampleData.h - synthetic attn-inspect data for the tests -*- C++ -*-===//
//
// An InspectData with known patterns and awkward token texts, for the
// report's unit tests and the page check in Chromium (attn-inspect-sample).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TEST_INSPECT_SAMPLEDATA_H
#define ATTN_TEST_INSPECT_SAMPLEDATA_H

#include "InspectReport.h"

namespace attn::inspect::test {

/// A token text that must reach the page escaped.
constexpr const char *kMarkupPiece = "</script><b>&";

/// The tokens cycle through a vocabulary of 10 texts (markup, a newline, a
/// tab and a backslash, a leading space, UTF-8, a lone byte that is not), so
/// they repeat from T = 11 on. Head k = layer * heads + head has the
/// pattern k % 4 (0 previous token, 1 first token, 2 uniform, 3 self),
/// blended 85:15 with uniform attention. The residual and final norm are
/// smooth functions of position; the lens holds 3 entries per position,
/// the last an id outside lensPieces (shown as "#9999").
InspectData makeSampleData(int64_t layers, int64_t heads, int64_t T, int64_t hidden);

} // namespace attn::inspect::test

#endif // ATTN_TEST_INSPECT_SAMPLEDATA_H
