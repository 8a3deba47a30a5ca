//===- HeadScores.cpp - what kind of pattern an attention head has --------===//
//
// The four scores of InspectReport.h and the rule that says when one of them
// stands out from what uniform causal attention would score.
//
//===----------------------------------------------------------------------===//

#include "InspectReport.h"

#include <cmath>
#include <limits>

namespace attn::inspect {

static double meanOrNaN(double sum, int64_t count) {
  return count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
}

HeadScores scoreHead(const float *probabilities, int64_t T, const std::vector<int32_t> &ids) {
  double previous = 0, first = 0, self = 0, induction = 0, inductionUniform = 0;
  int64_t inductionRows = 0;
  for (int64_t i = 1; i < T; ++i) {
    const float *row = probabilities + i * T;
    previous += row[i - 1];
    first += row[0];
    self += row[i];
    for (int64_t j = i - 2; j >= 0; --j) {
      if (ids[j] != ids[i])
        continue;
      induction += row[j + 1];
      inductionUniform += 1.0 / static_cast<double>(i + 1);
      ++inductionRows;
      break;
    }
  }
  int64_t rows = T > 1 ? T - 1 : 0;
  return {meanOrNaN(previous, rows),
          meanOrNaN(first, rows),
          meanOrNaN(self, rows),
          meanOrNaN(induction, inductionRows),
          inductionRows,
          meanOrNaN(inductionUniform, inductionRows)};
}

double uniformScore(int64_t T) {
  double sum = 0;
  for (int64_t i = 1; i < T; ++i)
    sum += 1.0 / static_cast<double>(i + 1);
  return meanOrNaN(sum, T > 1 ? T - 1 : 0);
}

bool standsOut(double score, double uniform) {
  // False for NaN scores (no rows): every comparison with NaN is.
  return score >= 0.5 && score >= 4 * uniform;
}

bool previousTokenStandsOut(const HeadScores &scores, int64_t T) {
  return standsOut(scores.previousToken, uniformScore(T));
}

} // namespace attn::inspect
