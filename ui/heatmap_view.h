#pragma once
// The attention heatmap widget: one matrix with token labels, a colour bar, hover tooltip
// (query, key, weight, rank in its row), click to pin a query row, wheel zoom and drag pan.
// Painting goes through paintHeatmap (heatmap_painter.h), the same code the export uses,
// from a cached image pyramid that is rebuilt only when the data or the colours change.
#include <QElapsedTimer>
#include <QWidget>
#include <memory>

#include "ui/heatmap_painter.h"

namespace atlas::ui {

class HeatmapView : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);

  void setData(HeatmapData data);
  const HeatmapData& data() const { return m_data; }  // the matrix behind the view
  void setStyle(const HeatmapStyle& style);
  const HeatmapStyle& heatmapStyle() const { return m_style; }
  void setMapping(const ColorMapping& mapping);

  int pinnedRow() const { return m_pinnedRow; }
  void setPinnedRow(int row);  // -1 = none
  QRectF viewWindow() const { return m_window; }  // visible cells (x = column, y = row)
  void setViewWindow(const QRectF& window);
  void resetZoom();
  void zoomBy(double factor, QPointF anchor);  // anchor in widget coordinates
  const HeatmapRaster& raster() const { return m_raster; }
  double lastPaintMs() const { return m_lastPaintMs; }
  // The hover tooltip of a cell: query and key (label and index), weight, rank in its row.
  QString describeCell(int row, int col) const;
  // The matrix row under a widget position, or -1 outside the cells.
  int rowAt(const QPointF& pos) const;
  QSize sizeHint() const override { return {640, 560}; }

 signals:
  void rowPinned(int row);  // -1 when unpinned
  void cellHovered(int row, int col);
  void cellClicked(int row, int col);  // a click (not a drag) on a cell
  void painted();

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void leaveEvent(QEvent*) override;
  bool event(QEvent*) override;

 private:
  HeatmapLayout currentLayout() const;
  void clampWindow();
  void rebuildRaster();

  HeatmapData m_data;
  HeatmapStyle m_style;
  HeatmapRaster m_raster;
  std::unique_ptr<ValueMapper> m_mapper;  // value range of m_data, kept with the raster
  HeatmapMeasures m_measures;
  QRectF m_window;
  int m_pinnedRow = -1;
  QPoint m_hover{-1, -1};
  QPointF m_pressPos;
  QRectF m_pressWindow;
  bool m_dragging = false;
  bool m_pressed = false;
  double m_lastPaintMs = 0.0;
};

}  // namespace atlas::ui
