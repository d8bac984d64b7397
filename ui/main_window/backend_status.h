#pragma once
// The compute backend in the window: Settings > Compute backend opens BackendDialog, the choice
// is stored in QSettings and applied to the run controller, and the status bar shows the
// backend with the ops it ran on the CPU instead (Backend::fallbacks()) in its tooltip.
#include <QObject>
#include <QString>

class QLabel;
class QMainWindow;

namespace atlas::ui {

class RunController;
struct BackendChoice;

class BackendStatus : public QObject {
  Q_OBJECT
 public:
  // Adds Settings > Compute backend to `window`'s menu bar and the label to its status bar.
  BackendStatus(QMainWindow* window, RunController* runner);

  // Starts `choice`, stores it and gives it to the runner (rerun: and asks for the input to run
  // again). False when it cannot start, with the reason in error(); the current backend stays.
  bool apply(const BackendChoice& choice, bool rerun = true);
  // The stored choice, at start; empty, or what went wrong (the CPU is used then).
  QString applySaved();
  QString error() const { return m_error; }
  QString text() const;  // the status bar's backend text: "CPU", "Vulkan: <device> · 2 CPU fallbacks"
  void refresh();        // after a run: the ops the backend ran on the CPU so far

 signals:
  void rerunRequested();

 private:
  void openDialog();

  QMainWindow* m_window;
  RunController* m_runner;
  QLabel* m_label;
  QString m_error;
};

}  // namespace atlas::ui
