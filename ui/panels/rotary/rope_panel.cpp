// Rotary positions: the rotation frequency of every dimension pair, and for the
// selected layer what RoPE does to a head's scores: the mean pre-softmax score q.k / sqrt(d)
// and the mean attention weight as functions of the relative distance i - j, one curve per
// head (long-range decay, local heads, sinks show up here). Reads positional.frequencies and
// the selected layer's self-attention probabilities and scores (traced while the panel is open).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/model/model_arrays.h"
#include "ui/views/heatmap_data.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

// Mean over the causal pairs (i, i - d) of a [heads, L, L] array, per head and distance d;
// -inf entries (masked keys) and rows without keys are left out.
HeatmapData byDistance(const Tensor& a, const QString& title, const QString& value) {
  HeatmapData m;
  const int heads = static_cast<int>(a.dim(0)), L = static_cast<int>(a.dim(1));
  m.rows = heads;
  m.cols = L;
  m.values.assign(static_cast<size_t>(heads) * L, 0.0f);
  for (int h = 0; h < heads; ++h)
    for (int d = 0; d < L; ++d) {
      double sum = 0;
      int n = 0;
      for (int i = d; i < L; ++i) {
        const float v = a.data[(static_cast<size_t>(h) * L + i) * L + (i - d)];
        if (!std::isfinite(v)) continue;
        sum += v;
        ++n;
      }
      m.values[static_cast<size_t>(h) * L + d] = n ? static_cast<float>(sum / n) : 0.0f;
    }
  m.rowLabels = indexLabels("head ", heads);
  m.colLabels = indexLabels(QString(), L);
  m.title = title;
  m.rowAxis = "head";
  m.colAxis = "distance i - j";
  m.valueName = value;
  return m;
}

std::vector<PanelPlot> ropePlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const Tensor& freq = requireArray(trace, model_arrays::kPositionalFrequencies);  // [r / 2]
  PanelPlot f;
  f.name = "rotation frequency per dimension pair";
  f.kind = PanelPlot::Kind::Curves;
  f.matrix.rows = 1;
  f.matrix.cols = static_cast<int>(freq.numel());
  for (float w : freq.data)
    f.matrix.values.push_back(w > 0 ? std::log10(w) : -std::numeric_limits<float>::infinity());
  f.matrix.rowLabels = {"log10 w_i"};
  f.matrix.colLabels = indexLabels(QString(), f.matrix.cols);
  f.matrix.title = "RoPE: log10 w_i (rad / position) per dimension pair";
  f.matrix.rowAxis = "series";
  f.matrix.colAxis = "dimension pair i";
  f.matrix.valueName = "log10 w_i";
  f.xTitle = "dimension pair i";
  f.yTitle = "log10 w_i (rad / position)";
  out.push_back(std::move(f));

  // The selected layer's self-attention (a decoder-only model's, else the first family's).
  for (const AttentionMap& m : trace.attention_maps) {
    if (m.kind == AttentionMapKind::Cross || !m.dense || m.layer != ctx.layer ||
        m.queries.count != m.keys.count)
      continue;
    const QString where = QString("layer %1").arg(m.layer);
    const Tensor& probs = requireArray(trace, m.array);
    PanelPlot w;
    w.name = "attention weight by distance, " + where;
    w.kind = PanelPlot::Kind::Curves;
    w.matrix = byDistance(probs, "mean attention weight by distance, " + where, "mean weight");
    w.rowAxis = PlotAxis::Head;
    w.xTitle = "distance d = i - j (tokens)";
    w.yTitle = "mean attention weight";
    out.push_back(std::move(w));
    if (const TracedArray* scores = trace.find(m.companions.scores)) {
      PanelPlot s;
      s.name = "score q.k / sqrt(d) by distance, " + where;
      s.kind = PanelPlot::Kind::Curves;
      s.matrix = byDistance(scores->tensor, "mean score q.k / sqrt(d) by distance, " + where,
                            "mean score");
      s.rowAxis = PlotAxis::Head;
      s.xTitle = "distance d = i - j (tokens)";
      s.yTitle = "mean score";
      out.push_back(std::move(s));
    }
    break;
  }
  return out;
}

PanelProvider ropeProvider() {
  PanelProvider p;
  p.id = "rope";
  p.title = "Rotary positions";
  p.arrays = "positional.frequencies (models with rotary positions), the layer's scores";
  p.available = [](const Trace& t) {
    return t.find(model_arrays::kPositionalFrequencies) != nullptr;
  };
  p.plots = ropePlots;
  p.selection = [](const Trace& t) {  // one layer's self-attention by distance
    PanelSelectionRanges r;
    for (const AttentionMap& m : t.attention_maps)
      if (m.kind != AttentionMapKind::Cross && m.dense && m.queries.count == m.keys.count)
        r.layer.count = std::max(r.layer.count, static_cast<int>(m.layer + 1));
    r.layer.what = QString("the self-attention has %1 layers").arg(r.layer.count);
    return r;
  };
  p.needsScores = true;  // the score curves; the window re-runs once with scores while open
  p.autoShow = false;    // scores cost a map per layer: opened from View > Variant panels
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> rotary_panels() { return {ropeProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
