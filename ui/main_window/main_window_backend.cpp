// The compute backend in the window: Settings > Compute backend opens BackendDialog, the
// choice is stored in QSettings and applied to the run controller, and the status bar shows
// the backend with the ops it ran on the CPU instead (Backend::fallbacks()) in its tooltip.
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

#include "ui/main_window/backend_settings.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"

namespace atlas::ui {

void MainWindow::buildBackendUi() {
  QMenu* settings = menuBar()->addMenu("&Settings");
  settings->addAction("Compute &backend\u2026", this, &MainWindow::openBackendDialog);
  m_backendLabel = new QLabel;
  m_backendLabel->setObjectName("backendLabel");
  statusBar()->addPermanentWidget(m_backendLabel);
  const BackendChoice saved = loadBackendChoice();
  if (!applyBackendChoice(saved, false)) {
    // A saved Vulkan choice that no longer starts (driver removed): run on the CPU and say so.
    m_status->setText("Compute backend: " + m_lastError + "; using the CPU");
    m_lastError.clear();
  }
}

bool MainWindow::applyBackendChoice(const BackendChoice& choice, bool rerun) {
  QString note;
  std::shared_ptr<Backend> backend;
  try {
    backend = makeBackend(choice, &note);
  } catch (const std::exception& e) {
    m_lastError = QString::fromStdString(e.what());
    return false;
  }
  saveBackendChoice(choice);
  m_runner->setBackend(std::move(backend));
  updateBackendStatus();
  if (!note.isEmpty()) m_backendLabel->setToolTip(note);
  if (rerun && m_trace && m_runner->model()) onTextChanged();
  return true;
}

QString MainWindow::backendStatus() const { return m_backendLabel ? m_backendLabel->text() : QString(); }

void MainWindow::updateBackendStatus() {
  if (!m_backendLabel) return;
  const auto backend = m_runner->backend();
  m_backendLabel->setText(backendLabel(backend.get()));
  QString tip = "Compute backend (Settings > Compute backend)";
  if (backend) {
    const auto fallbacks = backend->fallbacks();
    if (!fallbacks.empty()) {
      m_backendLabel->setText(backendLabel(backend.get()) + QString(" \u00B7 %1 CPU fallbacks").arg(fallbacks.size()));
      tip += "\nOps run on the CPU instead:";
      for (const auto& f : fallbacks) tip += "\n  " + QString::fromStdString(f);
    }
  }
  m_backendLabel->setToolTip(tip);
}

void MainWindow::openBackendDialog() {
  BackendDialog dialog(loadBackendChoice(), this);
  if (dialog.exec() != QDialog::Accepted) return;
  if (!applyBackendChoice(dialog.choice())) {
    QMessageBox box(QMessageBox::Critical, "Compute backend", "Could not start the chosen backend; the current one stays.",
                    QMessageBox::Ok, this);
    box.setInformativeText(m_lastError);
    box.exec();
  }
}

}  // namespace atlas::ui
