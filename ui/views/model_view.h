#pragma once
// The model view: a layers x heads grid of attention thumbnails of one family (e.g. encoder
// self-attention), plus aggregate columns (mean and max over heads, attention rollout across
// layers). Clicking a thumbnail opens that layer/head in the heatmap. Like the heatmap, the
// grid is drawn by one function (paintModelGrid) shared with the figure export.
#include <QWidget>
#include <memory>
#include <vector>

#include "ui/views/heatmap_painter.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

struct ModelGridData {
  AttentionFamily family;
  int segment = 0;                     // the Transformer-XL segment shown (families with segments)
  std::vector<int> columns;            // head index or HeadAggregate per column
  std::vector<HeatmapData> thumbnails;  // [layers x columns], row-major
  // The attention sink: per layer and head, the mean over query rows of the weight
  // on the first key (rows that see no key left out), [layers x heads]; shown as the HeadSink
  // column, one bar per head on an absolute 0-1 scale. Empty when the grid has no such column.
  std::vector<float> sink;
  // The largest value of any map tile (not the sink column): the top of the shared scale when
  // ColorMapping::sharedScale is on.
  float maxValue = 0.0f;
  QString title;
  int layers() const { return family.layers; }
  float sinkAt(int layer, int head) const {
    return sink[static_cast<size_t>(layer) * family.heads + head];
  }
  int strongestSinkHead(int layer) const;  // the head with the largest sink mass in `layer`
  int columnCount() const { return static_cast<int>(columns.size()); }
  const HeatmapData& at(int layer, int col) const {
    return thumbnails[static_cast<size_t>(layer) * columns.size() + col];
  }
};

// Every head of every layer (or step) of the family's maps in `segment`; with `aggregates`,
// columns for the mean and max over heads, where rollout applies (rolloutApplies) the rollout
// up to that layer, and the attention-sink column (ModelGridData::sink).
ModelGridData modelGridData(const Trace& trace, const AttentionFamily& family, bool aggregates, int segment = 0);

// The mapping a tile of the grid is drawn with: `mapping`, on the grid's shared scale
// (fixedMax = data.maxValue) when mapping.sharedScale asks for one.
ColorMapping tileMapping(const ModelGridData& data, const ColorMapping& mapping);

struct ModelGridLayout {
  QRectF bounds, title, grid, colorBar;
  qreal cellW = 0, cellH = 0;  // one thumbnail slot, including its gap
  qreal gap = 0;
  int rows = 0, cols = 0;
  // Column names: horizontal while the widest fits a slot, else upright (read bottom to top);
  // upright names thinner than a line of text label every headerStep-th head.
  bool uprightHeaders = false;
  int headerStep = 1;
  qreal headerH = 0;  // the band of column names above the grid
  QFont font, titleFont;
  QRectF thumb(int layer, int col) const;
  QPoint hit(const QPointF& pos) const;  // (col, layer) or (-1, -1)
};

ModelGridLayout layoutModelGrid(const QPaintDevice* device, const QRectF& bounds,
                                const ModelGridData& data, const HeatmapStyle& style);
// `rasters` (one per thumbnail) may be null: thumbnails are then drawn cell by cell.
void paintModelGrid(QPainter& p, const ModelGridLayout& layout, const ModelGridData& data,
                    const HeatmapStyle& style, const std::vector<HeatmapRaster>* rasters);
std::vector<HeatmapRaster> buildGridRasters(const ModelGridData& data, const HeatmapStyle& style);

class ModelView : public QWidget {
  Q_OBJECT
 public:
  explicit ModelView(QWidget* parent = nullptr);
  void setTrace(std::shared_ptr<const Trace> trace, const AttentionFamily& family, int segment = 0);
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  void setStyle(const HeatmapStyle& style);
  void setCurrent(int layer, int head);
  // The grid last built. Building (matrices, rollout, images) runs on a worker thread when a
  // new trace arrives and the view is visible, so the heatmap never waits for it.
  const ModelGridData& gridData() const { return m_data; }
  // A grid for the current trace or style is being built (built() follows).
  bool building() const { return m_building; }
  QSize sizeHint() const override { return {420, 420}; }

 signals:
  void headClicked(int layer, int head);  // head may be a HeadAggregate
  void built();                           // a new grid is on screen

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void showEvent(QShowEvent*) override;

 private:
  void startBuild();
  std::shared_ptr<const Trace> m_trace;
  AttentionFamily m_family;
  int m_segment = 0;
  ModelGridData m_data;
  std::vector<HeatmapRaster> m_rasters;
  HeatmapStyle m_style;
  int m_layer = 0, m_head = 0;
  bool m_dirty = false;
  bool m_building = false;
  quint64 m_generation = 0;
};

}  // namespace atlas::ui
