#include "ui/main_window/backend_status.h"

#include <QLabel>
#include <QMainWindow>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

#include "ui/main_window/backend_settings.h"
#include "ui/main_window/run_controller.h"

namespace atlas::ui {

BackendStatus::BackendStatus(QMainWindow* window, RunController* runner)
    : QObject(window), m_window(window), m_runner(runner) {
  setObjectName("backendStatus");
  QMenu* settings = window->menuBar()->addMenu("&Settings");
  settings->addAction("Compute &backend\u2026", this, &BackendStatus::openDialog);
  m_label = new QLabel;
  m_label->setObjectName("backendLabel");
  window->statusBar()->addPermanentWidget(m_label);
}

QString BackendStatus::applySaved() {
  // A saved Vulkan choice that no longer starts (driver removed): run on the CPU and say so.
  return apply(loadBackendChoice(), false) ? QString() : m_error;
}

bool BackendStatus::apply(const BackendChoice& choice, bool rerun) {
  QString note;
  std::shared_ptr<Backend> backend;
  try {
    backend = makeBackend(choice, &note);
  } catch (const std::exception& e) {
    m_error = QString::fromStdString(e.what());
    return false;
  }
  m_error.clear();
  saveBackendChoice(choice);
  m_runner->setBackend(std::move(backend));
  refresh();
  if (!note.isEmpty()) m_label->setToolTip(note);
  if (rerun) emit rerunRequested();
  return true;
}

QString BackendStatus::text() const { return m_label->text(); }

void BackendStatus::refresh() {
  const auto backend = m_runner->backend();
  m_label->setText(backendLabel(backend.get()));
  QString tip = "Compute backend (Settings > Compute backend)";
  if (backend) {
    const auto fallbacks = backend->fallbacks();
    if (!fallbacks.empty()) {
      m_label->setText(backendLabel(backend.get()) + QString(" \u00B7 %1 CPU fallbacks").arg(fallbacks.size()));
      tip += "\nOps run on the CPU instead:";
      for (const auto& f : fallbacks) tip += "\n  " + QString::fromStdString(f);
    }
  }
  m_label->setToolTip(tip);
}

void BackendStatus::openDialog() {
  BackendDialog dialog(loadBackendChoice(), m_window);
  if (dialog.exec() != QDialog::Accepted) return;
  if (!apply(dialog.choice())) {
    QMessageBox box(QMessageBox::Critical, "Compute backend", "Could not start the chosen backend; the current one stays.",
                    QMessageBox::Ok, m_window);
    box.setInformativeText(m_error);
    box.exec();
  }
}

}  // namespace atlas::ui
