// Query-key embedding panel (AttentionViz; core/analysis/qk_embedding.h): for the selected layer
// (or step) and head, the queries and keys of every self-attention map as points of one joint
// PCA, queries orange and keys teal; hovering names the token, a click selects it. The panel
// turns on TraceOptions::qk while it is open.
#include <algorithm>

#include "core/analysis/qk_embedding.h"
#include "ui/views/heatmap_data.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

std::vector<PanelPlot> qkPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const int head = std::max(0, ctx.head);
  for (const AttentionMap& m : trace.attention_maps) {
    const bool self = m.queries.side == m.keys.side && m.round < 0;
    const int64_t layer = m.step > 0 ? m.step - 1 : m.layer;
    if (!self || layer != ctx.layer || head >= m.heads) continue;
    const QkEmbedding e = qk_embedding(trace, m.array, head);  // throws until q and k are traced
    const std::vector<std::string> ql = query_labels(trace, m), kl = key_labels(trace, m);
    PanelPlot p;
    p.kind = PanelPlot::Kind::Scatter;
    p.name = QString::fromStdString(attention_map_title(m)) + QString(", head %1: queries and keys").arg(head);
    p.matrix.rows = static_cast<int>(e.queries + e.keys);
    p.matrix.cols = 3;
    p.matrix.values.resize(size_t(p.matrix.rows) * 3);
    for (int r = 0; r < p.matrix.rows; ++r) {
      const bool query = r < e.queries;
      const int pos = query ? r : r - static_cast<int>(e.queries);
      p.matrix.values[size_t(r) * 3] = e.points[size_t(r) * 2];
      p.matrix.values[size_t(r) * 3 + 1] = e.points[size_t(r) * 2 + 1];
      p.matrix.values[size_t(r) * 3 + 2] = query ? 0.0f : 1.0f;
      p.matrix.rowLabels << QString("%1 %2 %3").arg(query ? "query" : "key").arg(pos).arg(
          displayLabel(query ? ql[size_t(pos)] : kl[size_t(pos)]));
      // Keys of Transformer-XL memory are not this segment's tokens: only queries pick.
      p.rowTokens.push_back(query ? pos : (pos >= m.memory_keys ? pos - int(m.memory_keys) : -1));
    }
    p.matrix.colLabels = {"PC1", "PC2", "group (0 query, 1 key)"};
    p.matrix.title = QString::fromStdString(attention_map_title(m)) + QString(", head %1").arg(head);
    p.matrix.rowAxis = "point";
    p.matrix.colAxis = "coordinate";
    p.groupNames = {"queries", "keys"};
    // The share of the joint variance each component carries, on its axis.
    p.xTitle = QString("PC1 (%1% of the variance)").arg(100.0 * e.explained[0], 0, 'f', 0);
    p.yTitle = QString("PC2 (%1%)").arg(100.0 * e.explained[1], 0, 'f', 0);
    p.rowAxis = PlotAxis::Token;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

PanelProvider qkProvider() {
  PanelProvider p;
  p.id = "qk";
  p.title = "Query-key embedding";
  p.arrays = "self-attention maps (queries and keys are traced while the panel is open)";
  p.available = [](const Trace& t) {
    for (const AttentionMap& m : t.attention_maps)
      if (m.queries.side == m.keys.side && m.round < 0) return true;
    return false;
  };
  p.plots = qkPlots;
  p.selection = [](const Trace& t) {  // one layer (or step) and head of the self-attention
    PanelSelectionRanges r;
    for (const AttentionMap& m : t.attention_maps) {
      if (m.queries.side != m.keys.side || m.round >= 0) continue;
      r.layer.count = std::max(r.layer.count, static_cast<int>(m.step > 0 ? m.step : m.layer + 1));
      r.head.count = std::max(r.head.count, static_cast<int>(m.heads));
    }
    r.layer.what = QString("the self-attention has %1 layers").arg(r.layer.count);
    r.head.what = QString("the self-attention has %1 heads").arg(r.head.count);
    return r;
  };
  p.needsQk = true;
  p.autoShow = false;
  return p;
}

}  // namespace atlas::ui
