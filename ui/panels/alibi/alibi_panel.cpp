// ALiBi (Press, Smith & Lewis 2022, "Train Short, Test Long"; core/variants/alibi/): for the
// selected layer the bias -m_h |i - j| that each head adds to its scores, as a heatmap over the
// run's positions for the selected head, as heads x distance, as one curve per head against
// the distance (slopes in the legend), and the slopes as a table. Everything is read from the
// layer's traced `<attn>.alibi.distance_bias` [L, heads] (row d: the bias of a key d positions
// away, so row 1 is minus the slopes); nothing is recomputed from the config.
#include <algorithm>
#include <cmath>

#include "core/variants/alibi/alibi_attention.h"
#include "core/variants/alibi/alibi_slopes.h"
#include "ui/panels/panel_registry.h"
#include "ui/views/map_matrix.h"

namespace atlas::ui {
namespace {

// A position heatmap larger than this many rows shows its first kAlibiMaxPositions positions
// (L x L cells of one head; the by-distance plots show every distance).
constexpr int kAlibiMaxPositions = 1024;

// One self-attention layer of the run with its traced biases.
struct AlibiLayer {
  const AttentionMap* map = nullptr;
  const Tensor* bias = nullptr;  // [L, heads]
};

// The layer's bias array is named after its attention array (alibi_attention.h).
const Tensor* alibiBiasOf(const Trace& trace, const AttentionMap& m) {
  if (m.kind == AttentionMapKind::Cross) return nullptr;
  const TracedArray* a = trace.find(m.array + kAlibiDistanceBiasSuffix);
  return a && a->tensor.shape.size() == 2 ? &a->tensor : nullptr;
}

// The ALiBi layers of the trace in catalogue order (a decoder-only model's, else every
// family's self-attention, the first family first).
std::vector<AlibiLayer> alibiLayers(const Trace& trace) {
  std::vector<AlibiLayer> out;
  for (const AttentionMap& m : trace.attention_maps)
    if (const Tensor* b = alibiBiasOf(trace, m)) out.push_back({&m, b});
  return out;
}

int alibiLayerCount(const Trace& trace) {
  int n = 0;
  for (const AlibiLayer& l : alibiLayers(trace)) n = std::max(n, static_cast<int>(l.map->layer) + 1);
  return n;
}

// The slope m_h as the paper writes it: "1/2", "1/256", "2^-0.5", else 4 significant digits.
QString slopeText(float m) {
  if (!(m > 0)) return QString::number(m, 'g', 4);
  const double inv = 1.0 / m;
  if (std::abs(inv - std::round(inv)) < 1e-4 * inv)
    return std::llround(inv) == 1 ? QString("1") : QString("1/%1").arg(std::llround(inv));
  const double e = std::log2(m);
  if (std::abs(e * 100 - std::round(e * 100)) < 1e-3) return QString("2^%1").arg(e, 0, 'g', 4);
  return QString::number(m, 'g', 4);
}

// Head h's slope read from the trace (minus row 1), or empty when the run has one position.
QString tracedSlope(const Tensor& bias, int h) {
  const int heads = static_cast<int>(bias.dim(1));
  if (bias.dim(0) < 2) return {};
  return slopeText(-bias.data[static_cast<size_t>(heads) + h]);
}

// "h0: 1/2" (a curve's legend: a bottom legend of 8 heads elides anything longer), or
// "0: m = 1/2" (a heatmap's row); "h0" / "0" when the slope is not in the trace (one position).
QStringList headLegend(const Tensor& bias, bool legend) {
  QStringList out;
  for (int h = 0; h < static_cast<int>(bias.dim(1)); ++h) {
    const QString m = tracedSlope(bias, h);
    const QString head = legend ? QString("h%1").arg(h) : QString::number(h);
    out << (m.isEmpty() ? head : legend ? QString("%1: %2").arg(head, m) : QString("%1: m = %2").arg(head, m));
  }
  return out;
}

// [heads, L]: row h is head h's bias at distance 0..L-1 (the trace's [L, heads] transposed).
HeatmapData headsByDistance(const Tensor& bias, const QString& title, bool legend) {
  HeatmapData d;
  const int L = static_cast<int>(bias.dim(0)), heads = static_cast<int>(bias.dim(1));
  d.rows = heads;
  d.cols = L;
  d.values.resize(static_cast<size_t>(heads) * L);
  for (int h = 0; h < heads; ++h)
    for (int k = 0; k < L; ++k) d.values[static_cast<size_t>(h) * L + k] = bias.data[static_cast<size_t>(k) * heads + h];
  d.rowLabels = headLegend(bias, legend);
  d.colLabels = indexLabels(QString(), L);
  d.title = title;
  d.rowAxis = "head: slope m_h";
  d.colAxis = "distance |i - j| (tokens)";
  d.valueName = "bias -m_h d";
  return d;
}

// [Lq, Lk] of head h: cell (i, j) is the traced bias at distance |i - j| (query rows are the
// last Lq of the Lk keys), masked where the layer's traced mask is; labelled by position.
HeatmapData byPosition(const Trace& trace, const AlibiLayer& l, int h, const QString& title) {
  HeatmapData d;
  const int64_t lq = l.map->queries.count, lk = l.map->keys.count, heads = l.bias->dim(1);
  const int rows = static_cast<int>(std::min<int64_t>(lq, kAlibiMaxPositions));
  const int cols = static_cast<int>(std::min<int64_t>(lk, kAlibiMaxPositions));
  d.rows = rows;
  d.cols = cols;
  d.values.assign(static_cast<size_t>(rows) * cols, 0.0f);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const int64_t k = alibi_distance(i, j, lq, lk);
      if (k < l.bias->dim(0)) d.values[static_cast<size_t>(i) * cols + j] = l.bias->data[static_cast<size_t>(k * heads + h)];
    }
  if (rows == lq && cols == lk) {
    setMapLabels(d, trace, *l.map);  // by position: repeated tokens stay separate rows
    copyMask(d, trace, l.map->companions.mask);
  } else {
    d.rowLabels = indexLabels(QString(), rows);
    d.colLabels = indexLabels(QString(), cols);
    d.rowAxis = "query position";
    d.colAxis = "key position";
  }
  d.title = title;
  d.valueName = "bias -m_h |i - j|";
  return d;
}

PanelPlot slopeTable(const Tensor& bias, const QString& where) {
  PanelPlot t;
  // The one-line explanation is the entry in the plot list (a table shows no title on screen).
  t.name = "slopes m_h: head h's scores get -m_h |i - j| (fixed, no position embeddings), " + where;
  t.kind = PanelPlot::Kind::Table;
  t.rowAxis = PlotAxis::Head;
  const int L = static_cast<int>(bias.dim(0)), heads = static_cast<int>(bias.dim(1));
  HeatmapData& d = t.matrix;
  d.rows = heads;
  d.cols = 3;
  d.colLabels = {"slope m_h", "bias at d = 1", QString("bias at d = %1").arg(L - 1)};
  d.rowLabels = indexLabels("head ", heads);
  d.rowAxis = "head";
  d.colAxis = "value";
  d.valueName = "value";
  d.title = "ALiBi: head h's scores get -m_h |i - j|, " + where;
  for (int h = 0; h < heads; ++h) {
    if (L < 2) {  // one position: the trace holds distance 0 only
      d.values.insert(d.values.end(), {0.0f, 0.0f, 0.0f});
      t.cellText << "needs 2 tokens" << "needs 2 tokens" << "0";
      continue;
    }
    const float near = bias.data[static_cast<size_t>(heads) + h];
    const float far = bias.data[static_cast<size_t>(L - 1) * heads + h];
    d.values.insert(d.values.end(), {-near, near, far});
    t.cellText << QString("%1 (%2)").arg(tracedSlope(bias, h)).arg(-near, 0, 'g', 6)
               << QString::number(near, 'g', 6) << QString::number(far, 'g', 6);
  }
  t.sortable = true;
  return t;
}

std::vector<PanelPlot> alibiPlots(const Trace& trace, const PanelContext& ctx) {
  std::vector<PanelPlot> out;
  const std::vector<AlibiLayer> layers = alibiLayers(trace);
  const int count = alibiLayerCount(trace);
  if (count == 0) return out;
  const int layer = std::clamp(ctx.layer, 0, count - 1);
  const auto it = std::find_if(layers.begin(), layers.end(), [&](const AlibiLayer& l) { return l.map->layer == layer; });
  if (it == layers.end()) return out;
  const AlibiLayer& l = *it;
  const int heads = static_cast<int>(l.bias->dim(1));
  const int h = std::clamp(ctx.head, 0, heads - 1);
  const QString where = QString("layer %1").arg(layer);
  const QString m = tracedSlope(*l.bias, h);

  PanelPlot p;
  p.name = QString("bias -m_h |i - j| by position, %1, head %2").arg(where).arg(h);
  p.matrix = byPosition(trace, l, h, QString("ALiBi bias -m |i - j| on the scores, %1, head %2%3")
                                          .arg(where).arg(h).arg(m.isEmpty() ? QString() : " (m = " + m + ")"));
  p.mapping.colormap = Colormap::Diverging;  // 0 (the diagonal) at the neutral centre
  p.rowAxis = PlotAxis::Token;
  out.push_back(std::move(p));

  PanelPlot g;
  g.name = "bias by distance, every head, " + where;
  g.matrix = headsByDistance(*l.bias, "ALiBi bias -m_h d by head and distance, " + where, false);
  g.mapping.colormap = Colormap::Diverging;
  g.rowAxis = PlotAxis::Head;
  out.push_back(std::move(g));

  PanelPlot c;
  c.name = "bias against distance, one curve per head, " + where;
  c.kind = PanelPlot::Kind::Curves;
  c.matrix = headsByDistance(*l.bias, "ALiBi bias -m_h d against distance, " + where + " (legend h<head>: m_h)", true);
  c.rowAxis = PlotAxis::Head;
  c.xTitle = "distance d = |i - j| (tokens)";
  c.yTitle = "bias -m_h d";
  out.push_back(std::move(c));

  out.push_back(slopeTable(*l.bias, where));
  return out;
}

PanelProvider alibiProvider() {
  PanelProvider p;
  p.id = "alibi";
  p.title = "ALiBi biases";
  p.arrays = "<attn>.alibi.distance_bias per self-attention layer (models with ALiBi)";
  p.available = [](const Trace& t) { return alibiLayerCount(t) > 0; };
  p.plots = alibiPlots;
  p.selection = [](const Trace& t) {  // one layer; one head for the position heatmap
    PanelSelectionRanges r;
    const int layers = alibiLayerCount(t);
    r.layer = {layers, QString("the ALiBi self-attention has %1 layers").arg(layers)};
    for (const AlibiLayer& l : alibiLayers(t)) r.head.count = std::max(r.head.count, static_cast<int>(l.bias->dim(1)));
    r.head.what = QString("the ALiBi self-attention has %1 heads").arg(r.head.count);
    return r;
  };
  return p;
}

}  // namespace

namespace variants {
std::vector<PanelEntry> alibi_panels() { return {alibiProvider()}; }
}  // namespace variants

}  // namespace atlas::ui
