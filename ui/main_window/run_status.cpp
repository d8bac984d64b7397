#include "ui/main_window/run_status.h"

#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>
#include <QToolButton>
#include <cmath>

#include "core/formats/input_file.h"
#include "ui/main_window/run_controller.h"

namespace atlas::ui {

RunStatus::RunStatus(QStatusBar* bar, RunController* runner, QObject* parent) : QObject(parent), m_runner(runner) {
  setObjectName("runStatusLine");
  m_text = new QLabel("Starting\u2026");
  m_text->setObjectName("runStatus");
  bar->addWidget(m_text, 1);
  m_progress = new QProgressBar;
  m_progress->setRange(0, 1000);
  m_progress->setMaximumWidth(180);
  m_progress->hide();
  m_cancel = new QToolButton;
  m_cancel->setText("Cancel");
  m_cancel->setObjectName("cancelButton");
  m_cancel->hide();
  m_memoryNote = new QLabel;
  m_memoryNote->setObjectName("memoryNote");
  m_memoryNote->setStyleSheet("color: #b35900;");
  m_memoryNote->hide();
  bar->addPermanentWidget(m_memoryNote);
  bar->addPermanentWidget(m_progress);
  bar->addPermanentWidget(m_cancel);

  connect(m_cancel, &QToolButton::clicked, this, [this] {
    const bool loading = m_runner->isLoading();
    m_runner->cancel();
    if (!loading) m_text->setText("Run cancelled");  // a load says so when it has stopped
  });
  connect(runner, &RunController::modelLoading, this, [this](const QString& spec) {
    m_text->setText("Loading " + spec + "\u2026");
    m_clock.start();  // a load's progress shows after the same delay as a run's
  });
  connect(runner, &RunController::runStarted, this, [this] { m_clock.start(); });
  connect(runner, &RunController::runProgress, this, &RunStatus::showProgress);
  connect(runner, &RunController::loadProgress, this, &RunStatus::showProgress);
  connect(runner, &RunController::runMemory, this, &RunStatus::showMemory);
  connect(runner, &RunController::busyChanged, this, [this](bool busy) {
    if (!busy) {
      m_progress->hide();
      m_cancel->hide();
    }
  });
}

void RunStatus::setText(const QString& text) { m_text->setText(text); }

void RunStatus::showProgress(double fraction, const QString& stage) {
  // Only long runs and loads get a progress bar; a flash of one per keystroke would be noise.
  if (m_clock.isValid() && m_clock.elapsed() > 150) {
    m_progress->show();
    m_cancel->show();
    m_progress->setValue(static_cast<int>(fraction * 1000));
    m_progress->setFormat(stage + " %p%");
  }
}

void RunStatus::showMemory(double needed, double available) {
  // Past half of what the process may allocate, a longer input or another program can tip the
  // run over the guard's limit (90%, core/model/memory_budget.h): say so before it does.
  const bool close = available > 0 && needed > 0.5 * available;
  m_memoryNote->setVisible(close);
  if (!close) return;
  const auto bytes = [](double b) { return QString::fromStdString(format_bytes(static_cast<uint64_t>(b))); };
  m_memoryNote->setText(QString("Memory: this run needs %1 of %2 available (%3%)")
                            .arg(bytes(needed), bytes(available))
                            .arg(static_cast<int>(std::lround(100.0 * needed / available))));
  m_memoryNote->setToolTip(
      "The attention maps of every layer and head dominate. Runs above 90% of the available memory "
      "are refused; a shorter input or maps computed on request (View > Attention maps > Always "
      "computed on request) need less.");
}

}  // namespace atlas::ui
