#pragma once
// "Why this head attends here" (View > Variant panels > QK decomposition): the pre-softmax score
// of the selected head from one query to one key (core/analysis/qk_decomposition.h) split into
// query-side x key-side components (a matrix whose cells sum to the score, shown beside the
// engine's score), and the value path (each key-side component's projection on the head's
// output). It follows the linked selection: the layer and head selected anywhere, and the cell
// last clicked on the heatmap (or the query and key typed here). Recomputed on a worker (one
// forward with hooks) while the panel is open; a result belongs to one model, input and cell and
// is cleared when any of them changes, so it never shows another run's values. A model the
// decomposition does not cover shows its refusal. Settings and the result are saved in
// workspaces (saveState / restoreState).
#include <QFutureWatcher>
#include <QJsonObject>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>

#include "core/analysis/qk_decomposition.h"
#include "ui/views/attention_selection.h"
#include "ui/tools/tool_run.h"
#include "ui/views/heatmap_painter.h"

class QLabel;
class QSpinBox;

namespace atlas::ui {

class VariantPanel;

class QkDecompositionPanel : public QWidget {
  Q_OBJECT
 public:
  explicit QkDecompositionPanel(QWidget* parent = nullptr);
  ~QkDecompositionPanel() override;

  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);
  // The layer and head to split (an aggregate head such as the mean is not one head: the panel
  // asks for one).
  void setSelection(const AttentionSelection& selection);
  // The cell to split, as source token positions (the heatmap's last clicked cell); -1 keeps one.
  void setCell(int query, int key);
  void setStyle(const HeatmapStyle& style, bool dark);

  // The decomposition the panel shows for its selection and cell; throws AtlasError (no model,
  // an aggregate head, the model's refusal).
  QkRequest request() const;
  bool isRunning() const;
  const std::optional<QkDecomposition>& result() const { return m_result; }
  QString status() const;
  VariantPanel* plotPanel() const { return m_plots; }
  // The run it splits scores of (a model switch or other tokens clear the result).
  std::shared_ptr<const Model> model() const { return m_model; }
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  // Starts the decomposition the selection asks for unless it is shown or on its way (the panel
  // does this itself while visible, once per turn of the event loop); false when there is
  // nothing to start (its reason, such as the model's refusal, is then on the status line).
  bool refresh();

  QJsonObject saveState() const;
  void restoreState(const QJsonObject& state);

 signals:
  void decompositionFinished();  // a result, a failure or a discarded stale run

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  using Outcome = ToolOutcome<QkDecomposition>;
  void onDone();
  void setStatus(const QString& text);
  void changed();  // the wanted cell or run changed: drop what no longer answers it
  // refresh() once the event loop turns (a run and its selection arrive together), if visible.
  void scheduleRefresh();
  bool answers(const QkDecomposition& r, const QkRequest& q) const;
  QStringList tokenLabels() const;

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  std::optional<QkDecomposition> m_result;
  int m_layer = 0, m_head = 0;
  QSpinBox* m_query;
  QSpinBox* m_key;
  QLabel* m_head_label;
  QLabel* m_status;
  VariantPanel* m_plots;
  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  QkRequest m_running;          // what the worker computes
  quint64 m_generation = 0;     // bumped by a new run (model or input)
  quint64 m_runningGeneration = 0;
  std::optional<QkRequest> m_failed;  // the last request that failed on this run (not tried again)
  QString m_failedError;              // and why
  bool m_cellChosen = false;    // a cell was clicked, typed or restored (else: the last query)
  bool m_refreshQueued = false;
  int m_followedQuery = -1, m_followedKey = -1;  // the last cell setCell was given
  bool m_settingUp = false;     // inside setRun / restoreState: spin box edits are not the user's
  std::optional<QkDecomposition> m_pending;  // restored from a workspace, waiting for its run
  std::vector<int32_t> m_pendingTokens;
};

}  // namespace atlas::ui
