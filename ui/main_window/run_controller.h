#pragma once
// Runs the model off the UI thread. Text edits call requestRun(); the run starts after a
// debounce, the previous run (if still going) is cancelled through RunOptions::cancel, and
// only the newest request's result is delivered. At most one forward runs at a time, so two
// stale runs never compete for the cores. Model loading is asynchronous too.
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QPointer>
#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <functional>
#include <memory>

#include "core/model/model.h"
#include "core/model/prefix_cache.h"

namespace atlas::ui {

struct RunOutcome {
  std::shared_ptr<const RunResult> result;  // null on error or cancel
  QString error;                            // AtlasError message
  bool cancelled = false;
  double ms = 0.0;
  quint64 generation = 0;
};

struct LoadOutcome {
  std::shared_ptr<const Model> model;
  QString spec;
  QString error;
  bool cancelled = false;
  double ms = 0.0;
};

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  // Emits modelLoaded, modelLoadFailed or modelLoadCancelled (cancel() during the load), with
  // loadProgress between. The current model stays until the new one has loaded.
  void loadModel(const QString& spec);
  void setModel(std::shared_ptr<const Model> model);
  std::shared_ptr<const Model> model() const { return m_model; }

  // Debounced on the trailing edge: while requests keep coming, the run starts `debounceMs()`
  // after the last one. The delay adapts to the model: twice the last forward time, capped at
  // 150 ms, so typing into a slow model does not queue work and a fast model feels instant.
  // An isolated edit (nothing running, no request for debounceMs()) starts at once: waiting
  // would only add latency to the one keystroke the user is watching.
  void requestRun(const QString& source, const QString& target);
  void runNow(const QString& source, const QString& target);  // no debounce
  int debounceMs() const;
  void setMaxDebounceMs(int ms) { m_maxDebounceMs = ms; }
  void cancel();  // cancels the running forward or model load and drops pending requests
  bool isBusy() const;
  bool isLoading() const { return m_loadWatcher.isRunning(); }
  double lastRunMs() const { return m_lastRunMs; }
  // From the newest request to the start of its run (debounce and waiting for a stale run).
  double lastQueueMs() const { return m_lastQueueMs; }
  // Leading tokens the last run of a causal model took from the previous run's keys and values
  // (core/model/prefix_cache.h); 0 when it ran in full.
  int64_t lastReusedTokens() const { return m_prefixCache->reused_tokens(); }
  RunOptions& runOptions() { return m_options; }
  // Later runs use these source tokens instead of tokenizing the text (an image's pixels for a
  // pixel model, core/input/image_input.h); null returns to text.
  void setSourceTokens(std::shared_ptr<const std::vector<TokenInfo>> tokens) { m_sourceTokens = std::move(tokens); }
  bool hasSourceTokens() const { return m_sourceTokens != nullptr; }
  // Work done on the worker after every forward, on the fresh result (the logit lens and the
  // ablation comparison of the variant panels). Empty = none. It may throw AtlasError, which
  // fails the run with that message.
  using PostRun = std::function<void(const Model&, RunResult&, const RunOptions&)>;
  void setPostRun(PostRun fn) { m_postRun = std::move(fn); }
  // The backend of later runs (null = the CPU reference backend); kept alive by every run
  // that started with it.
  void setBackend(std::shared_ptr<Backend> backend) {
    m_backend = std::move(backend);
    m_options.backend = m_backend.get();
  }
  std::shared_ptr<Backend> backend() const { return m_backend; }

 signals:
  void modelLoading(const QString& spec);
  void modelLoaded(const QString& spec, std::shared_ptr<const atlas::Model> model);
  void modelLoadFailed(const QString& spec, const QString& message);
  void modelLoadCancelled(const QString& spec);
  void loadProgress(double fraction, const QString& stage);
  void runStarted();
  void runProgress(double fraction, const QString& stage);
  // Before the forward's first layer: what the run will hold and what the process may allocate.
  void runMemory(double neededBytes, double availableBytes);
  void runFinished(std::shared_ptr<const atlas::RunResult> result, double ms);
  void runFailed(const QString& message);
  void busyChanged(bool busy);

 private:
  void startPending();
  void onRunDone();
  void onLoadDone();

  std::shared_ptr<const Model> m_model;
  RunOptions m_options;
  // Replaced (not cleared) on a model switch: a run still on the worker keeps its own.
  std::shared_ptr<PrefixCache> m_prefixCache = std::make_shared<PrefixCache>();
  PostRun m_postRun;
  std::shared_ptr<Backend> m_backend;
  QTimer m_debounce;
  QString m_pendingSource, m_pendingTarget;
  std::shared_ptr<const std::vector<TokenInfo>> m_sourceTokens;
  bool m_hasPending = false;
  quint64 m_generation = 0;  // of the newest request
  std::shared_ptr<std::atomic<bool>> m_cancelFlag;
  std::shared_ptr<std::atomic<bool>> m_loadCancelFlag;
  QFutureWatcher<RunOutcome> m_runWatcher;
  QFutureWatcher<LoadOutcome> m_loadWatcher;
  double m_lastRunMs = 0.0;
  QElapsedTimer m_sinceRequest;
  double m_lastQueueMs = 0.0;
  int m_maxDebounceMs = 150;
};

}  // namespace atlas::ui
