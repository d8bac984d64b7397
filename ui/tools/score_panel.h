#pragma once
// "Score functions": seed 004's six alignment score functions side by side on the
// same queries and keys, those of the selected layer and head of the run on screen
// (core/analysis/score_compare.h), as a 2 x 3 grid of heatmaps. Pinning a query row in one heatmap pins
// it in all six. The comparison is computed here, on the GUI thread, from the run's trace
// (the window traces q and k while this panel is open): no forward of its own. Export writes
// the grid as one figure (SVG/PDF/PNG) or its data: .npy [functions, Lq, Lk] in table order
// (a function that does not apply is all zeros), .csv one row per (function, query, key).
#include <QWidget>
#include <memory>
#include <optional>

#include "ui/export/figure_export.h"
#include "core/analysis/score_compare.h"

class QLabel;
class QToolButton;

namespace atlas::ui {

class HeatmapView;

class ScorePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ScorePanel(QWidget* parent = nullptr);

  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  std::shared_ptr<const Model> model() const { return m_model; }
  // The layer and head of the linked selection; a head < 0 (an aggregate) compares head 0.
  void setSelection(const AttentionSelection& sel);
  // Recomputes now if stale (otherwise done when the panel is shown).
  void ensureBuilt();

  // Null when the run cannot be compared (the reason is message()).
  const ScoreComparison* comparison() const { return m_cmp ? &*m_cmp : nullptr; }
  QString message() const { return m_message; }
  int functionCount() const { return static_cast<int>(m_views.size()); }
  HeatmapView* view(int index) const { return m_views.at(static_cast<size_t>(index)); }
  QString caption(int index) const;
  FigureContent figure() const;                         // throws AtlasError without a comparison
  void exportTo(const QString& path, int dpi = 150) const;  // format from the extension

 protected:
  void showEvent(QShowEvent*) override;

 private:
  void rebuild();
  void exportDialog();

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  AttentionSelection m_sel;
  bool m_dirty = false;
  std::optional<ScoreComparison> m_cmp;
  QString m_message;
  QLabel* m_status = nullptr;
  QToolButton* m_export = nullptr;
  std::vector<QLabel*> m_captions;
  std::vector<HeatmapView*> m_views;
};

}  // namespace atlas::ui
