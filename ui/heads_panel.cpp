// Head statistics panel: one layers x heads heatmap per statistic and map family
// (core/analysis/head_statistics.h); clicking a cell selects that layer and head everywhere.
#include "core/analysis/head_statistics.h"
#include "ui/variant_plots.h"

namespace atlas::ui {
namespace {

std::vector<PanelPlot> headStatisticPlots(const Trace& trace, const PanelContext&) {
  std::vector<PanelPlot> out;
  for (const HeadStatisticsFamily& f : head_statistics_families(head_statistics(trace))) {
    QString label = QString::fromStdString(attention_family_label(f.map));
    if (f.map.segment >= 0) label += QString(", segment %1").arg(f.map.segment);
    for (int s = 0; s < kHeadStatisticCount; ++s) {
      const auto stat = static_cast<HeadStatistic>(s);
      PanelPlot p;
      p.name = label + ": " + QString(head_statistic_name(stat)).replace('_', ' ');
      p.kind = PanelPlot::Kind::Matrix;
      p.matrix.rows = static_cast<int>(f.layers);
      p.matrix.cols = static_cast<int>(f.heads);
      p.matrix.values.assign(f.table[s].begin(), f.table[s].end());
      for (int64_t l = 0; l < f.layers; ++l)
        p.matrix.rowLabels << (f.steps ? QString("S%1").arg(l + 1) : QString("L%1").arg(l));
      p.matrix.colLabels = indexLabels("H", static_cast<int>(f.heads));
      p.matrix.title = p.name;
      p.matrix.rowAxis = f.steps ? "step" : "layer";
      p.matrix.colAxis = "head";
      p.matrix.valueName = head_statistic_meaning(stat);
      p.rowAxis = f.steps ? PlotAxis::Step : PlotAxis::Layer;
      p.colAxis = PlotAxis::Head;
      out.push_back(std::move(p));
    }
  }
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
