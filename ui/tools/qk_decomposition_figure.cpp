// QK decomposition figures (qk_decomposition_figure.h).
#include "ui/tools/qk_decomposition_figure.h"

#include <cmath>

#include "ui/views/value_mapper.h"

namespace atlas::ui {

namespace {

// Component names ("embed.positions", "layer11.attn_bias", "shaw.relative_key") are longer than
// tokens: drawn whole up to this length, on screen and in exports.
constexpr int kComponentNameChars = 32;

QString qkTokenAt(int64_t position, const QStringList& tokens) {
  if (position < 0 || position >= tokens.size()) return QString::number(position);
  return QString("%1 '%2'").arg(position).arg(tokens[int(position)]);
}

}  // namespace

QString qkDecompositionTitle(const QkDecomposition& r, const QStringList& tokens) {
  // Short: the figure is as wide as its matrix, which is narrow for the first layers.
  return QString("L%1 H%2, %3 \u2192 %4: sum %5, score %6")
      .arg(r.layer)
      .arg(r.head)
      .arg(qkTokenAt(r.query, tokens), qkTokenAt(r.key, tokens))
      .arg(r.total, 0, 'g', 5)
      .arg(r.score, 0, 'g', 5);
}

HeatmapData qkScoreMatrix(const QkDecomposition& r, const QStringList& tokens) {
  HeatmapData d;
  d.rows = int(r.rows.size());
  d.cols = int(r.columns.size());
  d.values.reserve(r.cells.size());
  for (double v : r.cells) d.values.push_back(float(v));
  for (const std::string& n : r.rows) d.rowLabels << QString::fromStdString(n);
  for (const std::string& n : r.columns) d.colLabels << QString::fromStdString(n);
  d.title = qkDecompositionTitle(r, tokens);
  d.rowAxis = "query side";
  d.colAxis = "key side";
  d.valueName = "part of the score";
  d.labelChars = kComponentNameChars;
  return d;
}

HeatmapData qkValueBars(const QkDecomposition& r) {
  HeatmapData d;
  if (r.value_names.empty()) return d;
  double sum = 0;
  for (size_t c = 0; c < r.value_names.size(); ++c) {
    d.rowLabels << QString::fromStdString(r.value_names[c]);
    d.values.push_back(float(r.value_projection[c]));
    sum += r.value_projection[c];
  }
  double norm2 = 0;
  for (double v : r.head_output) norm2 += v * v;
  d.rowLabels << "|o|";
  d.labelChars = kComponentNameChars;
  d.values.push_back(float(std::sqrt(norm2)));
  d.rows = int(d.values.size());
  d.cols = 1;
  d.colLabels << "projection";
  // Short: a chart's title has the width of its plot.
  d.title = QString("value path at %1: parts sum to %2, |o| %3")
                .arg(r.query)
                .arg(sum, 0, 'g', 5)
                .arg(std::sqrt(norm2), 0, 'g', 5);
  d.rowAxis = "key-side component";
  d.colAxis = "";
  d.valueName = "projection on the head's output";
  return d;
}

std::vector<PanelPlot> qkDecompositionPlots(const QkDecomposition& r, const QStringList& tokens) {
  std::vector<PanelPlot> out;
  PanelPlot matrix;
  matrix.kind = PanelPlot::Kind::Matrix;
  matrix.matrix = qkScoreMatrix(r, tokens);
  matrix.mapping = signedEffectMapping();
  matrix.name = "score: query side \u00d7 key side";
  out.push_back(std::move(matrix));
  if (!r.value_names.empty()) {
    PanelPlot value;
    value.kind = PanelPlot::Kind::Bars;
    value.matrix = qkValueBars(r);
    value.name = "value path: what the head moves";
    // No x title: the rotated component names take its room (and name the bars).
    // Short enough for the plot's height under the rotated names at the dock's default height
    // (Qt Charts cuts a longer axis title to "..."); the chart's title names |o|.
    value.yTitle = "proj. on o";
    out.push_back(std::move(value));
  }
  return out;
}

}  // namespace atlas::ui
