// Head statistics panel: one layers x heads heatmap per statistic and map family
// (core/analysis/head_statistics.h); clicking a cell selects that layer and head everywhere.
#include "core/analysis/head_statistics.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

std::vector<PanelPlot> headStatisticPlots(const Trace& trace, const PanelContext&) {
  std::vector<PanelPlot> out;
  const std::vector<HeadStatisticsRow> rows = head_statistics(trace);
  for (const HeadStatisticsFamily& f : head_statistics_families(rows)) {
    QString label = QString::fromStdString(attention_family_label(f.map));
    if (f.map.segment >= 0) label += QString(", segment %1").arg(f.map.segment);
    for (int s = 0; s < kHeadStatisticCount; ++s) {
      const auto stat = static_cast<HeadStatistic>(s);
      PanelPlot p;
      p.name = label + ": " + QString(head_statistic_name(stat)).replace('_', ' ');
      p.kind = PanelPlot::Kind::Matrix;
      p.matrix = layersByHeads(f.layers, f.heads, f.steps, f.table[s], p.name, head_statistic_meaning(stat));
      p.rowAxis = f.steps ? PlotAxis::Step : PlotAxis::Layer;
      p.colAxis = PlotAxis::Head;
      out.push_back(std::move(p));
    }
  }
  // Every head of every map as one sortable table: click a column header to rank the heads by
  // that statistic; a click on a row selects its layer (or step) and head.
  PanelPlot t;
  t.kind = PanelPlot::Kind::Table;
  t.name = "all heads (sortable table)";
  t.sortable = true;
  t.matrix.rows = static_cast<int>(rows.size());
  t.matrix.cols = 2 + kHeadStatisticCount;
  t.matrix.values.assign(size_t(t.matrix.rows) * t.matrix.cols, 0.0f);
  t.matrix.colLabels << "map" << "head";
  for (int s = 0; s < kHeadStatisticCount; ++s) t.matrix.colLabels << QString(head_statistic_name(HeadStatistic(s))).replace('_', ' ');
  for (size_t r = 0; r < rows.size(); ++r) {
    const HeadStatisticsRow& row = rows[r];
    t.matrix.rowLabels << QString::number(r);
    t.cellText << QString::fromStdString(attention_array_name(row.map)) << QString::number(row.head);
    t.matrix.values[r * size_t(t.matrix.cols) + 1] = float(row.head);
    for (int s = 0; s < kHeadStatisticCount; ++s) {
      t.cellText << QString::number(row.value[s], 'f', 4);
      t.matrix.values[r * size_t(t.matrix.cols) + 2 + size_t(s)] = float(row.value[s]);
    }
    t.rowPicks.push_back({static_cast<int>(row.map.step > 0 ? row.map.step - 1 : row.map.layer), static_cast<int>(row.head)});
  }
  t.matrix.title = "head statistics of every head";
  t.matrix.rowAxis = "head";
  t.matrix.colAxis = "statistic";
  t.matrix.valueName = "value";
  if (!rows.empty()) out.push_back(std::move(t));
  return out;
}

}  // namespace

PanelProvider headsProvider() {
  PanelProvider p;
  p.id = "heads";
  p.title = "Head statistics";
  p.arrays = "self-attention maps (any model; docs/head-statistics.md)";
  p.available = [](const Trace& t) {
    for (const AttentionMap& m : t.attention_maps)
      if (head_statistics_apply(m)) return true;
    return false;
  };
  p.plots = headStatisticPlots;
  p.autoShow = false;  // opened from View > Variant panels; it reads the trace only
  return p;
}

}  // namespace atlas::ui
