#pragma once
// Model > Train a model…: trains a small vanilla or adaptive-span preset on a generated task
// (core/train/train_loop.h) in a worker thread, with live loss and accuracy curves. Every few steps
// (and on pause, stop and finish) the current weights reach the main window as a Model with a
// typed example of the task, so the heatmap, model view and span panel show it learning.
#include <QDialog>
#include <QPointF>
#include <QVector>
#include <memory>

#include "core/model/model.h"

class QComboBox;
class QSpinBox;
class QDoubleSpinBox;
class QPushButton;
class QProgressBar;
class QLabel;

namespace atlas::ui {

class CurvePlot;
class TrainingWorker;

// What the form holds; the defaults are docs/training.md's measured copy run.
struct TrainingSetup {
  QString preset = "tiny-decoder";
  QString task = "copy";
  int steps = 300;
  int length = 8;
  int batch = 16;
  int seed = 1;
  int dModel = 32;
  int dFf = 64;
  QString schedule = "warmup";  // or "constant"
  double lr = 1.0;              // warmup: multiplier of seed 002's formula; constant: the rate
  int warmup = 100;
  int logEvery = 5;      // a curve point every N steps
  int snapshotEvery = 25;  // the main window's model refreshes every K steps
};

class TrainingPanel : public QDialog {
  Q_OBJECT
 public:
  explicit TrainingPanel(QWidget* parent = nullptr);
  ~TrainingPanel() override;

  void setSetup(const TrainingSetup& setup);
  TrainingSetup setup() const;

  bool start();  // false (with the reason in lastError()) when the setup is rejected
  void setPaused(bool paused);
  void stop();   // stops the worker and waits for it
  bool saveCheckpoint(const QString& dir);  // false with lastError() on failure

  bool isRunning() const;
  bool isPaused() const;
  bool isHolding() const;  // paused and the step in flight has finished
  qint64 stepsDone() const;
  QString lastError() const { return m_lastError; }
  const QVector<QPointF>& lossPoints() const { return m_loss; }
  const QVector<QPointF>& accuracyPoints() const { return m_accuracy; }
  CurvePlot* lossPlot() const { return m_lossPlot; }
  CurvePlot* accuracyPlot() const { return m_accuracyPlot; }

 signals:
  // The current weights and the text to type into the main window (source, and target for an
  // encoder-decoder) to pose the task's example.
  void modelSnapshot(std::shared_ptr<const atlas::Model> model, const QString& label,
                     const QString& source, const QString& target);
  void trainingFinished(bool stopped);

 private:
  void buildUi();
  void onStepped(qint64 step, qint64 total, double loss, double accuracy);
  void onFinished(bool stopped);
  void onFailed(const QString& message);
  void updateButtons();
  void redrawCurves();
  void chooseCheckpointFolder();

  TrainingWorker* m_worker = nullptr;
  QVector<QPointF> m_loss;
  QVector<QPointF> m_accuracy;
  QString m_lastError;
  QString m_runLabel;
  int m_logEvery = 5;
  // From Start until the worker's `finished` (or `failed`) is handled here: every step's
  // queued report arrives before it, so the curves are complete once this turns false.
  bool m_running = false;

  QComboBox* m_preset = nullptr;
  QComboBox* m_task = nullptr;
  QSpinBox* m_steps = nullptr;
  QSpinBox* m_length = nullptr;
  QSpinBox* m_batch = nullptr;
  QSpinBox* m_seed = nullptr;
  QSpinBox* m_dModel = nullptr;
  QSpinBox* m_dFf = nullptr;
  QComboBox* m_schedule = nullptr;
  QDoubleSpinBox* m_lr = nullptr;
  QSpinBox* m_warmup = nullptr;
  QSpinBox* m_logEverySpin = nullptr;
  QSpinBox* m_snapshotEvery = nullptr;
  QPushButton* m_startButton = nullptr;
  QPushButton* m_pauseButton = nullptr;
  QPushButton* m_stopButton = nullptr;
  QPushButton* m_saveButton = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_status = nullptr;
  CurvePlot* m_lossPlot = nullptr;
  CurvePlot* m_accuracyPlot = nullptr;
};

}  // namespace atlas::ui
