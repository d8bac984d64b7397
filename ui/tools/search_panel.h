#pragma once
// "Token search" (View > Variant panels): a query pattern and a key pattern over the input's
// tokens (core/analysis/token_search.h); per map family a layers x heads heatmap of how much
// attention matching queries put on matching keys, a click selecting that layer and head, and
// the matching tokens highlighted among the input chips. Recomputed for every run and edit.
#include <QJsonObject>
#include <QVector>
#include <QWidget>
#include <memory>

#include "core/model/trace.h"
#include "ui/views/heatmap_painter.h"

class QLabel;
class QLineEdit;

namespace atlas::ui {

class VariantPanel;

class TokenSearchPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TokenSearchPanel(QWidget* parent = nullptr);
  void setTrace(std::shared_ptr<const Trace> trace);
  void setPatterns(const QString& query, const QString& key);
  void setStyle(const HeatmapStyle& style, bool dark);
  QString status() const;
  // The query and key patterns, for a workspace (the scores are recomputed from the run on
  // screen, so they always belong to it). A damaged state is refused in status(), the panel
  // keeping its patterns.
  QJsonObject saveState() const;
  void restoreState(const QJsonObject& state);
  VariantPanel* plotPanel() const { return m_plots; }
  std::shared_ptr<const Trace> trace() const { return m_trace; }

 signals:
  void layerPicked(int layer);
  void headPicked(int head);
  // Source positions matching the query pattern and the key pattern (empty when none).
  void matchesChanged(const QVector<int>& queries, const QVector<int>& keys);

 private:
  void update();

  std::shared_ptr<const Trace> m_trace;
  QLineEdit* m_query;
  QLineEdit* m_key;
  QLabel* m_status;
  VariantPanel* m_plots;
};

}  // namespace atlas::ui
