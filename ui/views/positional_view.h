#pragma once
// Positional encodings of the traced run: P [L, d] as a heatmap, chosen dimensions as curves
// over position, and the similarity P P^T (how alike two positions' encodings are).
#include <QWidget>
#include <memory>

#include "ui/views/heatmap_view.h"

class QLineEdit;
class QLabel;
class QTabWidget;

namespace atlas::ui {

class CurvePlot;

class PositionalView : public QWidget {
  Q_OBJECT
 public:
  explicit PositionalView(QWidget* parent = nullptr);
  void setTrace(std::shared_ptr<const Trace> trace);
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  void setStyle(const HeatmapStyle& style, bool dark);
  HeatmapView* encodingView() const { return m_encoding; }
  HeatmapView* similarityView() const { return m_similarity; }
  QList<int> chosenDimensions() const;
  // Why some typed dimensions are not plotted: out of P's range (named) or not numbers; empty
  // when every one is. Shown under the field in red.
  QString dimensionsProblem() const;

 private:
  void updateCurves();
  std::shared_ptr<const Trace> m_trace;
  HeatmapView* m_encoding;
  HeatmapView* m_similarity;
  CurvePlot* m_curves;
  QLineEdit* m_dims;
  QLabel* m_dimsProblem;
  QLabel* m_note;
  QTabWidget* m_tabs;
  bool m_dirty[3] = {false, false, false};  // per tab: encoding, curves, similarity
  void rebuildVisible();

 protected:
  void showEvent(QShowEvent*) override;
};

}  // namespace atlas::ui
