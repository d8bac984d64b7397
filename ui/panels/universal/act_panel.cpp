// Universal Transformer with ACT (Dehghani et al. 2019, Graves 2016): ponder steps N(t),
// remainder R(t) and ponder cost per token as bars, the halting probability and the update
// weights as steps x positions heatmaps, and the attention of every recurrent step.
// Arrays: docs/variants.md "Universal Transformer with ACT".
#include <algorithm>

#include "core/variants/universal/act_arrays.h"
#include "ui/panels/panel_registry.h"
#include "ui/views/attention_selection.h"

namespace atlas::ui {
namespace {

PanelPlot stepsByPositions(const Trace& trace, const std::string& name, const QString& title,
                           const QString& value) {
  const Tensor& t = requireArray(trace, name);  // [steps, L]
  const int steps = static_cast<int>(t.shape[0]), L = static_cast<int>(t.shape[1]);
  PanelPlot p;
  p.name = title;
  p.matrix = matrixFrom(t, 0, steps, L);
  p.matrix.title = title;
  for (int s = 0; s < steps; ++s) p.matrix.rowLabels << QString("step %1").arg(s + 1);  // steps are 1-based
  p.matrix.colLabels = tokenLabels(trace, L);
  p.matrix.rowAxis = "step";
  p.matrix.colAxis = "position";
  p.matrix.valueName = value;
  p.rowAxis = PlotAxis::Step;
  p.colAxis = PlotAxis::Token;
  return p;
}

std::vector<PanelPlot> actPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  if (trace.find(act_arrays::kSteps)) {
    const Tensor& n = requireArray(trace, act_arrays::kSteps);
    const int L = static_cast<int>(n.shape[0]);
    const Tensor* r = trace.find(act_arrays::kRemainder) ? &requireArray(trace, act_arrays::kRemainder) : nullptr;
    const Tensor* rho = trace.find(act_arrays::kPonder) ? &requireArray(trace, act_arrays::kPonder) : nullptr;
    PanelPlot p;
    p.name = "ponder steps N(t), remainder R(t), ponder cost per token";
    p.kind = PanelPlot::Kind::Bars;
    p.matrix.rows = L;
    p.matrix.cols = 3;
    p.matrix.values.resize(static_cast<size_t>(L) * 3, 0.0f);
    for (int i = 0; i < L; ++i) {
      p.matrix.values[static_cast<size_t>(i) * 3 + 0] = n.data[static_cast<size_t>(i)];
      if (r) p.matrix.values[static_cast<size_t>(i) * 3 + 1] = r->data[static_cast<size_t>(i)];
      if (rho) p.matrix.values[static_cast<size_t>(i) * 3 + 2] = rho->data[static_cast<size_t>(i)];
    }
    p.matrix.title = p.name;
    p.matrix.rowLabels = tokenLabels(trace, L);
    p.matrix.colLabels = {"N(t)", "R(t)", "ponder N+R"};
    p.matrix.rowAxis = "token";
    p.matrix.colAxis = "quantity";
    p.matrix.valueName = "steps";
    p.rowAxis = PlotAxis::Token;
    p.xTitle = "token";
    p.yTitle = "steps";
    out.push_back(std::move(p));
  }
  if (trace.find(act_arrays::kHalting))
    out.push_back(stepsByPositions(trace, act_arrays::kHalting, "halting probability h per step", "h"));
  if (trace.find(act_arrays::kWeights))
    out.push_back(stepsByPositions(trace, act_arrays::kWeights, "update weight p per step", "p"));
  // Every step's self-attention, from the catalogue (AttentionMap::step).
  for (const AttentionMap& map : trace.attention_maps) {
    const TracedArray* a = trace.find(map.array);
    if (map.step < 1 || map.kind == AttentionMapKind::Cross || !map.dense || !a || a->tensor.shape.size() != 3) continue;
    PanelPlot p;
    p.matrix = headSlice(a->tensor, ctx.head);
    p.name = QString("attention at step %1 (%2), %3")
                 .arg(map.step)
                 .arg(QString::fromStdString(map.stack), headName(ctx.head < 0 ? HeadMean : ctx.head));
    p.matrix.title = p.name;
    if (const TracedArray* mask = trace.find(map.companions.mask);
        mask && mask->tensor.data.size() == p.matrix.values.size()) {
      p.matrix.mask.resize(mask->tensor.data.size());
      for (size_t k = 0; k < p.matrix.mask.size(); ++k) p.matrix.mask[k] = mask->tensor.data[k] != 0.0f;
    }
    p.matrix.rowLabels = queryLabelsOf(trace, map);
    p.matrix.colLabels = keyLabelsOf(trace, map);
    p.matrix.rowAxis = "query";
    p.matrix.colAxis = "key";
    p.rowAxis = PlotAxis::Token;
    p.colAxis = PlotAxis::Token;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

namespace {

PanelProvider actProvider() {
  PanelProvider p;
  p.id = "act";
  p.title = "ACT (Universal Transformer)";
  p.arrays = QString("%1, %2, %3, %4, %5, the attention of every step")
                 .arg(act_arrays::kHalting, act_arrays::kWeights, act_arrays::kSteps, act_arrays::kRemainder,
                      act_arrays::kPonder);
  p.available = [](const Trace& t) {
    return t.find(act_arrays::kSteps) != nullptr || t.find(act_arrays::kHalting) != nullptr;
  };
  p.plots = actPlots;
  p.selection = [](const Trace& t) {  // every step's attention shows one head, or their mean
    PanelSelectionRanges r;
    r.meanHead = true;
    for (const AttentionMap& map : t.attention_maps)
      if (map.step >= 1 && map.kind != AttentionMapKind::Cross && map.dense)
        r.head.count = std::max(r.head.count, static_cast<int>(map.heads));
    r.head.what = QString("the steps' attention has %1 heads").arg(r.head.count);
    return r;
  };
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> universal_panels() { return {actProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
