// Direct logit attribution figure (dla_figure.h).
#include "ui/tools/dla_figure.h"

namespace atlas::ui {

namespace {

QString dlaTokenName(int64_t id, const std::function<QString(int64_t)>& tokenText) {
  return tokenText ? QString("'%1'").arg(tokenText(id)) : QString("#%1").arg(id);
}

}  // namespace

QString dlaTitle(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText) {
  if (a.positions.empty()) return {};
  QString what = "logit[" + dlaTokenName(a.tokens[0], tokenText) + "]";
  if (a.against >= 0) what += " \u2212 logit[" + dlaTokenName(a.against, tokenText) + "]";
  return QString("DLA of %1 at %2: parts sum to %3, the model's %4")
      .arg(what)
      .arg(a.positions[0])
      .arg(a.total[0], 0, 'g', 5)
      .arg(a.logit[0], 0, 'g', 5);
}

HeatmapData dlaHeadHeatmap(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText) {
  HeatmapData d;
  if (a.positions.empty()) return d;
  d.rows = static_cast<int>(a.layers);
  d.cols = static_cast<int>(a.heads);
  d.values.resize(size_t(a.layers * a.heads));
  for (int64_t l = 0; l < a.layers; ++l)
    for (int64_t h = 0; h < a.heads; ++h) d.values[size_t(l * a.heads + h)] = static_cast<float>(a.head_part(0, l, h));
  for (int64_t l = 0; l < a.layers; ++l) d.rowLabels << QString("L%1").arg(l);
  for (int64_t h = 0; h < a.heads; ++h) d.colLabels << QString("H%1").arg(h);
  d.title = dlaTitle(a, tokenText);
  d.rowAxis = "layer";
  d.colAxis = "head";
  d.valueName = "direct contribution to the logit";
  return d;
}

HeatmapData dlaComponentBars(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText) {
  HeatmapData d;
  if (a.positions.empty()) return d;
  auto add = [&d](const QString& label, double v) {
    d.rowLabels << label;
    d.values.push_back(static_cast<float>(v));
  };
  add("tok emb", a.embed_tokens[0]);
  add("pos emb", a.embed_positions[0]);
  for (int64_t l = 0; l < a.layers; ++l) {
    double heads = 0;
    for (int64_t h = 0; h < a.heads; ++h) heads += a.head_part(0, l, h);
    add(QString("L%1 heads").arg(l), heads);
    add(QString("L%1 b_O").arg(l), a.attn_bias[size_t(l)]);
    add(QString("L%1 MLP").arg(l), a.mlp[size_t(l)]);
  }
  add("norm bias", a.norm_bias[0]);
  add("out bias", a.output_bias[0]);
  add("total", a.total[0]);
  add("logit", a.logit[0]);
  d.rows = static_cast<int>(d.values.size());
  d.cols = 1;
  d.colLabels << "contribution";
  // Short: a chart's title has the width of its plot.
  d.title = QString("DLA at %1: total %2, logit %3").arg(a.positions[0]).arg(a.total[0], 0, 'g', 5).arg(a.logit[0], 0, 'g', 5);
  d.rowAxis = "part";
  d.colAxis = "";
  d.valueName = "contribution to the logit";
  return d;
}

std::vector<PanelPlot> dlaPlots(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText) {
  std::vector<PanelPlot> out;
  PanelPlot heads;
  heads.kind = PanelPlot::Kind::Matrix;
  heads.matrix = dlaHeadHeatmap(a, tokenText);
  heads.mapping = signedEffectMapping();
  heads.name = "heads' direct contributions";
  heads.rowAxis = PlotAxis::Layer;
  heads.colAxis = PlotAxis::Head;
  out.push_back(std::move(heads));
  PanelPlot parts;
  parts.kind = PanelPlot::Kind::Bars;
  parts.matrix = dlaComponentBars(a, tokenText);
  parts.name = "every part, total and logit";
  parts.xTitle = "part";
  parts.yTitle = "contribution";
  out.push_back(std::move(parts));
  return out;
}

}  // namespace atlas::ui
