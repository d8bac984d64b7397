#pragma once
// "Activation patching" (View > Variant panels): the current input is the clean run, a second
// text the corrupted one (same token count; the engine's refusal is shown in the panel). The grid
// (core/analysis/patching.h) runs on a worker with a progress bar and Cancel; Cancel keeps the
// cells finished so far (the rest masked). Before a grid whose estimate (one forward measured on
// the worker, times the cells) exceeds longRunSeconds(), the panel shows the estimate and runs on
// a second press. The grid is a heatmap (layer x position or layer x head; head-pos: a position
// slice) with diverging colours centred on 0; a click selects that layer and head (or query) in
// every view, and a second plot shows the selected head's map in the clean and corrupted runs side
// by side. A result belongs to one model and input: other tokens or a model switch clear it.
// Settings and the finished grid are saved in workspaces (saveState / restoreState).
#include <QFutureWatcher>
#include <QJsonObject>
#include <QStringList>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>

#include "core/analysis/patching.h"
#include "ui/views/attention_selection.h"
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

class PatchingPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PatchingPanel(QWidget* parent = nullptr);
  ~PatchingPanel() override;

  void setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace);
  void setSelection(const AttentionSelection& sel);
  void setStyle(const HeatmapStyle& style, bool dark);

  // The controls' choice; throws AtlasError (no model, a token text that is not one token).
  PatchSpec spec() const;
  void setChoice(PatchSite site, PatchDirection direction, PatchMetric metric, const QString& tokenA = {},
                 const QString& tokenB = {}, int position = -1);
  void setCorruptedText(const QString& text);
  QString corruptedText() const;
  // Starts the grid (as the Run button does); false with the reason in status() when it cannot.
  bool startPatching();
  void cancelPatching();
  bool isRunning() const;
  const std::optional<PatchResult>& result() const { return m_result; }
  QString status() const;
  VariantPanel* plotPanel() const { return m_plots; }
  // The clean run (a model switch or other tokens clear the grid).
  std::shared_ptr<const Model> model() const { return m_model; }
  std::shared_ptr<const Trace> trace() const { return m_trace; }
  // The head-pos grid's position slice shown.
  void setSlice(int position);
  // Above this estimate a grid starts on the second press only (default 20 s).
  void setLongRunSeconds(double seconds) { m_gate.limitSeconds = seconds; }
  double longRunSeconds() const { return m_gate.limitSeconds; }
  // > 0: the grid stops after this many cells as if cancelled there (a preview of the first
  // cells; tests cancel at a known cell with it). 0: no limit.
  void setCellLimit(int64_t cells) { m_cellLimit = cells; }
  // The measured time of one forward of this input (seconds), < 0 before the first measure.
  double forwardSeconds() const { return m_gate.forwardSeconds; }

  // Settings, the finished grid and the clean tokens it belongs to, as a workspace stores them;
  // a restored grid is shown once a run of those very tokens arrives.
  QJsonObject saveState() const;
  void restoreState(const QJsonObject& state);

 signals:
  void layerPicked(int layer);
  void headPicked(int head);
  void tokenPicked(int position);
  // A grid, a failure, a cancel, an estimate waiting for a second press (see result(), status()),
  // or a restored grid's corrupted maps traced again.
  void patchingFinished();

 private:
  struct Outcome {
    std::optional<PatchResult> result;
    std::shared_ptr<const Trace> corruptedTrace;  // the corrupted input's maps
    double forwardSeconds = -1;
    bool waitingForConfirm = false;  // measured only: the estimate is long
    bool mapsOnly = false;           // a restored grid's corrupted maps, traced again
    QString error;
    bool cancelled = false;
  };
  void onDone();
  void updateControls();
  void setStatus(const QString& text);
  int64_t cellCount(const PatchSpec& s) const;
  QStringList tokenLabels() const;
  void adoptPending();

  std::shared_ptr<const Model> m_model;
  std::shared_ptr<const Trace> m_trace;
  std::optional<PatchResult> m_result;
  std::shared_ptr<const Trace> m_corruptedTrace;
  QString m_resultCorrupted;  // the corrupted text of the grid on screen (or waiting)
  QString m_runningCorrupted;
  AttentionSelection m_sel;
  QComboBox* m_site;
  QComboBox* m_direction;
  QComboBox* m_metric;
  QLineEdit* m_corrupted;
  QLineEdit* m_tokenA;
  QLineEdit* m_tokenB;
  QSpinBox* m_position;
  QSpinBox* m_slice;
  QPushButton* m_start;
  QPushButton* m_cancel;
  QProgressBar* m_progress;
  QLabel* m_status;
  VariantPanel* m_plots;
  QFutureWatcher<Outcome> m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  quint64 m_generation = 0;  // bumped by every change of model or input
  quint64 m_runningGeneration = 0;
  LongRunGate m_gate;  // the estimate before a long grid
  int64_t m_cellLimit = 0;
  // A position and slice set before a run long enough to hold them (a workspace opened in a
  // fresh window), applied by the first run (-2 / -1: none).
  int m_waitingPosition = -2;
  int m_waitingSlice = -1;
  std::optional<PatchResult> m_pending;     // restored from a workspace, waiting for its run
  std::vector<int32_t> m_pendingTokens;
};

}  // namespace atlas::ui
