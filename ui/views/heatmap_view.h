#pragma once
// The attention heatmap widget: one matrix with token labels, a colour bar, hover tooltip
// (query, key, weight, rank in its row), click to pin a query row, wheel zoom and drag pan.
// Painting goes through paintHeatmap (heatmap_painter.h), the same code the export uses,
// from a cached image pyramid that is rebuilt only when the data or the colours change.
// A map too large to hold (HeatmapData::detail) shows its overview of block maxima until the
// view is zoomed in to at most kDetailTokens a side, then an exact window around what is
// visible, fetched again as the view pans past it. Windows are computed on a worker thread, so
// a frame never waits for one: the overview stands in until the window is ready. Rows and
// columns in this widget's API (pinned row, signals) are the full matrix's.
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QRect>
#include <QWidget>
#include <memory>

#include "ui/views/heatmap_painter.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

class HeatmapView : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);

  static constexpr int kDetailTokens = 512;

  void setData(HeatmapData data);
  const HeatmapData& data() const { return m_data; }  // the cells on screen (an overview or window)
  void setStyle(const HeatmapStyle& style);
  const HeatmapStyle& heatmapStyle() const { return m_style; }
  void setMapping(const ColorMapping& mapping);

  int pinnedRow() const { return m_pinnedRow; }
  void setPinnedRow(int row);  // -1 = none
  QRectF viewWindow() const { return m_window; }  // visible cells of data() (x = column, y = row)
  void setViewWindow(const QRectF& window);
  // The visible part of the full matrix, in its rows and columns (= viewWindow() unless the
  // data is an overview or a window of a larger map).
  QRectF matrixWindow() const;
  void setMatrixWindow(const QRectF& window);
  void resetZoom();
  void zoomBy(double factor, QPointF anchor);  // anchor in widget coordinates
  const HeatmapRaster& raster() const { return m_raster; }
  // An exact window of a large map is being computed (detailReady() follows).
  bool detailPending() const { return m_fetchOpen; }
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
  void detailReady();  // an exact window replaced the overview

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
  // Swaps between the overview and an exact window of a map too large to hold, as the
  // matrix window asks (see the class comment).
  void updateDetail();
  int localRow(int row) const;  // full-matrix row -> row of m_data, or -1
  int fullRow(int row) const { return m_data.rowOrigin + row * m_data.rowStep; }
  int fullCol(int col) const { return m_data.colOrigin + col * m_data.colStep; }
  void onWindowComputed();
  // Swaps m_data between the overview and an exact window, keeping the overview's raster,
  // value range and label measures aside meanwhile (rebuilding them costs a frame or two).
  void showWindow(HeatmapData window);
  void showOverview();

  HeatmapData m_data;
  HeatmapData m_overview;  // the map's overview while m_data may be a window of it
  QFutureWatcher<HeatmapData> m_fetch;  // the exact window being computed
  QRect m_fetchRange;                   // its columns (x) and rows (y) of the full matrix
  int m_generation = 0;                 // setData count: a window of older data is dropped
  int m_fetchGeneration = -1;
  bool m_fetchOpen = false;  // started and not yet handled by onWindowComputed
  struct PaintCache {
    HeatmapRaster raster;
    std::unique_ptr<ValueMapper> mapper;
    HeatmapMeasures measures;
    bool valid = false;
  };
  PaintCache m_overviewCache;  // the overview's, while a window is shown
  HeatmapStyle m_style;
  HeatmapRaster m_raster;
  std::unique_ptr<ValueMapper> m_mapper;  // value range of m_data, kept with the raster
  HeatmapMeasures m_measures;
  QRectF m_window;
  int m_pinnedRow = -1;
  QPoint m_hover{-1, -1};
  QPointF m_pressPos;
  QRectF m_pressWindow;  // matrix window at the press
  bool m_dragging = false;
  bool m_pressed = false;
  double m_lastPaintMs = 0.0;
};

}  // namespace atlas::ui
