// Reformer LSH attention (Kitaev et al. 2020): the bucket of every token in every hash round
// (rounds x positions), and per round the sorted order (the bucket of each sorted slot, its
// position and token in the label) with the chunk boundaries marked on the axis. Buckets are
// ids, not magnitudes: drawn in categorical colours (HeatmapData::categories), the same id in
// the same colour in every round and head. Arrays: docs/variants.md "Reformer".
#include <algorithm>

#include "core/variants/reformer/lsh_arrays.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

std::vector<PanelPlot> lshPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const std::string suffix = lsh_arrays::kFirstRoundSuffix;
  for (const std::string& first : arraysEndingWith(trace, suffix)) {
    const std::string name = first.substr(0, first.size() - suffix.size());
    const QString qname = QString::fromStdString(name);
    int rounds = 0;
    while (trace.find(lsh_arrays::round_buckets(name, rounds))) ++rounds;
    const Tensor& b0 = requireArray(trace, first);  // [heads, L]
    const int heads = static_cast<int>(b0.shape[0]), L = static_cast<int>(b0.shape[1]);
    const int h = std::clamp(ctx.head, 0, heads - 1);
    const QStringList tokens = tokenLabels(trace, L);
    int buckets = 1;  // ids 0..buckets-1 over every round and head of the layer
    for (int r = 0; r < rounds; ++r)
      for (float v : requireArray(trace, lsh_arrays::round_buckets(name, r)).data)
        buckets = std::max(buckets, static_cast<int>(v) + 1);

    PanelPlot grid;
    grid.name = QString("buckets per round, %1, head %2").arg(qname).arg(h);
    grid.matrix.rows = rounds;
    grid.matrix.cols = L;
    for (int r = 0; r < rounds; ++r) {
      const Tensor& b = requireArray(trace, lsh_arrays::round_buckets(name, r));
      const HeatmapData row = matrixFrom(b, static_cast<size_t>(h) * L, 1, L);
      grid.matrix.values.insert(grid.matrix.values.end(), row.values.begin(), row.values.end());
      grid.matrix.rowLabels << QString("round %1").arg(r);
    }
    grid.matrix.title = grid.name;
    grid.matrix.colLabels = tokens;
    grid.matrix.rowAxis = "hash round";
    grid.matrix.colAxis = "position";
    grid.matrix.valueName = "bucket";
    grid.matrix.categories = buckets;
    grid.rowAxis = PlotAxis::Round;
    grid.colAxis = PlotAxis::Token;
    out.push_back(std::move(grid));

    // Chunk starts in sorted order (the last entry is L).
    std::vector<int> chunkStarts;
    if (const TracedArray* c = trace.find(lsh_arrays::chunks(name)))
      for (float v : c->tensor.data) chunkStarts.push_back(static_cast<int>(v));
    for (int r = 0; r < rounds; ++r) {
      const TracedArray* order = trace.find(lsh_arrays::round_order(name, r));
      if (!order) continue;
      const Tensor& b = requireArray(trace, lsh_arrays::round_buckets(name, r));
      PanelPlot p;
      p.name = QString("sorted order and chunks, %1, head %2, round %3").arg(qname).arg(h).arg(r);
      p.matrix.rows = 1;
      p.matrix.cols = L;
      p.matrix.values.resize(static_cast<size_t>(L));
      int chunk = 0;
      for (int s = 0; s < L; ++s) {
        const int pos = static_cast<int>(order->tensor.data[static_cast<size_t>(h) * L + s]);
        p.matrix.values[static_cast<size_t>(s)] = pos >= 0 && pos < L ? b.data[static_cast<size_t>(h) * L + pos] : -1.0f;
        QString label = pos >= 0 && pos < L ? QString("%1 %2").arg(pos).arg(tokens.value(pos)) : QString::number(pos);
        // "┃c" marks the first sorted slot of chunk c.
        if (std::find(chunkStarts.begin(), chunkStarts.end(), s) != chunkStarts.end() && s < L)
          label = QString("\u2503%1 ").arg(chunk++) + label;
        p.matrix.colLabels << label;
      }
      p.matrix.rowLabels = {"bucket"};
      p.matrix.title = p.name;
      p.matrix.rowAxis = "";
      p.matrix.colAxis = "sorted slot: position token (\u2503c = chunk c starts)";
      p.matrix.valueName = "bucket";
      p.matrix.categories = buckets;
      p.colAxis = PlotAxis::None;
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace

namespace {

PanelProvider lshProvider() {
  PanelProvider p;
  p.id = "lsh";
  p.title = "LSH (Reformer)";
  p.arrays = "<attn>.round<r>.buckets, <attn>.round<r>.order, <attn>.chunks";
  p.available = [](const Trace& t) { return !arraysEndingWith(t, lsh_arrays::kFirstRoundSuffix).empty(); };
  p.plots = lshPlots;
  p.selection = [](const Trace& t) {  // the buckets of one head
    PanelSelectionRanges r;
    for (const std::string& first : arraysEndingWith(t, lsh_arrays::kFirstRoundSuffix))
      if (const TracedArray* b = t.find(first); b && !b->tensor.shape.empty())
        r.head.count = std::max(r.head.count, static_cast<int>(b->tensor.shape[0]));
    r.head.what = QString("the LSH layers have %1 heads").arg(r.head.count);
    return r;
  };
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> reformer_panels() { return {lshProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
