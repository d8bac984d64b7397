// Output predictions of models with an output head (issue 7: GPT-2's next tokens beside the
// attention): softmax of the traced logits [L, vocab]. For a decoder, row i is the next token
// after position i; for an encoder (BERT-style) the prediction at position i; for an
// encoder-decoder, rows follow the target tokens.
//   1. top-10 tokens at the selected position (the last one when none is selected), as bars
//   2. top-5 at every position, as a table (cell colour = probability)
#include <algorithm>
#include <cmath>
#include <numeric>

#include "variant_plots.h"

namespace atlas::ui {
namespace {

struct Ranked {
  std::vector<int32_t> ids;
  std::vector<float> probs;
};

// The k most probable entries of softmax(logits row r), best first.
Ranked topOfRow(const Tensor& logits, int row, int k) {
  const int64_t V = logits.shape[1];
  const float* x = logits.data.data() + static_cast<size_t>(row) * V;
  const float mx = *std::max_element(x, x + V);
  double z = 0;
  for (int64_t v = 0; v < V; ++v) z += std::exp(double(x[v] - mx));
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  k = static_cast<int>(std::min<int64_t>(k, V));
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
  Ranked r;
  for (int i = 0; i < k; ++i) {
    r.ids.push_back(order[size_t(i)]);
    r.probs.push_back(static_cast<float>(std::exp(double(x[order[size_t(i)]] - mx)) / z));
  }
  return r;
}

QString tokenName(const PanelContext& ctx, int32_t id) {
  return ctx.tokenText ? displayLabel(ctx.tokenText(id).toStdString()) : QString("#%1").arg(id);
}

std::vector<PanelPlot> predictionPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const Tensor& logits = requireArray(trace, "logits");
  if (logits.shape.size() != 2 || logits.shape[0] < 1) return out;
  const int L = static_cast<int>(logits.shape[0]);
  const bool target = !trace.target_tokens.empty() && static_cast<int>(trace.target_tokens.size()) == L;
  const QStringList positions = tokenLabels(trace, L, target);
  const int at = ctx.query >= 0 && ctx.query < L ? ctx.query : L - 1;

  const Ranked top = topOfRow(logits, at, 10);
  PanelPlot bars;
  bars.name = QString("top-%1 at position %2 (%3)").arg(top.ids.size()).arg(at).arg(positions.value(at));
  bars.kind = PanelPlot::Kind::Bars;
  bars.matrix.rows = static_cast<int>(top.ids.size());
  bars.matrix.cols = 1;
  bars.matrix.values = top.probs;
  for (int32_t id : top.ids) bars.matrix.rowLabels << tokenName(ctx, id);
  bars.matrix.colLabels = {"probability"};
  bars.matrix.title = "output distribution after " + positions.value(at) + QString(" (position %1)").arg(at);
  bars.matrix.rowAxis = "token";
  bars.matrix.colAxis = "quantity";
  bars.matrix.valueName = "probability";
  bars.xTitle = "predicted token";
  bars.yTitle = "probability";
  out.push_back(std::move(bars));

  const int K = 5;
  PanelPlot table;
  table.name = QString("top-%1 at every position").arg(K);
  table.kind = PanelPlot::Kind::Table;
  table.matrix.rows = K;
  table.matrix.cols = L;
  table.matrix.values.assign(static_cast<size_t>(K) * L, 0.0f);
  table.cellText.reserve(K * L);
  std::vector<Ranked> columns;
  for (int i = 0; i < L; ++i) columns.push_back(topOfRow(logits, i, K));
  for (int k = 0; k < K; ++k) {
    table.matrix.rowLabels << QString("rank %1").arg(k + 1);
    for (int i = 0; i < L; ++i) {
      const Ranked& c = columns[size_t(i)];
      if (k >= static_cast<int>(c.ids.size())) {
        table.cellText << QString();
        continue;
      }
      table.matrix.values[static_cast<size_t>(k) * L + i] = c.probs[size_t(k)];
      table.cellText << QString("%1 %2").arg(tokenName(ctx, c.ids[size_t(k)])).arg(double(c.probs[size_t(k)]), 0, 'f', 3);
    }
  }
  table.matrix.colLabels = positions;
  table.matrix.title = table.name + " (colour: probability)";
  table.matrix.rowAxis = "rank";
  table.matrix.colAxis = "position";
  table.matrix.valueName = "probability";
  table.colAxis = PlotAxis::Token;
  out.push_back(std::move(table));
  return out;
}

}  // namespace

PanelProvider predictionsProvider() {
  PanelProvider p;
  p.id = "predictions";
  p.title = "Predictions";
  p.arrays = "logits [L, vocab] (models with an output head)";
  p.available = [](const Trace& t) {
    const TracedArray* a = t.find("logits");
    return a && a->tensor.shape.size() == 2;
  };
  p.plots = predictionPlots;
  p.autoShow = false;  // opened from View > Variant panels; it only reads the trace
  return p;
}

}  // namespace atlas::ui
