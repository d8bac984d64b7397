// Ablation sweep figure (sweep_figure.h).
#include "ui/tools/sweep_figure.h"

#include <algorithm>
#include <cmath>

namespace atlas::ui {

QString sweepEffectName(const SweepResult& r) {
  switch (r.spec.metric) {
    case SweepMetric::KL: return "KL(clean || ablated) (nats)";
    case SweepMetric::Loss: return "\u0394 loss (nats)";
    case SweepMetric::LogitDiff: return "\u0394 logit difference";
    case SweepMetric::Cosine: return "\u0394 cosine";
  }
  return {};
}

QString sweepTitle(const SweepResult& r) {
  QString what = r.spec.unit == SweepUnit::Heads ? "heads" : "layers";
  QString title = QString("%1 ablation of %2").arg(ablation_mode_name(r.spec.mode), what);
  switch (r.spec.metric) {
    case SweepMetric::KL: break;
    case SweepMetric::Loss: title += QString(", clean loss %1").arg(r.clean, 0, 'g', 4); break;
    case SweepMetric::LogitDiff:
      title += QString(", clean logit diff %1 at %2").arg(r.clean, 0, 'g', 4).arg(r.position);
      break;
    case SweepMetric::Cosine: break;
  }
  if (!r.complete) {  // first, so that a title elided to the figure's width still says it is partial
    const auto done = std::count_if(r.values.begin(), r.values.end(), [](double v) { return std::isfinite(v); });
    title = QString("cancelled after %1 of %2 cells: ").arg(done).arg(r.values.size()) + title;
  }
  return title;
}

HeatmapData sweepHeatmap(const SweepResult& r) {
  HeatmapData d;
  d.rows = static_cast<int>(r.layers);
  d.cols = static_cast<int>(r.heads);
  d.values.resize(r.values.size());
  bool masked = false;
  for (size_t i = 0; i < r.values.size(); ++i) {
    const double v = r.values[i] - r.clean;
    d.values[i] = std::isfinite(v) ? static_cast<float>(v) : 0.0f;
    masked |= !std::isfinite(v);
  }
  if (masked) {
    d.mask.resize(r.values.size());
    for (size_t i = 0; i < r.values.size(); ++i) d.mask[i] = std::isfinite(r.values[i] - r.clean) ? 1 : 0;
  }
  for (int64_t l = 0; l < r.layers; ++l)
    d.rowLabels << (size_t(l) < r.row_labels.size() ? QString::fromStdString(r.row_labels[size_t(l)])
                                                    : QString("L%1").arg(l));
  if (r.spec.unit == SweepUnit::Heads)
    for (int64_t h = 0; h < r.heads; ++h) d.colLabels << QString("H%1").arg(h);
  else
    d.colLabels << "layer";
  d.title = sweepTitle(r);
  d.rowAxis = r.row_labels.empty() || r.row_labels.front()[0] != 'E' ? "layer" : "layer (E encoder, D decoder)";
  d.colAxis = r.spec.unit == SweepUnit::Heads ? "head" : "ablated";
  d.valueName = sweepEffectName(r);
  return d;
}

ColorMapping sweepColorMapping(const SweepResult& r) {
  ColorMapping m;
  m.colormap = r.spec.metric == SweepMetric::KL ? Colormap::Viridis : Colormap::Diverging;
  m.normalization = Normalization::Global;
  m.centreZero = r.spec.metric != SweepMetric::KL;
  return m;
}

}  // namespace atlas::ui
