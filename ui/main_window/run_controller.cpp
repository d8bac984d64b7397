#include "ui/main_window/run_controller.h"

#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"
#include "core/formats/model_io.h"

namespace atlas::ui {

RunController::RunController(QObject* parent) : QObject(parent) {
  m_debounce.setSingleShot(true);
  connect(&m_debounce, &QTimer::timeout, this, &RunController::startPending);
  connect(&m_runWatcher, &QFutureWatcher<RunOutcome>::finished, this, &RunController::onRunDone);
  connect(&m_loadWatcher, &QFutureWatcher<LoadOutcome>::finished, this, &RunController::onLoadDone);
}

RunController::~RunController() {
  // Do not leave a worker running on a model this object no longer owns.
  if (m_cancelFlag) m_cancelFlag->store(true);
  if (m_loadCancelFlag) m_loadCancelFlag->store(true);
  m_runWatcher.waitForFinished();
  m_loadWatcher.waitForFinished();
}

bool RunController::isBusy() const { return m_runWatcher.isRunning() || m_loadWatcher.isRunning(); }

int RunController::debounceMs() const {
  return std::clamp(static_cast<int>(std::lround(2.0 * m_lastRunMs)), 0, m_maxDebounceMs);
}

void RunController::loadModel(const QString& spec) {
  cancel();
  if (m_loadWatcher.isRunning()) m_loadWatcher.waitForFinished();  // cancelled just above
  emit modelLoading(spec);
  emit busyChanged(true);
  m_loadCancelFlag = std::make_shared<std::atomic<bool>>(false);
  QPointer<RunController> self(this);
  auto monitor = std::make_shared<LoadMonitor>();
  monitor->cancel = m_loadCancelFlag.get();
  monitor->progress = [self](double fraction, const std::string& stage) {
    const QString s = QString::fromStdString(stage);
    if (self)
      QMetaObject::invokeMethod(self, [self, fraction, s]() {
        if (self) emit self->loadProgress(fraction, s);
      }, Qt::QueuedConnection);
  };
  m_loadWatcher.setFuture(QtConcurrent::run([spec, monitor, flag = m_loadCancelFlag]() {
    LoadOutcome out;
    out.spec = spec;
    QElapsedTimer t;
    t.start();
    try {
      LoadOptions options;
      options.monitor = monitor.get();
      out.model = std::make_shared<const Model>(load_model(spec.toStdString(), options));
    } catch (const Cancelled&) {
      out.cancelled = true;
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    out.ms = t.nsecsElapsed() / 1e6;
    return out;
  }));
}

void RunController::onLoadDone() {
  LoadOutcome out = m_loadWatcher.result();
  if (!out.model) {
    emit busyChanged(isBusy());
    if (out.cancelled) emit modelLoadCancelled(out.spec);
    else emit modelLoadFailed(out.spec, out.error);
    return;
  }
  setModel(out.model);
  emit modelLoaded(out.spec, out.model);
  emit busyChanged(isBusy());
}

void RunController::setModel(std::shared_ptr<const Model> model) {
  cancel();
  m_model = std::move(model);
  m_lastRunMs = 0.0;
  m_prefixCache = std::make_shared<PrefixCache>();  // frees the old model's keys and trace
}

void RunController::requestRun(const QString& source, const QString& target) {
  m_pendingSource = source;
  m_pendingTarget = target;
  m_hasPending = true;
  ++m_generation;
  // A stale forward is useless: stop it at the next layer boundary.
  if (m_cancelFlag) m_cancelFlag->store(true);
  const bool idle = !m_runWatcher.isRunning() && !m_loadWatcher.isRunning() && !m_debounce.isActive();
  const bool quiet = !m_sinceRequest.isValid() || m_sinceRequest.elapsed() >= debounceMs();
  m_sinceRequest.restart();
  if (idle && quiet) {
    startPending();  // leading edge
    return;
  }
  m_debounce.start(debounceMs());
}

void RunController::runNow(const QString& source, const QString& target) {
  requestRun(source, target);
  m_debounce.stop();
  startPending();
}

void RunController::cancel() {
  m_debounce.stop();
  m_hasPending = false;
  ++m_generation;
  if (m_cancelFlag) m_cancelFlag->store(true);
  if (m_loadCancelFlag) m_loadCancelFlag->store(true);
}

void RunController::startPending() {
  if (!m_hasPending || !m_model) return;
  if (m_runWatcher.isRunning() || m_loadWatcher.isRunning()) return;  // resumed from onRunDone
  m_hasPending = false;
  m_lastQueueMs = m_sinceRequest.isValid() ? m_sinceRequest.nsecsElapsed() / 1e6 : 0.0;
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  const quint64 generation = m_generation;
  auto model = m_model;
  auto flag = m_cancelFlag;
  RunOptions options = m_options;
  options.cancel = flag.get();
  auto prefixCache = m_prefixCache;  // alive until this run ends
  options.prefix_cache = prefixCache.get();
  QPointer<RunController> self(this);
  options.progress = [self](double fraction, const std::string& stage) {
    const QString s = QString::fromStdString(stage);
    if (self)
      QMetaObject::invokeMethod(self, [self, fraction, s]() {
        if (self) emit self->runProgress(fraction, s);
      }, Qt::QueuedConnection);
  };
  options.memory_estimate = [self](double needed, double available) {
    if (self)
      QMetaObject::invokeMethod(self, [self, needed, available]() {
        if (self) emit self->runMemory(needed, available);
      }, Qt::QueuedConnection);
  };
  const std::string source = m_pendingSource.toStdString(), target = m_pendingTarget.toStdString();
  emit runStarted();
  emit busyChanged(true);
  auto postRun = m_postRun;
  auto backend = m_backend;  // alive until this run ends, even if the user switches meanwhile
  auto tokens = m_sourceTokens;
  m_runWatcher.setFuture(QtConcurrent::run([model, flag, options, source, target, generation, postRun, backend,
                                            tokens, prefixCache]() {
    RunOutcome out;
    out.generation = generation;
    QElapsedTimer t;
    t.start();
    try {
      // Shared with the prefix cache, which keeps this result for the next keystroke.
      std::shared_ptr<RunResult> result = tokens ? model->forward_shared(*tokens, {}, options)
                                                 : model->run_shared(source, target, options);
      if (postRun) {
        // Extra forwards (the ablated model) must not replace this run in the prefix cache.
        RunOptions post = options;
        post.prefix_cache = nullptr;
        postRun(*model, *result, post);
      }
      out.result = std::move(result);
    } catch (const Cancelled&) {
      out.cancelled = true;
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    out.ms = t.nsecsElapsed() / 1e6;
    return out;
  }));
}

void RunController::onRunDone() {
  RunOutcome out = m_runWatcher.result();
  const bool current = out.generation == m_generation;
  if (!out.cancelled && (out.result || current)) m_lastRunMs = out.ms;
  if (current) {
    if (out.result)
      emit runFinished(out.result, out.ms);
    else if (!out.cancelled)
      emit runFailed(out.error);
  }
  if (m_hasPending && !m_debounce.isActive()) startPending();
  emit busyChanged(isBusy());
}

}  // namespace atlas::ui
