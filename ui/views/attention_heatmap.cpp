#include "ui/views/attention_heatmap.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "ui/views/aggregate_heatmaps.h"
#include "ui/views/map_matrix.h"
#include "ui/views/map_overview.h"

namespace atlas::ui {

bool heatmapIsOverview(const AttentionMap& m, int head) {
  return head >= HeadMax && m.on_demand && !m.dense && m.queries.count * m.keys.count > kExactHeatmapCells;
}

HeatmapData attentionHeatmap(const std::shared_ptr<const Trace>& trace, const AttentionSelection& sel) {
  if (sel.head >= HeadMax)
    if (const AttentionMap& m = requireAttentionMap(*trace, sel); heatmapIsOverview(m, sel.head))
      return onDemandOverview(*trace, m, sel, trace);
  return attentionHeatmap(*trace, sel);
}

HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.head == HeadRollout) return rolloutHeatmap(trace, sel);
  if (sel.head == HeadFlow) return flowHeatmap(trace, sel);
  const AttentionMap& m = requireAttentionMap(trace, sel);
  const int64_t H = m.heads, n = m.queries.count * m.keys.count;
  if (heatmapIsOverview(m, sel.head)) return onDemandOverview(trace, m, sel, nullptr);
  HeatmapData d;
  d.rows = static_cast<int>(m.queries.count);
  d.cols = static_cast<int>(m.keys.count);
  std::vector<uint8_t> allowed;
  if (!m.dense) allowed.assign(static_cast<size_t>(n), 0);  // CSR: masked = not a nonzero
  if (sel.head >= 0) {
    if (sel.head >= H)
      throw AtlasError("'" + m.array + "' has " + std::to_string(H) + " heads; head " +
                       std::to_string(sel.head) + " does not exist");
    d.values = mapHead(trace, m, sel.head, m.dense ? nullptr : &allowed);
  } else if (sel.head == HeadMean) {
    d.values.assign(static_cast<size_t>(n), 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      const std::vector<float> a = mapHead(trace, m, h, m.dense ? nullptr : &allowed);
      for (int64_t i = 0; i < n; ++i) d.values[size_t(i)] += a[size_t(i)];
    }
    for (auto& v : d.values) v /= static_cast<float>(std::max<int64_t>(1, H));
  } else {
    for (int64_t h = 0; h < H; ++h) {
      const std::vector<float> a = mapHead(trace, m, h, m.dense ? nullptr : &allowed);
      if (h == 0) d.values = a;
      for (int64_t i = 0; i < n; ++i) d.values[size_t(i)] = std::max(d.values[size_t(i)], a[size_t(i)]);
    }
  }
  if (m.dense) copyMask(d, trace, m.companions.mask);
  else d.mask = std::move(allowed);
  if (std::find(d.mask.begin(), d.mask.end(), uint8_t(0)) == d.mask.end()) d.mask.clear();  // all allowed: fast path
  setMapLabels(d, trace, m);
  d.title = QString("%1, %2").arg(QString::fromStdString(attention_map_title(m)), headName(sel.head));
  return d;
}

}  // namespace atlas::ui
