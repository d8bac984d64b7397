// Per-layer predictions, the logit lens (seed 000's per-layer auxiliary losses; core/
// logit_lens.h): for every layer (Universal Transformer: step) and position the top-k next
// tokens and their probabilities as a table. The arrays are computed on the run's worker
// while this panel is open (the window traces the hidden states and calls add_logit_lens).
#include <algorithm>

#include "core/analysis/logit_lens.h"
#include "ui/panels/panel_registry.h"
#include "core/model/model_arrays.h"

namespace atlas::ui {
namespace {

std::vector<PanelPlot> lensPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  for (const std::string& idsName : arraysEndingWith(trace, kLogitLensIdsSuffix)) {
    const std::string stack = idsName.substr(0, idsName.size() - std::string(kLogitLensIdsSuffix).size());
    const Tensor& ids = requireArray(trace, idsName);                    // [layers, L, K]
    const Tensor& probs = requireArray(trace, logit_lens_probs(stack));  // [layers, L, K]
    if (ids.shape.size() != 3 || probs.shape != ids.shape) continue;
    const int layers = static_cast<int>(ids.shape[0]), L = static_cast<int>(ids.shape[1]),
              K = static_cast<int>(ids.shape[2]);
    // A Universal Transformer's lens rows are its steps (the catalogue's maps of the stack have steps).
    const bool steps = std::any_of(trace.attention_maps.begin(), trace.attention_maps.end(),
                                   [&](const AttentionMap& m) { return m.stack == stack && m.step >= 1; });
    PanelPlot p;
    p.kind = PanelPlot::Kind::Table;
    p.name = QString("%1: top-%2 next tokens per %3 and position").arg(QString::fromStdString(stack)).arg(K).arg(steps ? "step" : "layer");
    p.matrix.rows = layers;
    p.matrix.cols = L;
    p.matrix.values.resize(static_cast<size_t>(layers) * L);
    for (int l = 0; l < layers; ++l) {
      p.matrix.rowLabels << (steps ? QString("step %1").arg(l + 1) : QString("layer %1").arg(l));
      for (int i = 0; i < L; ++i) {
        const size_t base = (static_cast<size_t>(l) * L + i) * K;
        p.matrix.values[static_cast<size_t>(l) * L + i] = probs.data[base];  // top-1 probability
        QStringList lines;
        for (int k = 0; k < K; ++k) {
          const auto id = static_cast<int32_t>(ids.data[base + k]);
          const QString tok = ctx.tokenText ? displayLabel(ctx.tokenText(id).toStdString()) : QString("#%1").arg(id);
          lines << QString("%1 %2").arg(tok).arg(static_cast<double>(probs.data[base + k]), 0, 'f', 3);
        }
        p.cellText << lines.join('\n');
      }
    }
    p.matrix.colLabels = tokenLabels(trace, L, stack == "decoder" && !trace.target_tokens.empty());
    p.matrix.title = p.name + " (colour: top-1 probability)";
    p.matrix.rowAxis = steps ? "step" : "layer";
    p.matrix.colAxis = "position";
    p.matrix.valueName = "top-1 probability";
    p.rowAxis = steps ? PlotAxis::Step : PlotAxis::Layer;
    p.colAxis = PlotAxis::Token;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

PanelProvider lensProvider() {
  PanelProvider p;
  p.id = "lens";
  p.title = "Per-layer predictions";
  p.arrays = "<stack>.logit_lens.ids, <stack>.logit_lens.probs (models with an output head)";
  p.available = [](const Trace& t) { return t.find(model_arrays::kLogits) != nullptr; };
  p.plots = lensPlots;
  p.autoShow = false;
  return p;
}

}  // namespace atlas::ui
