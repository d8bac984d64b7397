#pragma once
// Runs a train::Trainer off the UI thread (QtConcurrent) for the training panel. The loop
// checks a pause flag and a stop flag between steps, so pausing never tears a step in half;
// every step reports its loss and accuracy, and every `snapshotEvery` steps (and when the run
// pauses, stops or finishes) the current weights go out as an inference Model together with
// the task's typed example, for the main window's views.
#include <QFuture>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <mutex>

#include "core/model/model.h"
#include "core/train/train_loop.h"

namespace atlas::ui {

class TrainingWorker : public QObject {
  Q_OBJECT
 public:
  explicit TrainingWorker(QObject* parent = nullptr);
  ~TrainingWorker() override;  // stops the loop and waits for it

  // Takes the trainer and starts the loop. `snapshotEvery` >= 1.
  void start(std::unique_ptr<train::Trainer> trainer, int snapshotEvery);
  void setPaused(bool paused) { m_paused = paused; }
  bool isPaused() const { return m_paused; }
  // True once the loop has seen the pause and holds between steps: no step is in flight.
  bool isHolding() const { return m_holding; }
  void requestStop() { m_stop = true; }
  void stopAndWait();
  bool isRunning() const;
  bool hasTrainer() const { return m_hasTrainer; }  // lock-free: the UI never waits on a step
  qint64 stepsDone() const { return m_stepsDone; }
  // Writes a checkpoint (train::Trainer::save) of the current weights; waits for the step in
  // flight. Throws AtlasError when there is no trainer or the folder cannot be written.
  void save(const QString& dir);

 signals:
  // Emitted from the worker thread; connections to UI objects are queued.
  void stepped(qint64 step, qint64 total, double loss, double accuracy);
  void snapshot(std::shared_ptr<const atlas::Model> model, const QString& source,
                const QString& target, qint64 step);
  void pausedChanged(bool paused);
  void finished(bool stopped);
  void failed(const QString& message);

 private:
  void loop();
  void emitSnapshot();

  std::unique_ptr<train::Trainer> m_trainer;
  mutable std::mutex m_mutex;  // guards m_trainer between the loop and save()
  QFuture<void> m_future;
  std::atomic<bool> m_paused{false};
  std::atomic<bool> m_holding{false};
  std::atomic<bool> m_stop{false};
  std::atomic<qint64> m_stepsDone{0};
  std::atomic<bool> m_hasTrainer{false};
  int m_snapshotEvery = 10;
  train::TypedExample m_example;
};

}  // namespace atlas::ui
