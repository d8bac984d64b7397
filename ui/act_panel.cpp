// Universal Transformer with ACT (Dehghani et al. 2019, Graves 2016): ponder steps N(t),
// remainder R(t) and ponder cost per token as bars, the halting probability and the update
// weights as steps x positions heatmaps, and the attention of every recurrent step.
// Arrays: docs/variants.md "Universal Transformer with ACT".
#include <QRegularExpression>

#include "ui/variant_plots.h"

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
  if (trace.find("act.steps")) {
    const Tensor& n = requireArray(trace, "act.steps");
    const int L = static_cast<int>(n.shape[0]);
    const Tensor* r = trace.find("act.remainder") ? &requireArray(trace, "act.remainder") : nullptr;
    const Tensor* rho = trace.find("act.ponder") ? &requireArray(trace, "act.ponder") : nullptr;
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
  if (trace.find("act.halting"))
    out.push_back(stepsByPositions(trace, "act.halting", "halting probability h per step", "h"));
  if (trace.find("act.weights"))
    out.push_back(stepsByPositions(trace, "act.weights", "update weight p per step", "p"));
  static const QRegularExpression re(R"(^([a-z_]+)\.step(\d+)\.(attn|self_attn)$)");
  for (const auto& a : trace.arrays) {
    const auto m = re.match(QString::fromStdString(a.name));
    if (!m.hasMatch() || a.tensor.shape.size() != 3) continue;
    PanelPlot p;
    p.matrix = headSlice(a.tensor, ctx.head);
    p.name = QString("attention at step %1 (%2), %3").arg(m.captured(2), m.captured(1), headName(ctx.head < 0 ? HeadMean : ctx.head));
    p.matrix.title = p.name;
    if (const TracedArray* mask = trace.find(a.name + ".mask"); mask && mask->tensor.data.size() == p.matrix.values.size()) {
      p.matrix.mask.resize(mask->tensor.data.size());
      for (size_t k = 0; k < p.matrix.mask.size(); ++k) p.matrix.mask[k] = mask->tensor.data[k] != 0.0f;
    }
    p.matrix.rowLabels = tokenLabels(trace, p.matrix.rows);
    p.matrix.colLabels = tokenLabels(trace, p.matrix.cols);
    p.matrix.rowAxis = "query";
    p.matrix.colAxis = "key";
    p.rowAxis = PlotAxis::Token;
    p.colAxis = PlotAxis::Token;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

PanelProvider actProvider() {
  PanelProvider p;
  p.id = "act";
  p.title = "ACT (Universal Transformer)";
  p.arrays = "act.halting, act.weights, act.steps, act.remainder, act.ponder, <stack>.step<n>.<attn>";
  p.available = [](const Trace& t) { return t.find("act.steps") != nullptr || t.find("act.halting") != nullptr; };
  p.plots = actPlots;
  return p;
}

}  // namespace atlas::ui
