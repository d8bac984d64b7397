#include "ui/views/model_view.h"
#include "ui/views/aggregate_heatmaps.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/map_overview.h"
#include "ui/views/value_mapper.h"

#include "core/analysis/head_statistics.h"

#include <QFontMetricsF>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace atlas::ui {

namespace {

// A thumbnail is drawn at most a few hundred pixels wide, so maps larger than kThumbnailCells
// per side are max-pooled to that (largest weight of each block; a pooled cell is masked only
// when its whole block is): a 30-layer model at 4096 tokens kept 330 full maps, 22 GB.
constexpr int kThumbnailCells = 256;
// The rollout column multiplies every layer's L x L map into the next: layers x L^3 work. Above
// this it is left out of the grid (2^35: 30 layers at 1024 tokens, about a second here); the
// heatmap's head list still offers rollout of one layer.
constexpr double kGridRolloutWork = double(int64_t(1) << 35);

HeatmapData thumbnailOf(HeatmapData full) {
  if (full.rows <= kThumbnailCells && full.cols <= kThumbnailCells) return full;
  const int br = (full.rows + kThumbnailCells - 1) / kThumbnailCells;
  const int bc = (full.cols + kThumbnailCells - 1) / kThumbnailCells;
  HeatmapData t;
  t.title = full.title;
  t.rowAxis = full.rowAxis;
  t.colAxis = full.colAxis;
  t.valueName = full.valueName;
  t.categories = full.categories;
  t.rows = (full.rows + br - 1) / br;
  t.cols = (full.cols + bc - 1) / bc;
  t.values.assign(static_cast<size_t>(t.rows) * t.cols, 0.0f);
  t.mask.assign(full.mask.empty() ? 0 : t.values.size(), 0);
  t.rowLabels.clear();
  t.colLabels.clear();
  for (int r = 0; r < t.rows; ++r) t.rowLabels << (r * br < full.rowLabels.size() ? full.rowLabels[r * br] : QString());
  for (int c = 0; c < t.cols; ++c) t.colLabels << (c * bc < full.colLabels.size() ? full.colLabels[c * bc] : QString());
  for (int r = 0; r < full.rows; ++r)
    for (int c = 0; c < full.cols; ++c) {
      const size_t from = static_cast<size_t>(r) * full.cols + c, to = static_cast<size_t>(r / br) * t.cols + c / bc;
      if (!full.mask.empty() && !full.mask[from]) continue;
      const float v = full.values[from];
      const bool first = t.mask.empty() ? false : !t.mask[to];
      if (!t.mask.empty()) t.mask[to] = 1;
      if (std::isfinite(v) && (first || v > t.values[to])) t.values[to] = v;
    }
  return t;
}

// Layer l's sink column: one row, a column per head, from the sink masses of its heads' full
// maps (d.sink, filled before the maps were pooled to thumbnails).
HeatmapData sinkStrip(const ModelGridData& d, int l) {
  HeatmapData strip;
  strip.rows = 1;
  strip.cols = d.family.heads;
  for (int h = 0; h < d.family.heads; ++h) {
    strip.values.push_back(d.sinkAt(l, h));
    strip.colLabels << headShortName(h);
  }
  strip.rowLabels << "first key";
  strip.title = QString("attention sink, %1 %2").arg(d.family.layerWord()).arg(d.family.layerNumber(l));
  strip.rowAxis = "";
  strip.colAxis = "head";
  strip.valueName = "mean weight on the first key";
  return strip;
}

}  // namespace

int ModelGridData::strongestSinkHead(int layer) const {
  int best = 0;
  for (int h = 1; h < family.heads; ++h)
    if (sinkAt(layer, h) > sinkAt(layer, best)) best = h;
  return best;
}

ModelGridData modelGridData(const Trace& trace, const AttentionFamily& family, bool aggregates, int segment) {
  ModelGridData d;
  d.family = family;
  d.segment = segment;
  const AttentionMap* first = findAttentionMap(trace, {family.stack, family.kind, 0, 0, segment});
  const double n = first ? double(first->queries.count) : 0.0;
  const bool rollout = aggregates && rolloutApplies(trace, family, segment) &&
                       double(family.layers) * n * n * n <= kGridRolloutWork;
  for (int h = 0; h < family.heads; ++h) d.columns.push_back(h);
  if (aggregates) {
    d.columns.push_back(HeadMean);
    d.columns.push_back(HeadMax);
    if (rollout) d.columns.push_back(HeadRollout);
  }
  d.thumbnails.reserve(static_cast<size_t>(family.layers) * d.columns.size());
  // Rollout of every layer prefix in one pass (not one product chain per layer).
  std::vector<HeatmapData> rollouts;
  if (rollout) rollouts = rolloutHeatmaps(trace, {family.stack, family.kind, 0, HeadRollout, segment}, family.layers - 1);
  const bool sinks = aggregates && family.heads > 0;
  if (sinks) {
    d.columns.push_back(HeadSink);
    d.sink.assign(static_cast<size_t>(family.layers) * family.heads, 0.0f);
  }
  for (int l = 0; l < family.layers; ++l) {
    // A long map computed on request: every head's overview, the mean's and the max's in one
    // pass over the map instead of one pass per column (and per head again for mean and max).
    std::vector<HeatmapData> overviews = onDemandOverviews(trace, {family.stack, family.kind, l, 0, segment});
    auto overviewOf = [&](int head) -> HeatmapData* {
      const int heads = static_cast<int>(overviews.size()) - 2;
      const int index = head >= 0 ? head : head == HeadMean ? heads : head == HeadMax ? heads + 1 : -1;
      return heads > 0 && index >= 0 && index < heads + 2 ? &overviews[static_cast<size_t>(index)] : nullptr;
    };
    for (int head : d.columns) {
      if (head == HeadSink) {  // after the layer's heads, whose sink masses are filled by then
        d.thumbnails.push_back(sinkStrip(d, l));
        continue;
      }
      HeatmapData* overview = overviewOf(head);
      HeatmapData full = head == HeadRollout ? std::move(rollouts[static_cast<size_t>(l)])
                         : overview          ? std::move(*overview)
                                             : attentionHeatmap(trace, {family.stack, family.kind, l, head, segment});
      if (sinks && head >= 0)
        d.sink[static_cast<size_t>(l) * family.heads + head] = static_cast<float>(
            full.pooled() ? full.sink : attention_sink(full.values.data(), full.rows, full.cols));
      d.thumbnails.push_back(thumbnailOf(std::move(full)));
    }
  }
  for (size_t i = 0; i < d.thumbnails.size(); ++i) {
    if (d.columns[i % d.columns.size()] == HeadSink) continue;
    const HeatmapData& t = d.thumbnails[i];
    for (size_t k = 0; k < t.values.size(); ++k)
      if ((t.mask.empty() || t.mask[k]) && std::isfinite(t.values[k]))
        d.maxValue = std::max(d.maxValue, std::fabs(t.values[k]));
  }
  d.title = (family.segments > 0 ? QString("%1, segment %2").arg(family.label()).arg(segment) : family.label()) +
            QString(": %1s \u00D7 heads").arg(family.layerWord());
  return d;
}

QRectF ModelGridLayout::thumb(int layer, int col) const {
  return QRectF(grid.left() + col * cellW + gap / 2, grid.top() + layer * cellH + gap / 2, cellW - gap,
                cellH - gap);
}

QPoint ModelGridLayout::hit(const QPointF& pos) const {
  if (!grid.contains(pos) || cellW <= 0 || cellH <= 0) return {-1, -1};
  const int c = static_cast<int>((pos.x() - grid.left()) / cellW);
  const int r = static_cast<int>((pos.y() - grid.top()) / cellH);
  if (c < 0 || c >= cols || r < 0 || r >= rows) return {-1, -1};
  return {c, r};
}

namespace {

bool sharedScaleApplies(const ModelGridData& data, const ColorMapping& mapping) {
  return mapping.sharedScale && mapping.normalization == Normalization::Global && data.maxValue > 0.0f;
}

// The grid's colour bar: each thumbnail is scaled to its own maximum, so the bar reads
// "fraction of the thumbnail's max" whatever the data; on the shared scale it reads weights
// from 0 to the largest of any tile.
HeatmapData colorBarData(const ModelGridData& data, const ColorMapping& mapping) {
  HeatmapData d;
  d.rows = d.cols = 1;
  if (sharedScaleApplies(data, mapping)) {
    d.values = {data.maxValue};
    d.valueName = "attention weight (all tiles)";
    return d;
  }
  d.values = {1.0f};
  d.valueName = mapping.normalization == Normalization::Row ? "fraction of row max" : "fraction of tile max";
  return d;
}

}  // namespace

ColorMapping tileMapping(const ModelGridData& data, const ColorMapping& mapping) {
  ColorMapping m = mapping;
  if (sharedScaleApplies(data, mapping)) m.fixedMax = data.maxValue;
  return m;
}

ModelGridLayout layoutModelGrid(const QPaintDevice* device, const QRectF& bounds,
                                const ModelGridData& data, const HeatmapStyle& style) {
  ModelGridLayout L;
  L.bounds = bounds;
  L.rows = data.layers();
  L.cols = data.columnCount();
  L.font = figureFont(device, style.fontSize);
  L.titleFont = figureFont(device, style.fontSize * 1.25, true);
  const QFontMetricsF fm(L.font, const_cast<QPaintDevice*>(device));
  const QFontMetricsF tfm(L.titleFont, const_cast<QPaintDevice*>(device));
  const qreal u = style.fontSize;
  const qreal titleH = style.showTitle ? titleHeight(data.title, tfm, bounds.width()) : 0.6 * u;
  // Above the column names, the key/value head each group of query heads shares (GQA).
  const qreal groupH = data.family.grouped() ? fm.height() * 1.3 : 0.0;
  const qreal rowW = fm.horizontalAdvance("L00") + u;  // layer names
  qreal barSpace = 0;
  const HeatmapData barData = colorBarData(data, style.mapping);
  const ValueMapper barMapper(barData, style.mapping);
  if (style.showColorBar) barSpace = 1.2 * u + 1.5 * u + colorBarExtraWidth(fm, barMapper);
  const qreal availW = bounds.width() - rowW - barSpace - 1.2 * u;
  if (L.rows <= 0 || L.cols <= 0) return L;
  qreal widestName = 0;
  for (int c = 0; c < L.cols; ++c) widestName = std::max(widestName, fm.horizontalAdvance(headShortName(data.columns[c])));
  // Square slots: thumbnails of self-attention are square matrices.
  auto sideFor = [&](qreal headerH) {
    const qreal availH = bounds.height() - titleH - groupH - headerH - 0.6 * u;
    return std::max<qreal>(4, std::min(availW / L.cols, availH / L.rows));
  };
  L.headerH = fm.height() * 1.3;
  qreal side = sideFor(L.headerH);
  if (widestName > side * 0.95) {  // 12-25 heads in a narrow panel: names stand upright
    L.uprightHeaders = true;
    L.headerH = widestName + 0.5 * u;
    side = sideFor(L.headerH);
    L.headerStep = std::max(1, static_cast<int>(std::ceil(fm.height() * 1.05 / side)));
  }
  L.cellW = L.cellH = side;
  L.gap = std::clamp(side * 0.08, 1.0, 6.0);
  const qreal gridW = side * L.cols, gridH = side * L.rows;
  const qreal left = bounds.left() + rowW + 0.6 * u + std::max<qreal>(0, (availW - gridW) / 2);
  L.title = QRectF(bounds.left(), bounds.top(), bounds.width(), titleH);
  L.grid = QRectF(left, bounds.top() + titleH + groupH + L.headerH, gridW, gridH);
  if (style.showColorBar) {
    // A grid of few layers is short: the bar keeps room for its ticks and title below it.
    const qreal wanted = std::max(gridH, std::max(6.0 * fm.height(), fm.horizontalAdvance(barMapper.colorBarTitle()) + u));
    const qreal barH = std::min(wanted, bounds.bottom() - L.grid.top() - 0.3 * u);
    L.colorBar = QRectF(L.grid.right() + 1.5 * u, L.grid.top(), 1.2 * u, std::max(gridH, barH));
  }
  return L;
}

namespace {

// One bar per head, height = sink mass on an absolute 0-1 scale (not the thumbnail's own
// maximum: a sink is read against 1), in the colour map's top colour over a faint full-scale
// frame, so heads that dump most of their attention on the first key stand out.
void paintSinkBars(QPainter& p, const QRectF& t, const ModelGridData& data, int layer,
                   const HeatmapStyle& style) {
  const int heads = data.family.heads;
  if (heads <= 0 || data.sink.empty()) return;
  p.save();
  QColor frame = style.foreground;
  frame.setAlphaF(0.25);
  p.setPen(QPen(frame, 0));
  p.setBrush(Qt::NoBrush);
  p.drawRect(t);
  const ColorLut lut(style.mapping.colormap);
  const qreal w = t.width() / heads;
  p.setPen(Qt::NoPen);
  for (int h = 0; h < heads; ++h) {
    const qreal m = std::clamp<qreal>(data.sinkAt(layer, h), 0.0, 1.0);
    const QRectF bar(t.left() + h * w + w * 0.1, t.bottom() - m * t.height(), w * 0.8, m * t.height());
    p.setBrush(lut.color(static_cast<float>(m)));
    p.drawRect(bar);
  }
  p.restore();
}

}  // namespace

std::vector<HeatmapRaster> buildGridRasters(const ModelGridData& data, const HeatmapStyle& style) {
  std::vector<HeatmapRaster> out(data.thumbnails.size());
  const ColorMapping mapping = tileMapping(data, style.mapping);
  for (size_t i = 0; i < out.size(); ++i) out[i].build(data.thumbnails[i], mapping, style.maskColor);
  return out;
}

void paintModelGrid(QPainter& p, const ModelGridLayout& L, const ModelGridData& data,
                    const HeatmapStyle& style, const std::vector<HeatmapRaster>* rasters) {
  p.save();
  p.fillRect(L.bounds, style.background);
  p.setPen(style.foreground);
  if (style.showTitle) {
    p.setFont(L.titleFont);
    drawTitle(p, L.title, data.title);
  }
  if (L.rows == 0 || L.cols == 0) {
    p.setFont(L.font);
    p.drawText(L.bounds, Qt::AlignCenter, "no attention in this trace");
    p.restore();
    return;
  }
  p.setFont(L.font);
  const QFontMetricsF fm(L.font, p.device());
  qreal lastLabel = -1e300;  // upright names: the centre of the last one drawn
  for (int c = 0; c < L.cols; ++c) {
    const QRectF t = L.thumb(0, c);
    const int column = data.columns[c];
    const QString name = headShortName(column);
    if (!L.uprightHeaders) {
      p.drawText(QRectF(t.left() - L.gap, L.grid.top() - fm.height() * 1.2, t.width() + 2 * L.gap, fm.height()),
                 Qt::AlignCenter, fm.elidedText(name, Qt::ElideRight, L.cellW + 2));
      continue;
    }
    // Every headerStep-th head and each aggregate, never closer than a line of text.
    if ((column >= 0 && column % L.headerStep != 0) || t.center().x() - lastLabel < fm.height() * 1.05) continue;
    lastLabel = t.center().x();
    p.save();
    p.translate(t.center().x(), L.grid.top() - 0.25 * style.fontSize);
    p.rotate(-90);
    p.drawText(QRectF(0, -fm.height() / 2, L.headerH, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, name);
    p.restore();
  }
  if (data.family.grouped()) {  // a bracket per key/value head over its query heads
    const int group = data.family.heads / data.family.kvHeads;
    const qreal y = L.grid.top() - L.headerH - fm.height() * 0.05;
    for (int g = 0; g < data.family.kvHeads && (g + 1) * group <= L.cols; ++g) {
      const QRectF a = L.thumb(0, g * group), b = L.thumb(0, (g + 1) * group - 1);
      p.drawLine(QPointF(a.left(), y), QPointF(b.right(), y));
      p.drawLine(QPointF(a.left(), y), QPointF(a.left(), y + fm.height() * 0.25));
      p.drawLine(QPointF(b.right(), y), QPointF(b.right(), y + fm.height() * 0.25));
      const QRectF label(a.left(), y - fm.height() * 1.1, b.right() - a.left(), fm.height());
      p.drawText(label, Qt::AlignCenter, fm.elidedText(QString("KV%1").arg(g), Qt::ElideRight, label.width() + 2));
    }
  }
  for (int l = 0; l < L.rows; ++l) {
    const QRectF t = L.thumb(l, 0);
    p.drawText(QRectF(L.bounds.left(), t.top(), L.grid.left() - L.bounds.left() - 0.4 * style.fontSize, t.height()),
               Qt::AlignRight | Qt::AlignVCenter,
               data.family.steps ? QString("S%1").arg(l + 1) : QString("L%1").arg(l));
  }
  // Cell-by-cell only when the whole grid stays small; otherwise the (embedded) images.
  size_t totalCells = 0;
  for (const auto& t : data.thumbnails) totalCells += t.values.size();
  const bool asRects = (style.vectorCells && totalCells <= 65536) || !rasters;
  for (int l = 0; l < L.rows; ++l)
    for (int c = 0; c < L.cols; ++c) {
      const HeatmapData& h = data.at(l, c);
      const QRectF t = L.thumb(l, c);
      if (data.columns[c] == HeadSink) {
        paintSinkBars(p, t, data, l, style);
        continue;
      }
      HeatmapLayout hl;
      hl.bounds = t;
      hl.cells = t;
      hl.window = QRectF(0, 0, h.cols, h.rows);
      hl.cellW = t.width() / std::max(1, h.cols);
      hl.cellH = t.height() / std::max(1, h.rows);
      p.save();
      p.setClipRect(t);
      if (asRects)
        drawCellRects(p, hl, h, CellColours(h, tileMapping(data, style.mapping), style.maskColor), 0, h.rows, 0,
                      h.cols);
      else
        (*rasters)[static_cast<size_t>(l) * L.cols + c].draw(p, t, QRectF(0, 0, h.cols, h.rows));
      // Masked cells hatched as in the heatmap, once they are large enough to show it.
      const qreal scale = p.worldTransform().m11() * (p.device() ? p.device()->devicePixelRatioF() : 1.0);
      if (!h.mask.empty() && std::min(hl.cellW, hl.cellH) * scale >= 5.0)
        drawMaskHatch(p, hl, h, style, 0, h.rows, 0, h.cols);
      p.restore();
    }
  if (!L.colorBar.isEmpty()) {
    const HeatmapData bar = colorBarData(data, style.mapping);
    const ValueMapper m(bar, style.mapping);
    paintColorBar(p, L.colorBar, m, style.mapping, style, L.font);
  }
  p.restore();
}

// ---------------------------------------------------------------------------------------------

ModelView::ModelView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(160, 160);
}

void ModelView::setTrace(std::shared_ptr<const Trace> trace, const AttentionFamily& family, int segment) {
  m_trace = std::move(trace);
  m_family = family;
  m_segment = segment;
  m_dirty = true;
  if (isVisible()) startBuild();  // a hidden model view costs nothing per keystroke
}

void ModelView::setStyle(const HeatmapStyle& style) {
  m_style = style;
  m_style.vectorCells = false;
  m_dirty = true;
  if (isVisible()) startBuild();
}

void ModelView::showEvent(QShowEvent*) {
  if (m_dirty) startBuild();
}

namespace {
struct BuiltGrid {
  ModelGridData data;
  std::vector<HeatmapRaster> rasters;
};
}  // namespace

void ModelView::startBuild() {
  m_dirty = false;
  m_building = true;
  const quint64 generation = ++m_generation;
  auto* watcher = new QFutureWatcher<BuiltGrid>(this);
  connect(watcher, &QFutureWatcher<BuiltGrid>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != m_generation) return;  // a newer trace or style is being built
    BuiltGrid b = watcher->result();
    m_building = false;
    m_data = std::move(b.data);
    m_rasters = std::move(b.rasters);
    update();
    emit built();
  });
  watcher->setFuture(QtConcurrent::run([trace = m_trace, family = m_family, segment = m_segment, style = m_style]() {
    BuiltGrid b;
    if (trace) {
      try {
        b.data = modelGridData(*trace, family, true, segment);
      } catch (const std::exception&) {
        b.data = ModelGridData{};  // the trace lacks this family (the model changed): empty grid
      }
    }
    b.rasters = buildGridRasters(b.data, style);
    return b;
  }));
}

void ModelView::setCurrent(int layer, int head) {
  m_layer = layer;
  m_head = head;
  update();
}

void ModelView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (m_building && m_data.thumbnails.empty()) {  // the first grid of this trace is on its way
    p.fillRect(rect(), m_style.background);
    p.setPen(m_style.foreground);
    p.drawText(rect(), Qt::AlignCenter, "building the layers \u00d7 heads grid\u2026");
    return;
  }
  const ModelGridLayout L = layoutModelGrid(this, QRectF(rect()), m_data, m_style);
  paintModelGrid(p, L, m_data, m_style, &m_rasters);
  const auto it = std::find(m_data.columns.begin(), m_data.columns.end(), m_head);
  if (it != m_data.columns.end() && m_layer < L.rows) {
    const QRectF t = L.thumb(m_layer, static_cast<int>(it - m_data.columns.begin())).adjusted(-1.5, -1.5, 1.5, 1.5);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(palette().color(QPalette::Highlight), 2.5));
    p.drawRect(t);
  }
}

void ModelView::mouseMoveEvent(QMouseEvent* e) {
  const ModelGridLayout L = layoutModelGrid(this, QRectF(rect()), m_data, m_style);
  const QPoint h = L.hit(e->position());
  if (h.x() < 0) return QToolTip::hideText();
  const int head = m_data.columns[h.x()];
  if (head == HeadSink) {
    QStringList parts;
    for (int k = 0; k < m_data.family.heads; ++k)
      parts << QString("H%1 %2").arg(k).arg(double(m_data.sinkAt(h.y(), k)), 0, 'f', 2);
    QToolTip::showText(e->globalPosition().toPoint(),
                       QString("%1 %2, attention sink (mean weight on the first key): %3 \u2014 "
                               "click to open H%4, the strongest")
                           .arg(m_data.family.layerWord())
                           .arg(m_data.family.layerNumber(h.y()))
                           .arg(parts.join(", "))
                           .arg(m_data.strongestSinkHead(h.y())),
                       this);
    return;
  }
  const QString shared = head >= 0 && m_data.family.grouped()
                             ? QString(" (key/value head %1)").arg(m_data.family.groupOf(head))
                             : QString();
  QToolTip::showText(e->globalPosition().toPoint(),
                     QString("%1 %2, %3%4 \u2014 click to open")
                         .arg(m_data.family.layerWord())
                         .arg(m_data.family.layerNumber(h.y()))
                         .arg(headName(head))
                         .arg(shared),
                     this);
}

void ModelView::mouseReleaseEvent(QMouseEvent* e) {
  const ModelGridLayout L = layoutModelGrid(this, QRectF(rect()), m_data, m_style);
  const QPoint h = L.hit(e->position());
  if (h.x() < 0) return;
  const int head = m_data.columns[h.x()];
  emit headClicked(h.y(), head == HeadSink ? m_data.strongestSinkHead(h.y()) : head);
}

}  // namespace atlas::ui
