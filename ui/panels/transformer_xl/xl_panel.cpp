// Transformer-XL (Dai et al. 2019): the attention of one layer and head per segment with the
// memory columns (keys from earlier segments, `xl.seg<s>.key_segment` < s) labelled by the
// segment they came from, and the four score terms (a) content, (b) content-position,
// (c) global content bias, (d) global position bias side by side. The terms are traced only
// with TraceOptions::scores, which the window turns on while this panel is open. In the app the
// panel follows the main view's segment, layer and head (one selection, no segment choice of its
// own; an aggregate head shows the mean over heads); without a segment (the CLI) it lists every
// segment.
#include <algorithm>

#include "core/variants/transformer_xl/xl_arrays.h"
#include "ui/panels/panel_registry.h"
#include "ui/views/attention_selection.h"

namespace atlas::ui {
namespace {

// The segment maps of the catalogue (AttentionMap::segment), by segment, of one layer; and the
// number of layers segment 0 has.
std::vector<const AttentionMap*> segmentMaps(const Trace& trace, int layer) {
  std::vector<const AttentionMap*> out;
  for (const AttentionMap& m : trace.attention_maps)
    if (m.segment >= 0 && m.layer == layer && m.dense && m.kind != AttentionMapKind::Cross) out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const AttentionMap* a, const AttentionMap* b) { return a->segment < b->segment; });
  return out;
}

// The main view's segment when the trace has it (the app's shared selection: the panel shows
// what the heatmap shows); every segment otherwise (the CLI's panel export, no segment chosen).
std::vector<const AttentionMap*> shownSegmentMaps(const Trace& trace, int layer, int segment) {
  std::vector<const AttentionMap*> all = segmentMaps(trace, layer);
  for (const AttentionMap* m : all)
    if (m->segment == segment) return {m};
  return all;
}

int countLayers(const Trace& trace) {
  int n = 0;
  for (const AttentionMap& m : trace.attention_maps)
    if (m.segment == 0) n = std::max(n, static_cast<int>(m.layer) + 1);
  return n;
}

std::vector<PanelPlot> xlPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const int layers = countLayers(trace);
  if (layers == 0) return out;
  const int l = std::clamp(ctx.layer, 0, layers - 1);
  for (const AttentionMap* map : shownSegmentMaps(trace, l, ctx.segment)) {
    const int s = static_cast<int>(map->segment);
    const Tensor& a = requireArray(trace, map->array);  // [heads, Lq, Lk]
    const int heads = static_cast<int>(a.shape[0]), lq = static_cast<int>(a.shape[1]),
              lk = static_cast<int>(a.shape[2]);
    // An aggregate head in the main view (mean, max, rollout, ...) reads as the mean over heads,
    // named so: the terms are linear in the scores, so their means add up as the heads' do.
    const int h = ctx.head < 0 ? -1 : std::clamp(ctx.head, 0, heads - 1);
    const QString head = headName(h < 0 ? HeadMean : h);
    const int mem = lk - lq;
    const TracedArray* seg = trace.find(xl_arrays::key_segment(s));
    const std::vector<std::string> keyTokens = key_labels(trace, *map), queryTokens = query_labels(trace, *map);
    QStringList keys;
    for (int j = 0; j < lk; ++j) {
      QString label = j < static_cast<int>(keyTokens.size()) ? displayLabel(keyTokens[static_cast<size_t>(j)]) : QString::number(j);
      const int from = seg && j < static_cast<int>(seg->tensor.data.size()) ? static_cast<int>(seg->tensor.data[static_cast<size_t>(j)]) : s;
      if (from < s) label = QString("[mem s%1] ").arg(from) + label;  // a memory column
      keys << label;
    }
    QStringList queries;
    for (const std::string& q : queryTokens) queries << displayLabel(q);
    std::vector<uint8_t> mask;
    if (const TracedArray* m = trace.find(map->companions.mask);
        m && m->tensor.data.size() == static_cast<size_t>(lq) * lk)
      for (float v : m->tensor.data) mask.push_back(v != 0.0f);

    PanelPlot p;
    p.name = QString("segment %1, layer %2, %3: attention over memory + segment").arg(s).arg(l).arg(head);
    p.matrix = headSlice(a, h);
    p.matrix.mask = mask;
    p.matrix.title = QString("%1 (%2 memory columns)").arg(p.name).arg(mem);
    p.matrix.rowLabels = queries;
    p.matrix.colLabels = keys;
    p.matrix.rowAxis = "query";
    p.matrix.colAxis = "key ([mem s] = memory from segment s)";
    p.rowAxis = PlotAxis::Token;
    out.push_back(std::move(p));

    if (trace.find(xl_arrays::term(s, l, 'a'))) {
      PanelPlot t;
      t.name = QString("segment %1, layer %2, %3: score terms a | b | c | d").arg(s).arg(l).arg(head);
      t.matrix.rows = lq;
      t.matrix.cols = 4 * lk;
      t.matrix.values.assign(static_cast<size_t>(lq) * 4 * lk, 0.0f);
      const char names[4] = {'a', 'b', 'c', 'd'};
      for (int k = 0; k < 4; ++k) {
        const HeatmapData term = headSlice(requireArray(trace, xl_arrays::term(s, l, names[k])), h);
        for (int i = 0; i < lq; ++i)
          for (int j = 0; j < lk; ++j)
            t.matrix.values[static_cast<size_t>(i) * 4 * lk + k * lk + j] = term.at(i, j);
        for (int j = 0; j < lk; ++j) t.matrix.colLabels << QString("%1: ").arg(names[k]) + keys[j];
      }
      if (!mask.empty()) {
        t.matrix.mask.resize(static_cast<size_t>(lq) * 4 * lk);
        for (int i = 0; i < lq; ++i)
          for (int k = 0; k < 4; ++k)
            for (int j = 0; j < lk; ++j)
              t.matrix.mask[static_cast<size_t>(i) * 4 * lk + k * lk + j] = mask[static_cast<size_t>(i) * lk + j];
      }
      t.matrix.title = t.name + " (each / sqrt(d_head))";
      t.matrix.rowLabels = queries;
      t.matrix.rowAxis = "query";
      t.matrix.colAxis = "term: key";
      t.matrix.valueName = "score term";
      t.mapping.colormap = Colormap::Diverging;
      t.rowAxis = PlotAxis::Token;
      out.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

namespace {

PanelProvider xlProvider() {
  PanelProvider p;
  p.id = "xl";
  p.title = "Transformer-XL";
  p.arrays = "the attention of every segment, xl.seg<s>.key_segment, xl.seg<s>.layer<i>.terms.a..d (with scores)";
  p.available = [](const Trace& t) { return t.find(xl_arrays::key_segment(0)) != nullptr || countLayers(t) > 0; };
  p.plots = xlPlots;
  p.selection = [](const Trace& t) {  // one layer and head of every segment
    PanelSelectionRanges r;
    r.layer = {countLayers(t), QString("the segments have %1 layers").arg(countLayers(t))};
    for (const AttentionMap& m : t.attention_maps)
      if (m.segment >= 0 && m.dense && m.kind != AttentionMapKind::Cross)
        r.head.count = std::max(r.head.count, static_cast<int>(m.heads));
    r.head.what = QString("the segments' attention has %1 heads").arg(r.head.count);
    return r;
  };
  p.needsScores = true;
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> transformer_xl_panels() { return {xlProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
