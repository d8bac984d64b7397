// Output predictions of models with an output head (GPT-2's next tokens beside the
// attention): softmax of the traced logits [L, vocab]. For a decoder, row i is the next token
// after position i; for an encoder (BERT-style) the prediction at position i; for an
// encoder-decoder, rows follow the target tokens.
//   1. top-10 tokens at the selected position (the last one when none is selected), as bars
//   2. top-5 at every position, as a table (cell colour = probability)
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ui/panels/panel_registry.h"
#include "core/model/model_arrays.h"

namespace atlas::ui {
namespace {

struct Ranked {
  std::vector<int32_t> ids;
  std::vector<float> probs;
};

// The k most probable entries of softmax(logits row r), best first (ties: lower id first).
// One pass keeps the k best in a small sorted array, so a 50k vocabulary costs one scan.
Ranked topOfRow(const Tensor& logits, int row, int k) {
  const int64_t V = logits.shape[1];
  const float* x = logits.data.data() + static_cast<size_t>(row) * V;
  k = static_cast<int>(std::min<int64_t>(k, V));
  std::vector<int32_t> best;  // ids, best first
  best.reserve(size_t(k) + 1);
  float mx = x[0];
  for (int32_t v = 0; v < V; ++v) {
    mx = std::max(mx, x[v]);
    if (int(best.size()) == k && !(x[v] > x[best.back()])) continue;
    auto at = std::upper_bound(best.begin(), best.end(), v, [x](int32_t a, int32_t b) { return x[a] > x[b]; });
    best.insert(at, v);
    if (int(best.size()) > k) best.pop_back();
  }
  float z = 0;  // float exponentials vectorise; the sum of <= 50k terms <= 1 each is exact enough
  for (int64_t v = 0; v < V; ++v) z += std::exp(x[v] - mx);
  Ranked r;
  for (int32_t id : best) {
    r.ids.push_back(id);
    r.probs.push_back(std::exp(x[id] - mx) / z);
  }
  return r;
}

// The top-k of every row: L x vocab exponentials (25M for GPT-2 at 512 tokens, ~0.3 s), so
// computed once per run and reused while only the selected position changes. A run is told
// apart by the logits' address, shape and first and last rows (every row of a decoder's last
// position, and every row of an encoder, depends on the whole input). GUI thread only.
const std::vector<Ranked>& rankedRows(const Tensor& logits, int k) {
  struct Cache {
    const float* data = nullptr;
    Shape shape;
    int k = 0;
    std::vector<float> first, last;
    std::vector<Ranked> rows;
  };
  static Cache cache;
  const int64_t L = logits.shape[0], V = logits.shape[1];
  const float* x = logits.data.data();
  const bool same = cache.data == x && cache.shape == logits.shape && cache.k == k &&
                    std::equal(cache.first.begin(), cache.first.end(), x) &&
                    std::equal(cache.last.begin(), cache.last.end(), x + (L - 1) * V);
  if (same) return cache.rows;
  cache.data = x;
  cache.shape = logits.shape;
  cache.k = k;
  cache.first.assign(x, x + V);
  cache.last.assign(x + (L - 1) * V, x + L * V);
  cache.rows.clear();
  for (int i = 0; i < L; ++i) cache.rows.push_back(topOfRow(logits, i, k));
  return cache.rows;
}

QString tokenName(const PanelContext& ctx, int32_t id) {
  return ctx.tokenText ? displayLabel(ctx.tokenText(id).toStdString()) : QString("#%1").arg(id);
}

std::vector<PanelPlot> predictionPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const Tensor& logits = requireArray(trace, model_arrays::kLogits);
  if (logits.shape.size() != 2 || logits.shape[0] < 1) return out;
  const int L = static_cast<int>(logits.shape[0]);
  const bool target = !trace.target_tokens.empty() && static_cast<int>(trace.target_tokens.size()) == L;
  const QStringList positions = tokenLabels(trace, L, target);
  // An image classifier (ViT) predicts from [CLS], position 0, whatever patch is selected (the
  // head means nothing on a patch); a language model's next token follows the selected
  // position, by default the last.
  const bool classifier = std::any_of(trace.source_tokens.begin(), trace.source_tokens.end(),
                                      [](const TokenInfo& t) { return !t.patch.empty(); });
  const int at = classifier ? 0 : ctx.query >= 0 && ctx.query < L ? ctx.query : L - 1;

  const Ranked top = topOfRow(logits, at, 10);
  PanelPlot bars;
  bars.name = QString("top-%1 at position %2 (%3)").arg(top.ids.size()).arg(at).arg(positions.value(at));
  bars.kind = PanelPlot::Kind::Bars;
  bars.matrix.rows = static_cast<int>(top.ids.size());
  bars.matrix.cols = 1;
  bars.matrix.values = top.probs;
  for (int32_t id : top.ids) bars.matrix.rowLabels << tokenName(ctx, id);
  bars.matrix.colLabels = {"probability"};
  bars.matrix.title = classifier ? "class distribution at " + positions.value(at) + " (position 0)"
                                  : "output distribution after " + positions.value(at) +
                                        QString(" (position %1)").arg(at);
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
  const std::vector<Ranked>& columns = rankedRows(logits, K);
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
    const TracedArray* a = t.find(model_arrays::kLogits);
    return a && a->tensor.shape.size() == 2;
  };
  p.plots = predictionPlots;
  p.selection = [](const Trace& t) {  // the next token after one position (an image: [CLS] only)
    PanelSelectionRanges r;
    const TracedArray* a = t.find(model_arrays::kLogits);
    const bool classifier = std::any_of(t.source_tokens.begin(), t.source_tokens.end(),
                                        [](const TokenInfo& tok) { return !tok.patch.empty(); });
    if (a && a->tensor.shape.size() == 2 && !classifier)
      r.query = {static_cast<int>(a->tensor.shape[0]), QString("the logits have %1 positions").arg(a->tensor.shape[0])};
    return r;
  };
  p.autoShow = false;  // opened from View > Variant panels; it only reads the trace
  return p;
}

}  // namespace atlas::ui
