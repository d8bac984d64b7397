#include "ui/tools/training_worker.h"

#include <QThread>
#include <QtConcurrent>

#include "core/tensor/error.h"

namespace atlas::ui {

TrainingWorker::TrainingWorker(QObject* parent) : QObject(parent) {}

TrainingWorker::~TrainingWorker() { stopAndWait(); }

bool TrainingWorker::isRunning() const { return m_future.isRunning(); }

void TrainingWorker::stopAndWait() {
  m_stop = true;
  m_future.waitForFinished();
}

void TrainingWorker::start(std::unique_ptr<train::Trainer> trainer, int snapshotEvery) {
  stopAndWait();
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_trainer = std::move(trainer);
    // One fixed example of the task, drawn from its own generator so it does not disturb the
    // training batches; the views show the model's answer to it as the model learns.
    Rng rng(m_trainer->options().seed * 7919 + 17);
    std::string input, output;
    m_trainer->task().sample(rng, input, output);
    m_example = train::typed_example(m_trainer->config(), m_trainer->task(), input, output);
    m_stepsDone = m_trainer->steps_done();
  }
  m_hasTrainer = true;
  m_snapshotEvery = std::max(1, snapshotEvery);
  m_stop = false;
  m_paused = false;
  m_holding = false;
  m_future = QtConcurrent::run([this] { loop(); });
}

void TrainingWorker::emitSnapshot() {
  std::shared_ptr<const Model> model;
  qint64 step = 0;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    model = std::make_shared<const Model>(m_trainer->model());
    step = m_trainer->steps_done();
  }
  emit snapshot(model, QString::fromStdString(m_example.source),
                QString::fromStdString(m_example.target), step);
}

void TrainingWorker::loop() {
  try {
    bool wasPaused = false;
    while (!m_stop) {
      if (m_paused) {
        if (!wasPaused) {
          wasPaused = true;
          m_holding = true;
          emit pausedChanged(true);
          emitSnapshot();  // the views show where the run stopped
        }
        QThread::msleep(20);
        continue;
      }
      if (wasPaused) {
        wasPaused = false;
        m_holding = false;
        emit pausedChanged(false);
      }
      train::StepStats s;
      qint64 total = 0;
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_trainer->steps_done() >= m_trainer->options().steps) break;
        s = m_trainer->step();
        total = m_trainer->options().steps;
      }
      m_stepsDone = s.step;
      emit stepped(s.step, total, s.loss, s.accuracy);
      if (s.step % m_snapshotEvery == 0 && s.step < total) emitSnapshot();
    }
    emitSnapshot();
    emit finished(m_stop);
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
}

void TrainingWorker::save(const QString& dir) {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (!m_trainer) throw AtlasError("nothing to save: start a training run first");
  m_trainer->save(dir.toStdString());
}

}  // namespace atlas::ui
