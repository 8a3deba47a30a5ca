//===- InspectReport.cpp - the files of an attn-inspect report ------------===//
//
// Checks the collected data against its shapes, then writes the arrays,
// the tokens, the scores, one heat map per head and, last, the page that
// shows them (so a page exists only next to complete data).
//
//===----------------------------------------------------------------------===//

#include "ReportInternal.h"

#include "attnrt/attnrt.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <type_traits>

namespace attn::inspect {

std::string headName(int64_t layer, int64_t head) {
  return "L" + std::to_string(layer) + "H" + std::to_string(head);
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

/// The length of the valid UTF-8 sequence at text[i] (RFC 3629: no
/// overlong forms, surrogates or code points past U+10FFFF), 0 if none.
static size_t utf8Length(const std::string &text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80)
    return 1;
  size_t length = 0;
  if (c >= 0xc2 && c < 0xe0)
    length = 2;
  else if (c >= 0xe0 && c < 0xf0)
    length = 3;
  else if (c >= 0xf0 && c < 0xf5)
    length = 4;
  if (length == 0 || i + length > text.size())
    return 0;
  for (size_t k = 1; k < length; ++k)
    if ((byte(i + k) & 0xc0) != 0x80)
      return 0;
  unsigned char second = byte(i + 1);
  if ((c == 0xe0 && second < 0xa0) || (c == 0xed && second >= 0xa0) ||
      (c == 0xf0 && second < 0x90) || (c == 0xf4 && second >= 0x90))
    return 0;
  return length;
}

std::string escapeTokenText(const std::string &piece) {
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    unsigned char c = piece[i];
    size_t length = utf8Length(piece, i);
    if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
      out += '\\';
      out += c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
    } else if (length == 0 || c < 0x20 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
      length = 1;
    } else {
      out.append(piece, i, length);
    }
    i += length;
  }
  return out;
}

namespace {

/// The product of `factors` (each >= 0), false when it overflows int64_t.
bool product(std::initializer_list<int64_t> factors, int64_t &result) {
  result = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(result, f, &result))
      return false;
  return true;
}

bool checkSize(const char *field, size_t size, std::initializer_list<int64_t> shape,
               const char *shapeText, std::string &error) {
  int64_t expected;
  if (product(shape, expected) && static_cast<int64_t>(size) == expected)
    return true;
  error = std::string("InspectData.") + field + " has " + std::to_string(size) +
          " elements, expected " + shapeText + " = ";
  for (const int64_t *d = shape.begin(); d != shape.end(); ++d)
    error += (d == shape.begin() ? "" : " x ") + std::to_string(*d);
  return false;
}

bool validate(const InspectData &data, std::string &error) {
  if (data.layers < 1 || data.heads < 1 || data.hidden < 1) {
    error = "InspectData: layers, heads and hidden must be >= 1, got " +
            std::to_string(data.layers) + ", " + std::to_string(data.heads) + " and " +
            std::to_string(data.hidden);
    return false;
  }
  if (data.ids.empty()) {
    error = "InspectData.ids is empty: no prompt tokens";
    return false;
  }
  int64_t T = static_cast<int64_t>(data.ids.size());
  int64_t L = data.layers, K = data.expertsPerToken;
  if (K < 0 || K > data.numExperts) {
    error = "InspectData: expertsPerToken " + std::to_string(K) + " not in [0, numExperts " +
            std::to_string(data.numExperts) + "]";
    return false;
  }
  return checkSize("pieces", data.pieces.size(), {T}, "T", error) &&
         checkSize("attention", data.attention.size(), {L, data.heads, T, T},
                   "layers x heads x T x T", error) &&
         checkSize("residual", data.residual.size(), {L + 1, T, data.hidden},
                   "(layers + 1) x T x hidden", error) &&
         checkSize("finalNorm", data.finalNorm.size(), {T, data.hidden}, "T x hidden", error) &&
         checkSize("lens", data.lens.size(), {L + 1, T}, "(layers + 1) x T", error) &&
         checkSize("experts", data.experts.size(), {L, T, K}, "layers x T x expertsPerToken",
                   error) &&
         checkSize("expertWeights", data.expertWeights.size(), {L, T, K},
                   "layers x T x expertsPerToken", error);
}

/// `values` (float32 or int32) as PATH, a .npy of `shape`.
template <typename Element>
bool writeNpy(const std::string &path, const std::vector<Element> &values,
              std::initializer_list<int64_t> shape, std::string &error) {
  static_assert(std::is_same_v<Element, float> || std::is_same_v<Element, int32_t>);
  char message[512] = "";
  int32_t rank = static_cast<int32_t>(shape.size());
  int code;
  if constexpr (std::is_same_v<Element, float>)
    code = attnrt_npy_write_f32(path.c_str(), values.data(), rank, shape.begin(), message,
                                sizeof(message));
  else
    code = attnrt_npy_write_i32(path.c_str(), values.data(), rank, shape.begin(), message,
                                sizeof(message));
  if (code == ATTNRT_OK)
    return true;
  error = message;
  return false;
}

bool writeTextFile(const std::string &path, const std::string &text, std::string &error) {
  FILE *file = std::fopen(path.c_str(), "wb");
  bool ok = file && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (file && std::fclose(file) != 0)
    ok = false;
  if (!ok)
    error = "cannot write " + path + ": " + std::strerror(errno);
  return ok;
}

std::string tokensText(const InspectData &data) {
  std::string text;
  for (size_t t = 0; t < data.ids.size(); ++t)
    text += std::to_string(data.ids[t]) + "\t" + escapeTokenText(data.pieces[t]) + "\n";
  return text;
}

std::string scoresJson(const InspectData &data, const std::vector<HeadScores> &scores) {
  int64_t T = static_cast<int64_t>(data.ids.size());
  std::string json = "{\"layers\":" + std::to_string(data.layers) +
                     ",\"heads\":" + std::to_string(data.heads) +
                     ",\"tokens\":" + std::to_string(T) + ",\"heads_scores\":[";
  for (int64_t l = 0; l < data.layers; ++l)
    for (int64_t h = 0; h < data.heads; ++h) {
      const HeadScores &s = scores[l * data.heads + h];
      json += l || h ? ",\n{" : "\n{";
      json += "\"layer\":" + std::to_string(l) + ",\"head\":" + std::to_string(h);
      json += ",\"previous_token\":" + jsonNumber(s.previousToken);
      json += ",\"first_token\":" + jsonNumber(s.firstToken);
      json += ",\"self\":" + jsonNumber(s.self);
      json += ",\"induction\":" + jsonNumber(s.induction);
      json += ",\"induction_rows\":" + std::to_string(s.inductionRows);
      json += ",\"previous_token_stands_out\":";
      json += previousTokenStandsOut(s, T) ? "true}" : "false}";
    }
  return json + "\n]}\n";
}

} // namespace

bool writeReport(const InspectData &data, const std::string &dir, std::string &error) {
  if (!validate(data, error))
    return false;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return false;
  }
  int64_t L = data.layers, H = data.heads, D = data.hidden;
  int64_t T = static_cast<int64_t>(data.ids.size());
  std::string prefix = dir + "/";
  std::vector<HeadScores> scores;
  for (int64_t head = 0; head < L * H; ++head)
    scores.push_back(scoreHead(&data.attention[head * T * T], T, data.ids));

  if (!writeNpy(prefix + "attention.npy", data.attention, {L, H, T, T}, error) ||
      !writeNpy(prefix + "residual.npy", data.residual, {L + 1, T, D}, error) ||
      !writeNpy(prefix + "final_norm.npy", data.finalNorm, {T, D}, error) ||
      !writeTextFile(prefix + "tokens.txt", tokensText(data), error) ||
      !writeTextFile(prefix + "scores.json", scoresJson(data, scores), error))
    return false;
  if (int64_t K = data.expertsPerToken;
      K > 0 && (!writeNpy(prefix + "experts.npy", data.experts, {L, T, K}, error) ||
                !writeNpy(prefix + "expert_weights.npy", data.expertWeights, {L, T, K}, error)))
    return false;
  HeatMapLayout layout = heatMapLayout(T);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<uint8_t> rgb =
          renderHeatMap(&data.attention[(l * H + h) * T * T], T, data.pieces);
      if (!writePng(prefix + headName(l, h) + ".png", layout.width, layout.height, rgb, error))
        return false;
    }
  return writeTextFile(prefix + "index.html", renderPage(data, scores), error);
}

} // namespace attn::inspect
