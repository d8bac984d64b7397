// Head statistics panel (issue 22): one layers x heads heatmap per statistic and map family
// (core/analysis/head_statistics.h); clicking a cell selects that layer and head everywhere.
#include <map>

#include "core/analysis/head_statistics.h"
#include "ui/variant_plots.h"

namespace atlas::ui {
namespace {

bool measurable(const AttentionMap& m) {
  return m.kind != AttentionMapKind::Cross && m.queries.side == m.keys.side &&
         m.queries.side != TokenSide::Positions && (m.dense || m.csr);
}

// "decoder self-attention" (+ ", segment 2"): the family a layers x heads plot collects.
QString familyLabel(const AttentionMap& m) {
  QString s = QString::fromStdString(attention_family_label(m));
  if (m.segment >= 0) s += QString(", segment %1").arg(m.segment);
  return s;
}

std::vector<PanelPlot> headStatisticPlots(const Trace& trace, const PanelContext&) {
  struct Family {
    bool steps = false;
    int64_t layers = 0, heads = 0;
    std::vector<const HeadStatisticsRow*> rows;
  };
  const std::vector<HeadStatisticsRow> rows = head_statistics(trace);
  std::map<QString, Family> families;
  std::vector<QString> order;  // catalogue order
  for (const auto& r : rows) {
    const QString key = familyLabel(r.map);
    if (!families.count(key)) order.push_back(key);
    Family& f = families[key];
    f.steps = r.map.step > 0;
    f.layers = std::max(f.layers, (f.steps ? r.map.step - 1 : r.map.layer) + 1);
    f.heads = std::max(f.heads, r.head + 1);
    f.rows.push_back(&r);
  }
  std::vector<PanelPlot> out;
  for (const QString& key : order) {
    const Family& f = families[key];
    for (int s = 0; s < kHeadStatisticCount; ++s) {
      const auto stat = static_cast<HeadStatistic>(s);
      PanelPlot p;
      p.name = key + ": " + QString(head_statistic_name(stat)).replace('_', ' ');
      p.kind = PanelPlot::Kind::Matrix;
      p.matrix.rows = static_cast<int>(f.layers);
      p.matrix.cols = static_cast<int>(f.heads);
      p.matrix.values.assign(static_cast<size_t>(f.layers * f.heads), 0.0f);
      for (const HeadStatisticsRow* r : f.rows)
        p.matrix.values[static_cast<size_t>((f.steps ? r->map.step - 1 : r->map.layer) * f.heads + r->head)] =
            static_cast<float>(r->value[s]);
      for (int64_t l = 0; l < f.layers; ++l)
        p.matrix.rowLabels << (f.steps ? QString("S%1").arg(l + 1) : QString("L%1").arg(l));
      p.matrix.colLabels = indexLabels("H", static_cast<int>(f.heads));
      p.matrix.title = key + ": " + head_statistic_meaning(stat);
      p.matrix.rowAxis = f.steps ? "step" : "layer";
      p.matrix.colAxis = "head";
      p.matrix.valueName = head_statistic_name(stat);
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
      if (measurable(m)) return true;
    return false;
  };
  p.plots = headStatisticPlots;
  p.autoShow = false;  // opened from View > Variant panels; it reads the trace only
  return p;
}

}  // namespace atlas::ui
