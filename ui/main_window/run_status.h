#pragma once
// The status bar's run line: what is on screen (model, tokens, forward time, warnings), a
// progress bar and Cancel for runs and model loads past 150 ms, and the memory note when a run
// holds more than half of what the process may allocate.
#include <QElapsedTimer>
#include <QObject>
#include <QString>

class QLabel;
class QProgressBar;
class QStatusBar;
class QToolButton;

namespace atlas::ui {

class RunController;

class RunStatus : public QObject {
  Q_OBJECT
 public:
  // Adds its widgets to `bar` and follows `runner`'s loads and runs.
  RunStatus(QStatusBar* bar, RunController* runner, QObject* parent = nullptr);

  void setText(const QString& text);
  // The memory note: shown, with the share, when `needed` is over half of `available`.
  void showMemory(double neededBytes, double availableBytes);

 private:
  void showProgress(double fraction, const QString& stage);

  RunController* m_runner;
  QLabel* m_text;
  QProgressBar* m_progress;
  QToolButton* m_cancel;
  QLabel* m_memoryNote;
  QElapsedTimer m_clock;  // since the run or load started
};

}  // namespace atlas::ui
