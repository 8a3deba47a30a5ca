//===- InspectPage.cpp - index.html of an attn-inspect report -------------===//
//
// One self-contained page (inline CSS, script and data; only the heat map
// PNGs next to it): the heads as a grid of thumbnails with their scores, a
// large view of the clicked head drawn on a <canvas> from the inline
// probabilities (hover names query, key and weight), the score table with
// its legend, a mixture of experts' routing, the residual stream's norms and
// the logit lens.
//
// The data for the script sits in a <script type="application/json">
// element: JSON with '<', '>' and '&' as \u escapes, so no token text can
// close the element; all text in the markup is HTML-escaped.
//
//===----------------------------------------------------------------------===//

#include "ReportInternal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attn::inspect {
namespace {

/// Attention probabilities go to the page as integers in units of
/// 1 / kScale (4 decimals, all the hover shows), only j <= i of each row:
/// the inline data is the bulk of the page, L * H * T * (T + 1) / 2 numbers.
constexpr int kScale = 10000;

const char *const kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fafafa; }
h1 { font-size: 1.5em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1.6em 0 .4em; border-bottom: 1px solid #ccc; }
.prompt { font-family: monospace; white-space: pre-wrap; background: #fff;
  border: 1px solid #ddd; padding: .4em .6em; }
.scroll { overflow-x: auto; }
.grid { display: grid; gap: 6px; justify-content: start; }
.cell { background: #fff; border: 2px solid #ddd; border-radius: 4px; padding: 3px;
  cursor: pointer; font-size: 11px; text-align: center; }
.cell img { display: block; width: 96px; height: 96px; margin: 2px auto;
  image-rendering: pixelated; }
.cell.stands-out { border-color: #e07000; background: #fff4e6; }
.selected { outline: 3px solid #2060c0; }
.marker { color: #e07000; font-weight: bold; }
.cell .scores { color: #555; white-space: nowrap; }
table { border-collapse: collapse; font-size: 12px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 2px 5px; text-align: right; }
tbody tr[data-layer] { cursor: pointer; }
.tok { font-family: monospace; white-space: pre; max-width: 9em; overflow: hidden;
  text-overflow: ellipsis; text-align: left; }
td.hot { background: #ffd9a8; font-weight: bold; }
td.hit { color: #106010; font-weight: bold; }
.legend { max-width: 62em; }
#status { font-family: monospace; min-height: 1.4em; }
.detail { display: grid; grid-template-columns: auto auto; justify-content: start; }
#row-labels { display: flex; flex-direction: column; max-width: 10em; text-align: right; }
#column-labels { display: flex; align-items: flex-end; height: 9em; }
#row-labels div, #column-labels div { font-family: monospace; white-space: pre;
  overflow: hidden; }
#row-labels div { padding-right: 4px; }
#column-labels div { writing-mode: vertical-rl; transform: rotate(180deg); height: 9em; }
#canvas { image-rendering: pixelated; }
.tip { position: absolute; background: #222; color: #fff; padding: 2px 6px;
  border-radius: 3px; font: 12px monospace; pointer-events: none; white-space: pre; }
)css";

/// Draws the clicked head (on load: the first head that stands out, else
/// L0 H0) and names the cell under the mouse. Sets data-shown on #detail
/// once drawn, which test/inspect/check-page.sh reads to know it ran.
const char *const kScript = R"js(
(function () {
  const D = JSON.parse(document.getElementById('attn-data').textContent);
  const T = D.tokens.length;
  const detail = document.getElementById('detail');
  const canvas = document.getElementById('canvas');
  const status = document.getElementById('status');
  const tip = document.getElementById('tip');
  const rowLabels = document.getElementById('row-labels');
  const columnLabels = document.getElementById('column-labels');
  let rows = null; // the shown head's probabilities, row i from i * (i + 1) / 2

  const weight = (i, j) => rows[i * (i + 1) / 2 + j] / D.scale;
  const token = t => t + ' \u201c' + D.tokens[t] + '\u201d';

  function labels(box, cell, across) {
    box.replaceChildren();
    if (cell < 8) return; // too small to read: the hover names the tokens
    for (let t = 0; t < T; ++t) {
      const label = document.createElement('div');
      label.textContent = D.tokens[t];
      label.title = token(t);
      label.style.fontSize = Math.min(12, cell - 1) + 'px';
      label.style.lineHeight = cell + 'px';
      label.style[across ? 'width' : 'height'] = cell + 'px';
      box.appendChild(label);
    }
  }

  function show(layer, head) {
    const index = layer * D.heads + head;
    rows = D.attention[index];
    const cell = Math.max(1, Math.min(28, Math.floor(768 / T)));
    canvas.width = canvas.height = cell * T;
    const g = canvas.getContext('2d');
    for (let i = 0; i < T; ++i)
      for (let j = 0; j < T; ++j) {
        g.fillStyle = j > i ? D.masked : D.colours[Math.round(weight(i, j) * 255)];
        g.fillRect(j * cell, i * cell, cell, cell);
      }
    labels(rowLabels, cell, false);
    labels(columnLabels, cell, true);
    document.getElementById('detail-title').textContent =
        'Layer ' + layer + ', head ' + head;
    document.getElementById('detail-scores').textContent = D.summaries[index];
    document.querySelectorAll('.selected').forEach(e => e.classList.remove('selected'));
    document.querySelectorAll('[data-layer="' + layer + '"][data-head="' + head + '"]')
        .forEach(e => e.classList.add('selected'));
    detail.dataset.shown = 'L' + layer + 'H' + head;
  }

  document.querySelectorAll('[data-layer]').forEach(e => e.addEventListener('click', () => {
    show(+e.dataset.layer, +e.dataset.head);
    detail.scrollIntoView({behavior: 'smooth'});
  }));
  canvas.addEventListener('mousemove', e => {
    const r = canvas.getBoundingClientRect();
    const i = Math.floor((e.clientY - r.top) / r.height * T);
    const j = Math.floor((e.clientX - r.left) / r.width * T);
    if (i < 0 || j < 0 || i >= T || j >= T) return;
    status.textContent = tip.textContent = 'query ' + token(i) + ' -> key ' + token(j) +
        ': ' + (j > i ? 'masked (after the query)' : weight(i, j).toFixed(4));
    tip.style.left = e.pageX + 14 + 'px';
    tip.style.top = e.pageY + 14 + 'px';
    tip.hidden = false;
  });
  canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
  const first = document.querySelector('.cell.stands-out') || document.querySelector('.cell');
  show(+first.dataset.layer, +first.dataset.head);
})();
)js";

std::string htmlEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// A token as the page shows it: on one line (escapeTokenText), spaces as
/// middle dots so that a leading space stays visible.
std::string displayText(const std::string &piece) {
  std::string out;
  for (char c : escapeTokenText(piece))
    out += c == ' ' ? std::string("\xc2\xb7") : std::string(1, c);
  return out;
}

/// A JSON string of UTF-8 text (displayText's output is UTF-8).
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string fixed(double value, int digits) {
  if (std::isnan(value))
    return "n/a";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string colourText(uint32_t colour) {
  char text[8];
  std::snprintf(text, sizeof(text), "#%06x", colour);
  return text;
}

/// A light background whose strength shows `fraction` of a row's maximum.
std::string shade(double fraction) {
  if (!(fraction > 0))
    return "";
  char text[64];
  std::snprintf(text, sizeof(text), " style=\"background:rgba(33,145,140,%.2f)\"",
                0.05 + 0.5 * std::min(fraction, 1.0));
  return text;
}

/// What the page knows of one head, formatted once for the cell, the table
/// and the large view.
struct HeadView {
  HeadScores scores;
  bool previous, first, self, induction; // which scores stand out
};

std::string summary(const HeadView &v) {
  auto mark = [](bool standsOut) { return standsOut ? " (stands out)" : ""; };
  return "previous token " + fixed(v.scores.previousToken, 3) + mark(v.previous) +
         " \xc2\xb7 first token " + fixed(v.scores.firstToken, 3) + mark(v.first) +
         " \xc2\xb7 self " + fixed(v.scores.self, 3) + mark(v.self) + " \xc2\xb7 induction " +
         fixed(v.scores.induction, 3) + mark(v.induction) + " over " +
         std::to_string(v.scores.inductionRows) + " rows";
}

/// The header row of the per-position tables: position and token.
std::string positionHeader(const InspectData &data, const char *corner = "residual") {
  std::string html = std::string("<thead><tr><th>") + corner + "</th>";
  for (size_t t = 0; t < data.ids.size(); ++t)
    html += "<th class=\"tok\" title=\"id " + std::to_string(data.ids[t]) + "\">" +
            std::to_string(t) + "<br>" + htmlEscape(displayText(data.pieces[t])) + "</th>";
  return html + "</tr></thead>";
}

std::string residualName(int64_t r) {
  return r == 0 ? "0: embeddings" : std::to_string(r) + ": after L" + std::to_string(r - 1);
}

std::string lensPiece(const InspectData &data, int32_t id) {
  if (data.pieceOf)
    return data.pieceOf(id);
  if (id >= 0 && static_cast<size_t>(id) < data.lensPieces.size())
    return data.lensPieces[id];
  return "#" + std::to_string(id);
}

/// Rows of L2 norms per position: one per residual, then the final norm.
std::string normTable(const InspectData &data) {
  int64_t T = static_cast<int64_t>(data.ids.size()), D = data.hidden;
  std::string html = "<div class=\"scroll\"><table>" + positionHeader(data) + "<tbody>";
  for (int64_t r = 0; r <= data.layers + 1; ++r) {
    bool finalRow = r == data.layers + 1;
    const float *rows = finalRow ? data.finalNorm.data() : &data.residual[r * T * D];
    std::vector<double> norms(T);
    for (int64_t t = 0; t < T; ++t) {
      double sum = 0;
      for (int64_t k = 0; k < D; ++k)
        sum += static_cast<double>(rows[t * D + k]) * rows[t * D + k];
      norms[t] = std::sqrt(sum);
    }
    double most = *std::max_element(norms.begin(), norms.end());
    html += "<tr><th>" + (finalRow ? std::string("final norm") : residualName(r)) + "</th>";
    for (double norm : norms)
      html += "<td" + shade(norm / most) + ">" + fixed(norm, 2) + "</td>";
    html += "</tr>";
  }
  return html + "</tbody></table></div>";
}

/// A mixture of experts' routing: per routed layer, a row per choice (best
/// first) of the expert each token chose, shaded by its weight, and a
/// summary of how the tokens spread over the experts.
std::string routingTable(const InspectData &data) {
  int64_t T = static_cast<int64_t>(data.ids.size()), K = data.expertsPerToken;
  std::string html = "<div class=\"scroll\"><table>" + positionHeader(data, "layer, choice") +
                     "<tbody>";
  for (int64_t l = 0; l < data.layers; ++l) {
    const int32_t *experts = &data.experts[l * T * K];
    const float *weights = &data.expertWeights[l * T * K];
    if (experts[0] < 0) { // a dense layer routes no token
      html += "<tr><th>L" + std::to_string(l) + "</th><td colspan=\"" + std::to_string(T) +
              "\" style=\"text-align:left\">dense MLP (no routing)</td></tr>";
      continue;
    }
    std::vector<int64_t> load(data.numExperts, 0);
    for (int64_t i = 0; i < T * K; ++i)
      if (experts[i] >= 0 && experts[i] < data.numExperts)
        ++load[experts[i]];
    int64_t used = std::count_if(load.begin(), load.end(), [](int64_t c) { return c > 0; });
    int64_t busiest = std::max_element(load.begin(), load.end()) - load.begin();
    for (int64_t k = 0; k < K; ++k) {
      html += "<tr><th>L" + std::to_string(l) + " #" + std::to_string(k + 1) + "</th>";
      for (int64_t t = 0; t < T; ++t) {
        int32_t e = experts[t * K + k];
        float w = weights[t * K + k];
        std::string title = "L" + std::to_string(l) + ", " + displayText(data.pieces[t]) +
                            " (position " + std::to_string(t) + ") -> expert " +
                            std::to_string(e) + ": weight " + fixed(w, 4);
        html += "<td" + shade(w) + " title=\"" + htmlEscape(title) + "\">" + std::to_string(e) +
                "</td>";
      }
      html += "</tr>";
    }
    html += "<tr><th>L" + std::to_string(l) + " load</th><td colspan=\"" + std::to_string(T) +
            "\" style=\"text-align:left\">" + std::to_string(used) + " of " +
            std::to_string(data.numExperts) + " experts chosen; the busiest, expert " +
            std::to_string(busiest) + ", by " + std::to_string(load[busiest]) + " of " +
            std::to_string(T) + " tokens</td></tr>";
  }
  return html + "</tbody></table></div>";
}

/// Rows of top-1 lens tokens per position, the top-k in the title.
std::string lensTable(const InspectData &data) {
  int64_t T = static_cast<int64_t>(data.ids.size());
  std::string html = "<div class=\"scroll\"><table>" + positionHeader(data) + "<tbody>";
  for (int64_t l = 0; l <= data.layers; ++l) {
    html += "<tr><th>" + residualName(l) + "</th>";
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<LensEntry> &top = data.lens[l * T + t];
      if (top.empty()) {
        html += "<td></td>";
        continue;
      }
      std::string title = "residual " + std::to_string(l) + ", position " + std::to_string(t) +
                          ", top " + std::to_string(top.size()) + ":";
      for (const LensEntry &e : top)
        title += "\n" + displayText(lensPiece(data, e.id)) + " (" + std::to_string(e.id) + ") " +
                 fixed(e.probability, 4);
      bool hit = t + 1 < T && top[0].id == data.ids[t + 1];
      html += std::string("<td class=\"tok") + (hit ? " hit" : "") + "\"" +
              shade(top[0].probability) + " title=\"" + htmlEscape(title) + "\">" +
              htmlEscape(displayText(lensPiece(data, top[0].id))) + "</td>";
    }
    html += "</tr>";
  }
  return html + "</tbody></table></div>";
}

std::string legend(int64_t T) {
  double uniform = uniformScore(T);
  std::string html =
      "<div class=\"legend\"><p>Each score is the mean, over the query rows where it is "
      "defined, of one probability of the row: <b>previous</b> p[i][i-1] and <b>first</b> "
      "(attention sink) p[i][0] and <b>self</b> p[i][i] over the rows i &ge; 1; "
      "<b>induction</b> p[i][j+1] over the rows i whose token occurred before at a "
      "position j &lt; i - 1 (j the most recent one), i.e. the head attends to what "
      "followed the last occurrence of the current token (n/a when no token repeats).</p>"
      "<p>A score <b>stands out</b> (highlighted; heads whose previous-token score does "
      "are marked &#9733; in the grid) when it is at least 0.5 and at least 4 times what "
      "uniform causal attention (1/(i+1) on each key of row i) scores over the same rows. ";
  if (std::isnan(uniform))
    return html + "With a single token there are no rows to score.</p></div>";
  html += "On this prompt of " + std::to_string(T) + " tokens uniform attention scores " +
          fixed(uniform, 3) + " for previous, first and self, so these stand out from " +
          fixed(std::max(0.5, 4 * uniform), 3) + " on";
  if (4 * uniform > 1)
    html += " (more than 1: nothing can stand out on a prompt shorter than 8 tokens)";
  return html + ".</p></div>";
}

std::string dataJson(const InspectData &data, const std::vector<HeadView> &views) {
  int64_t T = static_cast<int64_t>(data.ids.size());
  std::string json = "{\"heads\":" + std::to_string(data.heads) +
                     ",\"scale\":" + std::to_string(kScale) + ",\"tokens\":[";
  for (int64_t t = 0; t < T; ++t)
    json += (t ? "," : "") + jsonString(displayText(data.pieces[t]));
  json += "],\"masked\":\"" + colourText(kMaskedColour) + "\",\"colours\":[";
  for (int k = 0; k < 256; ++k)
    json += (k ? ",\"" : "\"") + colourText(heatColour(k / 255.0f)) + "\"";
  json += "],\"summaries\":[";
  for (size_t h = 0; h < views.size(); ++h)
    json += (h ? "," : "") + jsonString(summary(views[h]));
  json += "],\"attention\":[";
  for (int64_t h = 0; h < data.layers * data.heads; ++h) {
    json += h ? ",\n[" : "\n[";
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        float p = data.attention[(h * T + i) * T + j];
        long units = p > 0 ? std::lround(std::min(p, 1.0f) * kScale) : 0;
        json += (i || j ? "," : "") + std::to_string(units);
      }
    json += "]";
  }
  return json + "]}";
}

/// The attributes that let a click on a grid cell or table row show a head.
std::string headAttributes(int64_t layer, int64_t head) {
  return " data-layer=\"" + std::to_string(layer) + "\" data-head=\"" + std::to_string(head) + "\"";
}

/// The heads as a layers x heads grid of thumbnails with their scores.
std::string headGrid(const InspectData &data, const std::vector<HeadView> &views) {
  std::string html = "<div class=\"scroll\"><div class=\"grid\" "
                     "style=\"grid-template-columns:repeat(" +
                     std::to_string(data.heads) + ",auto)\">\n";
  for (int64_t l = 0; l < data.layers; ++l)
    for (int64_t h = 0; h < data.heads; ++h) {
      const HeadView &v = views[l * data.heads + h];
      std::string name = headName(l, h);
      html += std::string("<div class=\"cell") + (v.previous ? " stands-out" : "") + "\"" +
              headAttributes(l, h) + ">";
      html += "<div>L" + std::to_string(l) + " H" + std::to_string(h);
      html += std::string(v.previous ? " <span class=\"marker\">&#9733;</span>" : "") + "</div>";
      html += "<img src=\"" + name + ".png\" alt=\"" + name + "\">";
      html += "<div class=\"scores\">prev " + fixed(v.scores.previousToken, 2) + " sink " +
              fixed(v.scores.firstToken, 2) + "<br>self " + fixed(v.scores.self, 2) + " ind " +
              fixed(v.scores.induction, 2) + "</div></div>\n";
    }
  return html + "</div></div>\n";
}

/// A row per head: its four scores, those that stand out highlighted.
std::string scoreTable(const InspectData &data, const std::vector<HeadView> &views) {
  auto cell = [](double value, bool standsOut) {
    return std::string(standsOut ? "<td class=\"hot\">" : "<td>") + fixed(value, 3) + "</td>";
  };
  std::string html = "<table><thead><tr><th>layer</th><th>head</th><th>previous</th>"
                     "<th>first (sink)</th><th>self</th><th>induction</th>"
                     "<th>induction rows</th></tr></thead><tbody>\n";
  for (int64_t l = 0; l < data.layers; ++l)
    for (int64_t h = 0; h < data.heads; ++h) {
      const HeadView &v = views[l * data.heads + h];
      html += "<tr" + headAttributes(l, h) + "><td>" + std::to_string(l) + "</td><td>" +
              std::to_string(h) + "</td>";
      html += cell(v.scores.previousToken, v.previous) + cell(v.scores.firstToken, v.first) +
              cell(v.scores.self, v.self) + cell(v.scores.induction, v.induction);
      html += "<td>" + std::to_string(v.scores.inductionRows) + "</td></tr>\n";
    }
  return html + "</tbody></table>\n";
}

} // namespace

std::string renderPage(const InspectData &data, const std::vector<HeadScores> &scores) {
  int64_t T = static_cast<int64_t>(data.ids.size());
  double uniform = uniformScore(T);
  std::vector<HeadView> views;
  for (const HeadScores &s : scores)
    views.push_back({s, standsOut(s.previousToken, uniform), standsOut(s.firstToken, uniform),
                     standsOut(s.self, uniform), standsOut(s.induction, s.inductionUniform)});

  std::string model = htmlEscape(escapeTokenText(data.model));
  std::string prompt = htmlEscape(escapeTokenText(data.prompt));
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<title>attn-inspect: " + model + ": " + prompt + "</title>\n";
  html += std::string("<style>") + kStyle + "</style></head>\n<body>\n";
  html += "<h1>" + model + "</h1>\n<p class=\"prompt\">" + prompt + "</p>\n";
  html += "<p>" + std::to_string(data.layers) + " layers \xc2\xb7 " + std::to_string(data.heads) +
          " heads (" + std::to_string(data.kvHeads) + " key/value heads) \xc2\xb7 " +
          std::to_string(T) + " tokens \xc2\xb7 hidden " + std::to_string(data.hidden) +
          ". Next to this page: attention.npy, residual.npy, final_norm.npy, tokens.txt, "
          "scores.json.</p>\n";

  html += "<h2>Attention heads</h2>\n<p>One map per head: rows are queries, columns "
          "keys, bright is high probability, grey is masked (keys after the query). "
          "Click a head to see it large. &#9733;: its previous-token score stands out.</p>\n" +
          headGrid(data, views);
  html += "<section id=\"detail\"><h2 id=\"detail-title\"></h2><p id=\"detail-scores\"></p>"
          "<p id=\"status\">Hover over the map: query token -&gt; key token: weight</p>"
          "<div class=\"scroll\"><div class=\"detail\"><div></div><div id=\"column-labels\">"
          "</div><div id=\"row-labels\"></div><canvas id=\"canvas\"></canvas></div></div>"
          "</section>\n<div id=\"tip\" class=\"tip\" hidden></div>\n";
  html += "<h2>Head scores</h2>\n" + legend(T) + scoreTable(data, views);

  if (data.expertsPerToken > 0)
    html += "<h2>Expert routing</h2>\n<p>The experts each layer's router chose for each "
            "token (" + std::to_string(data.expertsPerToken) + " of " +
            std::to_string(data.numExperts) +
            ", best first) and, shaded and on hover, the weight their outputs were summed "
            "with. Next to this page: experts.npy and expert_weights.npy.</p>\n" +
            routingTable(data) + "\n";
  html += "<h2>Residual stream</h2>\n<p>The L2 norm of the residual at each position: "
          "residual 0 is the input of layer 0 (embeddings), residual r the output of layer "
          "r - 1; the last row is the final norm's output. Shading: the fraction of the "
          "row's largest norm.</p>\n" +
          normTable(data) + "\n";
  html += "<h2>Logit lens</h2>\n<p>The most probable next token that the final norm and "
          "the output head read off each residual (the last row is the model's output); "
          "hover for the top tokens with their probabilities. Shading: the top-1 "
          "probability; green: the prompt's next token.</p>\n" +
          lensTable(data) + "\n";

  html += "<script type=\"application/json\" id=\"attn-data\">" + dataJson(data, views) +
          "</script>\n<script>" + kScript + "</script>\n</body></html>\n";
  return html;
}

} // namespace attn::inspect
