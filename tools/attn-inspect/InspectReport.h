//===- InspectReport.h - the files attn-inspect writes ----------*- C++ -*-===//
//
// What attn-inspect collects from one run of a model on a prompt (attention
// probabilities of every head, the residual stream, the logit lens) and the
// report made of it: a self-contained index.html with a heat map PNG per
// head, the raw arrays as .npy, the tokens and the per-head scores. Kept
// apart from the tool's main so the report is tested on synthetic data,
// without a model.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_INSPECT_INSPECTREPORT_H
#define ATTN_TOOLS_ATTN_INSPECT_INSPECTREPORT_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attn::inspect {

struct LensEntry {
  int32_t id;
  float probability;
};

struct InspectData {
  /// The model folder's name, shown in the page title.
  std::string model;
  std::string prompt;
  int64_t layers = 0, heads = 0, kvHeads = 0, hidden = 0;
  /// The T prompt tokens.
  std::vector<int32_t> ids;
  /// Their texts: UTF-8 that may hold spaces, newlines, markup or bytes that
  /// are not UTF-8 on their own (byte-level tokens).
  std::vector<std::string> pieces;
  /// [layers, heads, T, T] row-major; row i sums to 1 over j <= i, 0 for j > i.
  std::vector<float> attention;
  /// [layers + 1, T, hidden]: the input of layer 0, then each layer's output.
  std::vector<float> residual;
  /// [T, hidden]: the final norm of the last residual.
  std::vector<float> finalNorm;
  /// A mixture of experts (expertsPerToken > 0): [layers, T,
  /// expertsPerToken] the experts each layer's router chose for each token,
  /// best first, and their weights; -1 and 0 in a dense layer.
  int64_t numExperts = 0, expertsPerToken = 0;
  std::vector<int32_t> experts;
  std::vector<float> expertWeights;
  /// The logit lens: lens[l * T + t] holds the top-k tokens (most probable
  /// first) that the final norm and the output head read off residual l at
  /// position t, l in [0, layers] (l = layers is the model's output).
  std::vector<std::vector<LensEntry>> lens;
  /// The text of a lens entry's id: pieceOf(id) when set, else
  /// lensPieces[id] (a vocabulary table) when the id is in range, else "#id".
  std::vector<std::string> lensPieces;
  std::function<std::string(int32_t)> pieceOf;
};

/// One head's attention pattern in four numbers, each the mean of one
/// probability per query row over the rows where it is defined (NaN when
/// there is no such row, e.g. T = 1):
/// - previousToken: p[i][i-1] over rows i >= 1;
/// - firstToken (attention sink): p[i][0] over rows i >= 1;
/// - self: p[i][i] over rows i >= 1;
/// - induction (copying): p[i][j+1] over the rows i whose token occurred
///   before at a position j with j + 1 < i, j the most recent such position:
///   the head looks at what followed the last occurrence of the current
///   token. inductionRows counts those rows; inductionUniform is what
///   uniform causal attention scores over them (the baseline of standsOut).
struct HeadScores {
  double previousToken, firstToken, self, induction;
  int64_t inductionRows;
  double inductionUniform;
};

/// Scores of one head's [T, T] probabilities; `ids` holds the T tokens.
HeadScores scoreHead(const float *probabilities, int64_t T, const std::vector<int32_t> &ids);

/// What uniform causal attention (row i: 1 / (i + 1) on each j <= i) scores
/// for previousToken, firstToken and self: the mean of 1 / (i + 1) over the
/// rows i in [1, T). NaN for T = 1.
double uniformScore(int64_t T);

/// Whether a score stands out: score >= 0.5 and score >= 4 x `uniform`,
/// what uniform causal attention scores over the same rows. Both parts are
/// needed: the absolute bound alone is met by near-uniform heads on short
/// prompts (uniform attention gives row 1 half its weight on token 0), the
/// relative one alone by faint patterns on long prompts. This is the
/// acceptance test of attn-inspect: on a trained model at least one head's
/// previous-token score stands out, on a random-weight model none does.
/// Since 4 x uniform exceeds 1 below 8 tokens, nothing stands out on
/// prompts that short.
bool standsOut(double score, double uniform);

/// standsOut(scores.previousToken, uniformScore(T)).
bool previousTokenStandsOut(const HeadScores &scores, int64_t T);

/// The heat map of a head: T x T cells of `cell` x `cell` pixels, right of
/// a `left` margin and below a `top` one that hold the token texts when
/// the cells are large enough for them (else both margins are 0).
struct HeatMapLayout {
  int64_t cell, left, top, width, height;
};
HeatMapLayout heatMapLayout(int64_t T);

/// The colour of probability p in the heat maps and the page's large view
/// (viridis: 0 dark purple, 1 bright yellow), as 0xRRGGBB.
uint32_t heatColour(float p);
/// The colour of the masked cells (j > i): a neutral grey viridis lacks.
constexpr uint32_t kMaskedColour = 0x8c8c8c;

/// A token's text on one line: backslash as \\, newline as \n, tab as \t,
/// carriage return as \r, other control bytes and bytes that are not part
/// of valid UTF-8 as \xHH; the rest (spaces included) unchanged. The result
/// is valid UTF-8 without line breaks: one token per line of tokens.txt.
std::string escapeTokenText(const std::string &piece);

/// Writes to `dir` (created when missing):
/// - index.html: the page (InspectPage.cpp);
/// - L<l>H<h>.png: each head's heat map;
/// - attention.npy [layers, heads, T, T], residual.npy [layers + 1, T,
///   hidden], final_norm.npy [T, hidden]: float32;
/// - tokens.txt: "id<TAB>text" per token, text as escapeTokenText;
/// - scores.json: {"layers", "heads", "tokens", "heads_scores": [{"layer",
///   "head", "previous_token", "first_token", "self", "induction",
///   "induction_rows", "previous_token_stands_out"}]}, NaN as null.
/// False with `error` naming the field whose size does not fit the shapes,
/// or the file that could not be written and why.
bool writeReport(const InspectData &data, const std::string &dir, std::string &error);

} // namespace attn::inspect

#endif // ATTN_TOOLS_ATTN_INSPECT_INSPECTREPORT_H
