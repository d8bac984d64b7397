#pragma once
// "Logit attribution" (View > Variant panels): direct logit attribution
// (core/analysis/logit_attribution.h) of the current input at one position: the logit of a target
// token (the run's top token when left empty), or its difference with a contrast token, split
// into every head's part (a layers x heads heatmap; a click selects that layer and head
// everywhere) and the embeddings, attention biases, MLPs and output biases (bars, with their total
// beside the model's own logit). Runs on a worker (one forward with hooks); a result belongs to
// one model and input and is cleared by other tokens or a model switch. Settings and the result
// are saved in workspaces (saveState / restoreState).
#include <QFutureWatcher>
#include <QJsonObject>
#include <QWidget>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "core/analysis/logit_attribution.h"
#include "ui/tools/tool_run.h"
#include "ui/views/heatmap_painter.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace atlas::ui {

class VariantPanel;

class DlaPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DlaPanel(QWidget* parent = nullptr);
  ~DlaPanel() override;

  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);
  void setStyle(const HeatmapStyle& style, bool dark);

  // The controls' request; throws AtlasError (no model, a token text that is not one token, a
  // contrast without a target).
  DlaRequest request() const;
  void setChoice(const QString& token, const QString& against = {}, int position = -1);
  bool startAttribution();
  bool isRunning() const;
  const std::optional<LogitAttribution>& result() const { return m_result; }
  QString status() const;
  VariantPanel* plotPanel() const { return m_plots; }
  // The run the panel attributes (a model switch or other tokens clear the result).
  std::shared_ptr<const Model> model() const { return m_model; }
  std::shared_ptr<const Trace> trace() const { return m_trace; }

  QJsonObject saveState() const;
  void restoreState(const QJsonObject& state);

 signals:
  void layerPicked(int layer);
  void headPicked(int head);
  void attributionFinished();  // a result or a failure: see result() and status()

 private:
  using Outcome = ToolOutcome<LogitAttribution>;
  void onDone();
  void setStatus(const QString& text);
  std::function<QString(int64_t)> tokenText() const;

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  std::optional<LogitAttribution> m_result;
  QLineEdit* m_token;
  QLineEdit* m_against;
  QSpinBox* m_position;
  QPushButton* m_start;
  QLabel* m_status;
  VariantPanel* m_plots;
  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  quint64 m_generation = 0;
  quint64 m_runningGeneration = 0;
  int m_waitingPosition = -2;  // set before a run long enough to hold it, applied by the first run
  std::optional<LogitAttribution> m_pending;  // restored from a workspace, waiting for its run
  std::vector<int32_t> m_pendingTokens;
};

}  // namespace atlas::ui
