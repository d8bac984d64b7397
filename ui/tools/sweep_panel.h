#pragma once
// "Ablation sweep" (View > Variant panels): every head or layer of the current model ablated in
// turn on the current input (core/analysis/ablation_sweep.h), shown as a layers x heads heatmap
// of each cell's effect (ui/tools/sweep_figure.h) with the export of every panel. The sweep runs on a
// worker with a progress bar and Cancel (which keeps the finished cells); a click on a cell selects
// that layer and head everywhere. Before a sweep whose estimate (one forward measured on the worker,
// times the cells) exceeds longRunSeconds(), the panel shows the estimate and sweeps on a second
// press. A result belongs to one model and one input: a new run on other tokens or a model
// switch clears it (and cancels a sweep in flight), so the panel never shows another input's
// sweep.
#include <QFutureWatcher>
#include <QJsonObject>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>

#include "core/analysis/ablation_sweep.h"
#include "ui/tools/tool_run.h"
#include "ui/views/heatmap_painter.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace atlas::ui {

class VariantPanel;

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SweepPanel(QWidget* parent = nullptr);
  ~SweepPanel() override;

  // The current model and run; a different model or other tokens clear the result.
  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);
  void setStyle(const HeatmapStyle& style, bool dark);

  // The controls' choice; throws AtlasError (bad token text, a metric the model lacks).
  SweepSpec spec() const;
  void setChoice(SweepUnit unit, AblationMode mode, SweepMetric metric, const QString& tokenA = {},
                 const QString& tokenB = {});
  // Starts a sweep of the current run's tokens (as the Sweep button does); false with the
  // reason in status() when it cannot start.
  bool startSweep();
  void cancelSweep();
  bool isRunning() const;
  const std::optional<SweepResult>& result() const { return m_result; }
  // Above this estimate a sweep starts on the second press only (default 20 s).
  void setLongRunSeconds(double seconds) { m_gate.limitSeconds = seconds; }
  double longRunSeconds() const { return m_gate.limitSeconds; }
  // The measured time of one forward of this input (seconds), < 0 before the first measure.
  double forwardSeconds() const { return m_gate.forwardSeconds; }
  QString status() const;
  // The settings and the result (finished cells of a cancelled sweep included) for a workspace;
  // a restored result waits for a run of the tokens it was computed on. A damaged state is
  // refused in status(), the panel keeping what it had.
  QJsonObject saveState() const;
  void restoreState(const QJsonObject& state);
  VariantPanel* plotPanel() const { return m_plots; }
  std::shared_ptr<const Trace> runTrace() const { return m_trace; }
  std::shared_ptr<const Model> model() const { return m_model; }

 signals:
  void layerPicked(int layer);
  void headPicked(int head);
  void sweepFinished();  // a result, a failure or a cancel: see result() and status()

 private:
  void onSweepDone();
  void updateControls();
  void setStatus(const QString& text);

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  std::optional<SweepResult> m_result;
  std::optional<SweepResult> m_pending;  // restored from a workspace, waiting for its run
  std::vector<int32_t> m_pendingTokens;
  QComboBox* m_unit;
  QComboBox* m_mode;
  QComboBox* m_metric;
  QLineEdit* m_tokenA;
  QLineEdit* m_tokenB;
  QPushButton* m_start;
  QPushButton* m_cancel;
  QProgressBar* m_progress;
  QLabel* m_status;
  VariantPanel* m_plots;
  struct Outcome {
    std::optional<SweepResult> result;
    QString error;
    bool cancelled = false;
    double forwardSeconds = -1;
    bool waitingForConfirm = false;  // measured only: the estimate is long
  };
  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  quint64 m_generation = 0;  // bumped by every change of model or input
  quint64 m_runningGeneration = 0;
  LongRunGate m_gate;  // the estimate before a long sweep
};

}  // namespace atlas::ui
