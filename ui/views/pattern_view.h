#pragma once
// The pattern view: which keys each query may attend to (the connectivity mask of the
// selected layer and head, pattern_data.h) with density statistics, and for image models the
// overlay of one query pixel's allowed keys and attention on the image grid. Sparse configs
// are drawn as density tiles at any length (Length, Zoom and the window's first row/column
// choose the tile), so a 1M-position pattern costs the same as a 64-position one.
#include <QWidget>
#include <memory>
#include <vector>

#include "ui/views/heatmap_painter.h"
#include "core/model/model.h"
#include "ui/views/pattern_data.h"
#include "ui/views/attention_selection.h"

class QLabel;
class QSpinBox;
class QTabWidget;
class QToolButton;

namespace atlas::ui {

class HeatmapView;

class PatternView : public QWidget {
  Q_OBJECT
 public:
  explicit PatternView(QWidget* parent = nullptr);
  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  void setSelection(const AttentionSelection& sel);
  void setStyle(const HeatmapStyle& style);
  // Config patterns only: the length and the tile window (zoom 0 = fit).
  void setWindow(int64_t length, int64_t r0, int64_t c0, int64_t zoom);
  void setQueryPixel(int query);
  void ensureBuilt();

  const PatternImage& pattern() const { return m_pattern; }
  QString statsText() const;
  HeatmapView* matrixView() const { return m_matrix; }
  HeatmapView* imageView() const { return m_image; }
  bool isImageModel() const;
  void exportCurrent(const QString& path, int dpi = 150) const;  // the tab on screen

 signals:
  void queryPicked(int query);

 protected:
  void showEvent(QShowEvent*) override;

 private:
  void rebuild();
  void exportDialog();
  bool causal() const;

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  AttentionSelection m_sel;
  PatternImage m_pattern;
  bool m_dirty = false;
  bool m_updating = false;
  std::vector<QWidget*> m_windowFields;  // the spin boxes and their labels
  QSpinBox* m_length;
  QSpinBox* m_zoom;
  QSpinBox* m_row0;
  QSpinBox* m_col0;
  QSpinBox* m_pixel;
  QWidget* m_windowControls;
  QLabel* m_stats;
  QTabWidget* m_tabs;
  HeatmapView* m_matrix;
  HeatmapView* m_image;
  QToolButton* m_export;
};

}  // namespace atlas::ui
