// GTrXL gating layers (Parisotto et al. 2020): every gate g in {input, output, highway, r, z}
// of every attention / FFN sub-layer, [L, d_model] with values in (0, 1), found by their names
// (core/variants/gtrxl/gate_arrays.h). Shows the mean over dimensions per layer x position (segments
// concatenated in order) and, for the selected position, every dimension per layer.
#include <algorithm>
#include <map>
#include <optional>

#include "core/variants/gtrxl/gate_arrays.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

struct GateFamily {
  QString stack, sub, gate;
  // layer -> segment -> array (segment -1 when the names carry no segment)
  std::map<int, std::map<int, const Tensor*>> parts;
};

std::vector<GateFamily> gateFamilies(const Trace& trace) {
  std::vector<GateFamily> out;
  for (const auto& a : trace.arrays) {
    const std::optional<gate_arrays::GateArray> g = gate_arrays::parse(a.name);
    if (!g || a.tensor.shape.size() != 2) continue;
    const QString stack = QString::fromStdString(g->stack), sub = QString::fromStdString(g->sublayer),
                  gate = QString::fromStdString(g->gate);
    auto it = std::find_if(out.begin(), out.end(), [&](const GateFamily& f) {
      return f.stack == stack && f.sub == sub && f.gate == gate;
    });
    if (it == out.end()) it = out.insert(out.end(), GateFamily{stack, sub, gate, {}});
    it->parts[static_cast<int>(g->layer)][static_cast<int>(g->segment)] = &a.tensor;
  }
  return out;
}

std::vector<PanelPlot> gatePlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  for (const GateFamily& f : gateFamilies(trace)) {
    const int layers = f.parts.rbegin()->first + 1;
    // Positions of every layer: its segments' rows one after the other.
    int L = 0, d = 0;
    for (const auto& [seg, t] : f.parts.begin()->second) {
      L += static_cast<int>(t->shape[0]);
      d = static_cast<int>(t->shape[1]);
    }
    const QString what = QString("%1 %2 gate %3").arg(f.stack, f.sub, f.gate);
    PanelPlot mean;
    mean.name = "mean " + what + " per layer and position";
    mean.matrix.rows = layers;
    mean.matrix.cols = L;
    mean.matrix.values.assign(static_cast<size_t>(layers) * L, 0.0f);
    PanelPlot detail;
    const int q = std::clamp(ctx.query, 0, std::max(0, L - 1));
    detail.name = QString("%1 at position %2, per dimension").arg(what).arg(q);
    detail.matrix.rows = layers;
    detail.matrix.cols = d;
    detail.matrix.values.assign(static_cast<size_t>(layers) * d, 0.0f);
    for (const auto& [layer, segs] : f.parts) {
      int pos = 0;
      for (const auto& [seg, t] : segs) {
        const int rows = static_cast<int>(t->shape[0]), cols = static_cast<int>(t->shape[1]);
        for (int i = 0; i < rows && pos + i < L; ++i) {
          double s = 0;
          for (int k = 0; k < cols; ++k) s += t->data[static_cast<size_t>(i) * cols + k];
          mean.matrix.values[static_cast<size_t>(layer) * L + pos + i] = static_cast<float>(s / std::max(1, cols));
          if (pos + i == q)
            for (int k = 0; k < cols && k < d; ++k)
              detail.matrix.values[static_cast<size_t>(layer) * d + k] = t->data[static_cast<size_t>(i) * cols + k];
        }
        pos += rows;
      }
    }
    mean.matrix.title = mean.name;
    mean.matrix.rowLabels = indexLabels("layer ", layers);
    mean.matrix.colLabels = tokenLabels(trace, L);
    mean.matrix.rowAxis = "layer";
    mean.matrix.colAxis = "position";
    mean.matrix.valueName = "mean gate";
    mean.rowAxis = PlotAxis::Layer;
    mean.colAxis = PlotAxis::Token;
    detail.matrix.title = detail.name;
    detail.matrix.rowLabels = indexLabels("layer ", layers);
    detail.matrix.colLabels = indexLabels(QString(), d);
    detail.matrix.rowAxis = "layer";
    detail.matrix.colAxis = "dimension";
    detail.matrix.valueName = "gate";
    detail.rowAxis = PlotAxis::Layer;
    detail.colAxis = PlotAxis::Dimension;
    out.push_back(std::move(mean));
    out.push_back(std::move(detail));
  }
  return out;
}

}  // namespace

namespace {

PanelProvider gatesProvider() {
  PanelProvider p;
  p.id = "gates";
  p.title = "GTrXL gates";
  p.arrays = "<stack>.seg<s>.layer<i>.<attn|ffn>.gate.<input|output|highway|r|z> [L, d_model]";
  p.available = [](const Trace& t) { return !gateFamilies(t).empty(); };
  p.plots = gatePlots;
  p.selection = [](const Trace& t) {  // the per-dimension gate values of one position
    PanelSelectionRanges r;
    for (const GateFamily& f : gateFamilies(t)) {
      int L = 0;
      for (const auto& [seg, tensor] : f.parts.begin()->second) L += static_cast<int>(tensor->shape[0]);
      r.query.count = std::max(r.query.count, L);
    }
    r.query.what = QString("the gates cover %1 positions").arg(r.query.count);
    return r;
  };
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> gtrxl_panels() { return {gatesProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
