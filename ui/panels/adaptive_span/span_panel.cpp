// Adaptive attention span (Sukhbaatar et al. 2019): the learned span z per layer and head,
// the soft mask m_z(x) of one layer's heads, FLOPs saved, the L1 penalty and, for the dynamic
// span, z_t per head and position. Arrays: docs/variants.md "Adaptive attention span".
#include <algorithm>

#include "core/variants/adaptive_span/span_arrays.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

PanelPlot bars(const QString& name, const Tensor& t, const QString& yTitle) {
  // [layers, heads] (or [layers]): categories are the layers, one bar series per head.
  const int layers = static_cast<int>(t.shape[0]);
  const int heads = t.shape.size() > 1 ? static_cast<int>(t.shape[1]) : 1;
  PanelPlot p;
  p.name = name;
  p.kind = PanelPlot::Kind::Bars;
  p.matrix = matrixFrom(t, 0, layers, heads);
  p.matrix.title = name;
  p.matrix.rowLabels = indexLabels("layer ", layers);
  p.matrix.colLabels = heads == 1 ? QStringList{yTitle} : indexLabels("head ", heads);
  p.matrix.rowAxis = "layer";
  p.matrix.colAxis = heads == 1 ? "value" : "head";
  p.matrix.valueName = yTitle;
  p.rowAxis = PlotAxis::Layer;
  p.colAxis = heads == 1 ? PlotAxis::None : PlotAxis::Head;
  p.xTitle = "layer";
  p.yTitle = yTitle;
  return p;
}

std::vector<PanelPlot> spanPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  if (trace.find(span_arrays::kZ))
    out.push_back(bars("span z per layer and head", requireArray(trace, span_arrays::kZ), "z (tokens)"));
  if (const TracedArray* c = trace.find(span_arrays::kMaskCurve); c && c->tensor.shape.size() == 3) {
    const Tensor& t = c->tensor;  // [layers, heads, Lk]
    const int layers = static_cast<int>(t.shape[0]), heads = static_cast<int>(t.shape[1]),
              lk = static_cast<int>(t.shape[2]);
    const int l = std::clamp(ctx.layer, 0, layers - 1);
    PanelPlot p;
    p.name = QString("mask curve m_z(x), layer %1").arg(l);
    p.kind = PanelPlot::Kind::Curves;
    p.matrix = matrixFrom(t, static_cast<size_t>(l) * heads * lk, heads, lk);
    p.matrix.title = p.name;
    p.matrix.rowLabels = indexLabels("head ", heads);
    p.matrix.colLabels = indexLabels(QString(), lk);
    p.matrix.rowAxis = "head";
    p.matrix.colAxis = "distance x";
    p.matrix.valueName = "m_z(x)";
    p.rowAxis = PlotAxis::Head;
    p.xTitle = "distance x = i - j (tokens)";
    p.yTitle = "m_z(x)";
    out.push_back(std::move(p));
  }
  int layer = 0;
  for (const std::string& name : arraysEndingWith(trace, span_arrays::kDynamicZSuffix)) {
    const Tensor& t = requireArray(trace, name);  // [heads, Lq]
    if (t.shape.size() != 2) continue;
    const int heads = static_cast<int>(t.shape[0]), lq = static_cast<int>(t.shape[1]);
    PanelPlot p;
    const QString attn = QString::fromStdString(name.substr(0, name.size() - 15));
    p.name = QString("dynamic span z_t, %1").arg(attn);
    p.matrix = matrixFrom(t, 0, heads, lq);
    p.matrix.title = p.name;
    p.matrix.rowLabels = indexLabels("head ", heads);
    p.matrix.colLabels = tokenLabels(trace, lq);
    p.matrix.rowAxis = "head";
    p.matrix.colAxis = "position";
    p.matrix.valueName = "z_t (tokens)";
    p.rowAxis = PlotAxis::Head;
    p.colAxis = PlotAxis::Token;
    out.push_back(std::move(p));
    ++layer;
  }
  if (trace.find(span_arrays::kFlopsSaved))
    out.push_back(bars("FLOPs saved per layer and head", requireArray(trace, span_arrays::kFlopsSaved), "FLOPs saved"));
  if (trace.find(span_arrays::kPenalty))
    out.push_back(bars("L1 span penalty per layer", requireArray(trace, span_arrays::kPenalty), "penalty"));
  return out;
}

}  // namespace

namespace {

PanelProvider spanProvider() {
  PanelProvider p;
  p.id = "span";
  p.title = "Adaptive span";
  p.arrays = QString("%1, %2, %3, %4, <attn>%5")
                 .arg(span_arrays::kZ, span_arrays::kMaskCurve, span_arrays::kFlopsSaved, span_arrays::kPenalty,
                      span_arrays::kDynamicZSuffix);
  p.available = [](const Trace& t) { return t.find(span_arrays::kZ) != nullptr; };
  p.plots = spanPlots;
  p.selection = [](const Trace& t) {  // the mask curve is drawn for one layer
    PanelSelectionRanges r;
    if (const TracedArray* c = t.find(span_arrays::kMaskCurve); c && c->tensor.shape.size() == 3)
      r.layer = {static_cast<int>(c->tensor.shape[0]),
                 QString("the mask curves have %1 layers").arg(c->tensor.shape[0])};
    return r;
  };
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> adaptive_span_panels() { return {spanProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
