// Activation-patching figure (patching_figure.h).
#include "ui/tools/patching_figure.h"

#include <algorithm>
#include <cmath>

#include "core/analysis/attribution_patching.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

namespace {

bool normalisable(const PatchResult& r) { return r.clean != r.corrupted; }

}  // namespace

bool patchingColumnsAreHeads(const PatchResult& r) {
  switch (r.spec.site) {
    case PatchSite::Head:
    case PatchSite::HeadPos:
    case PatchSite::Q:
    case PatchSite::K:
    case PatchSite::V:
    case PatchSite::Pattern: return true;
    default: return false;
  }
}

QString patchingTitle(const PatchResult& r) {
  QString title = QString("%1 patching (%2), %3 at %4: clean %5, corrupted %6")
                      .arg(patch_site_name(r.spec.site), patch_direction_name(r.spec.direction),
                           patch_metric_name(r.spec.metric))
                      .arg(r.position)
                      .arg(r.clean, 0, 'g', 4)
                      .arg(r.corrupted, 0, 'g', 4);
  if (!normalisable(r)) title += " (equal: raw metric shown)";
  // First, so that a title elided to the figure's width still says the grid is partial.
  if (!r.complete) title = "cancelled, unfinished cells masked: " + title;
  return title;
}

HeatmapData patchingHeatmap(const PatchResult& r, const QStringList& tokenLabels, int slice) {
  HeatmapData d;
  if (r.shape.size() < 2) return d;
  const bool heads = patchingColumnsAreHeads(r);
  const int64_t layers = r.shape[0], cols = r.shape[1];
  const int64_t positions = r.shape.size() == 3 ? r.shape[2] : 1;
  const int64_t at = std::clamp<int64_t>(slice, 0, positions - 1);
  const std::vector<double>& src = normalisable(r) ? r.normalised : r.raw;
  d.rows = static_cast<int>(layers);
  d.cols = static_cast<int>(cols);
  d.values.resize(size_t(layers * cols));
  std::vector<uint8_t> mask(d.values.size(), 1);
  bool masked = false;
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(l * cols + c);
      const double v = src[size_t(patch_cell(r, l, c, at))];
      d.values[i] = std::isfinite(v) ? static_cast<float>(v) : 0.0f;
      if (!std::isfinite(v)) mask[i] = 0, masked = true;
    }
  if (masked) d.mask = std::move(mask);
  // An encoder-decoder grid's rows are sub-layers of two stacks (patching.h): named in full.
  const bool two_stacks = int64_t(r.row_names.size()) == layers &&
                          std::any_of(r.row_names.begin(), r.row_names.end(),
                                      [](const std::string& n) { return n.rfind("encoder.", 0) == 0; }) &&
                          std::any_of(r.row_names.begin(), r.row_names.end(),
                                      [](const std::string& n) { return n.rfind("decoder.", 0) == 0; });
  for (int64_t l = 0; l < layers; ++l)
    d.rowLabels << (two_stacks ? QString::fromStdString(r.row_names[size_t(l)])
                    : r.spec.site == PatchSite::Resid && l == 0 ? QString("emb")
                                                                : QString("L%1").arg(l));
  if (two_stacks) d.labelChars = 32;
  for (int64_t c = 0; c < cols; ++c)
    d.colLabels << (heads ? QString("H%1").arg(c) : QString("%1 %2").arg(c).arg(tokenLabels.value(int(c))));
  d.title = patchingTitle(r);
  if (r.spec.site == PatchSite::HeadPos)
    d.title += QString(", patched position %1 %2").arg(at).arg(tokenLabels.value(int(at)));
  d.rowAxis = two_stacks ? (r.spec.site == PatchSite::Resid ? "residual before layer" : "attention sub-layer")
              : r.spec.site == PatchSite::Resid ? "residual before layer" : "layer";
  d.colAxis = heads ? "head" : "position";
  d.valueName = normalisable(r) ? "normalised (clean 1, corrupted 0)"
                                : QString("%1 of the patched run").arg(patch_metric_name(r.spec.metric));
  return d;
}

PanelPlot patchingGridPlot(const PatchResult& r, const QStringList& tokenLabels, int slice) {
  PanelPlot grid;
  grid.kind = PanelPlot::Kind::Matrix;
  grid.matrix = patchingHeatmap(r, tokenLabels, slice);
  grid.mapping = signedEffectMapping();
  grid.name = "patching grid";
  grid.rowAxis = PlotAxis::Layer;
  grid.colAxis = patchingColumnsAreHeads(r) ? PlotAxis::Head : PlotAxis::Token;
  return grid;
}

int64_t patchingStrongestPosition(const PatchResult& r) {
  if (r.shape.size() != 3) return 0;
  const std::vector<int64_t> order = cells_by_effect(r);
  return order.empty() ? 0 : order.front() % r.shape[2];
}

PanelPlot pathPatchingPlot(const PathPatchResult& r) {
  PanelPlot plot;
  plot.kind = PanelPlot::Kind::Matrix;
  plot.mapping = signedEffectMapping();
  plot.name = "path patching grid";
  HeatmapData& d = plot.matrix;
  if (r.shape.size() != 2 && r.shape.size() != 4) return plot;
  const int64_t layers = r.shape[0], heads = r.shape[1];
  const bool every = r.shape.size() == 4;
  const int64_t senders = layers * heads, receivers = every ? r.shape[2] * r.shape[3] : 1;
  const bool normalised = r.clean != r.corrupted;
  const std::vector<double>& src = normalised ? r.normalised : r.raw;
  int64_t last_receiver_layer = -1;  // a fixed receiver set: the path needs a sender below one of them
  for (const HeadRef& h : r.spec.receivers) last_receiver_layer = std::max<int64_t>(last_receiver_layer, h.layer);
  const auto headLabel = [](int64_t layer, int64_t head) { return QString("L%1H%2").arg(layer).arg(head); };
  d.rows = static_cast<int>(every ? senders : layers);
  d.cols = static_cast<int>(every ? receivers : heads);
  d.values.assign(size_t(d.rows) * size_t(d.cols), 0.0f);
  std::vector<uint8_t> mask(d.values.size(), 1);
  bool masked = false;
  for (int64_t i = 0; i < int64_t(src.size()) && i < int64_t(d.values.size()); ++i) {
    const int64_t sender = every ? i / receivers : i;
    const int64_t sender_layer = sender / heads;
    const int64_t receiver_layer = every ? (i % receivers) / r.shape[3] : last_receiver_layer;
    const double v = src[size_t(i)];
    const bool path = sender_layer < receiver_layer;
    d.values[size_t(i)] = path && std::isfinite(v) ? static_cast<float>(v) : 0.0f;
    if (!path || !std::isfinite(v)) mask[size_t(i)] = 0, masked = true;
  }
  if (masked) d.mask = std::move(mask);
  if (every) {
    for (int64_t s = 0; s < senders; ++s) d.rowLabels << headLabel(s / heads, s % heads);
    for (int64_t k = 0; k < receivers; ++k) d.colLabels << headLabel(k / r.shape[3], k % r.shape[3]);
    d.rowAxis = "sender";
    d.colAxis = "receiver";
  } else {
    for (int64_t l = 0; l < layers; ++l) d.rowLabels << QString("L%1").arg(l);
    for (int64_t h = 0; h < heads; ++h) d.colLabels << QString("H%1").arg(h);
    d.rowAxis = "sender layer";
    d.colAxis = "sender head";
  }
  QStringList into;
  for (const HeadRef& h : r.spec.receivers) into << QString("%1.%2").arg(h.layer).arg(h.head);
  d.title = QString("path patching (%1) into %2 (their %3), %4 at %5: clean %6, corrupted %7")
                .arg(patch_direction_name(r.spec.patch.direction),
                     into.isEmpty() ? QString("every head") : into.join(", "),
                     receiver_input_name(r.spec.input), patch_metric_name(r.spec.patch.metric))
                .arg(r.position)
                .arg(r.clean, 0, 'g', 4)
                .arg(r.corrupted, 0, 'g', 4);
  if (!normalised) d.title += " (equal: raw metric shown)";
  d.valueName = normalised ? "normalised (clean 1, corrupted 0)"
                           : QString("%1 of the patched run").arg(patch_metric_name(r.spec.patch.metric));
  plot.rowAxis = every ? PlotAxis::None : PlotAxis::Layer;
  plot.colAxis = every ? PlotAxis::None : PlotAxis::Head;
  return plot;
}

}  // namespace atlas::ui
