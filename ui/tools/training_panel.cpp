#include "ui/tools/training_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/panels/chart_adapter.h"
#include "core/tensor/error.h"
#include "ui/dialog_folders.h"
#include "core/model/presets.h"
#include "core/train/train_loop.h"
#include "ui/tools/training_worker.h"

namespace atlas::ui {

namespace {

// The presets the trainer has a backward for (train::check_trainable): the tiny vanilla ones,
// tiny-span, tiny-shaw and the tiny Universal Transformers, read from the preset list so a
// newly trainable preset shows up by itself.
QStringList trainablePresets() {
  QStringList names;
  for (const auto& p : list_presets()) {
    if (p.name.rfind("tiny-", 0) != 0) continue;
    try {
      train::check_trainable(preset_config(p.name));
      names << QString::fromStdString(p.name);
    } catch (const AtlasError&) {
    }
  }
  return names;
}

QSpinBox* spin(int lo, int hi, int value) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setValue(value);
  return s;
}

}  // namespace

TrainingPanel::TrainingPanel(QWidget* parent) : QDialog(parent) {
  setWindowTitle("Train a model");
  m_worker = new TrainingWorker(this);
  connect(m_worker, &TrainingWorker::stepped, this, &TrainingPanel::onStepped);
  connect(m_worker, &TrainingWorker::snapshot, this,
          [this](std::shared_ptr<const Model> model, const QString& source, const QString& target,
                 qint64 step) {
            emit modelSnapshot(std::move(model), QString("%1 @ step %2").arg(m_runLabel).arg(step),
                               source, target);
          });
  connect(m_worker, &TrainingWorker::pausedChanged, this, [this] { updateButtons(); });
  connect(m_worker, &TrainingWorker::finished, this, &TrainingPanel::onFinished);
  connect(m_worker, &TrainingWorker::failed, this, &TrainingPanel::onFailed);
  buildUi();
  setSetup(TrainingSetup{});
  updateButtons();
}

TrainingPanel::~TrainingPanel() { m_worker->stopAndWait(); }

void TrainingPanel::buildUi() {
  m_preset = new QComboBox;
  m_preset->addItems(trainablePresets());
  m_task = new QComboBox;
  for (const auto& t : train::list_tasks()) {
    if (std::string(t.name) == "char-lm") continue;  // needs a text file: `atlas train` has it
    m_task->addItem(t.name);
    m_task->setItemData(m_task->count() - 1, t.description, Qt::ToolTipRole);
  }
  m_steps = spin(1, 1000000, 300);
  m_length = spin(1, 256, 8);
  m_batch = spin(1, 4096, 16);
  m_seed = spin(0, 1 << 30, 1);
  m_dModel = spin(2, 4096, 32);
  m_dFf = spin(1, 16384, 64);
  m_schedule = new QComboBox;
  m_schedule->addItems({"warmup", "constant"});
  m_schedule->setToolTip("warmup: seed 002's d^-0.5 min(step^-0.5, step warmup^-1.5) times the "
                         "learning rate; constant: the learning rate itself");
  m_lr = new QDoubleSpinBox;
  m_lr->setDecimals(5);
  m_lr->setRange(0.0, 100.0);
  m_lr->setSingleStep(0.1);
  m_warmup = spin(1, 1000000, 100);
  m_logEverySpin = spin(1, 100000, 5);
  m_snapshotEvery = spin(1, 100000, 25);

  auto* form = new QFormLayout;
  form->addRow("Preset", m_preset);
  form->addRow("Task", m_task);
  form->addRow("Steps", m_steps);
  form->addRow("Length", m_length);
  form->addRow("Batch", m_batch);
  form->addRow("Seed", m_seed);
  form->addRow("d_model", m_dModel);
  form->addRow("d_ff", m_dFf);
  form->addRow("Schedule", m_schedule);
  form->addRow("Learning rate", m_lr);
  form->addRow("Warm-up steps", m_warmup);
  form->addRow("Curve point every", m_logEverySpin);
  form->addRow("Refresh views every", m_snapshotEvery);

  m_startButton = new QPushButton("Start");
  m_pauseButton = new QPushButton("Pause");
  m_stopButton = new QPushButton("Stop");
  m_saveButton = new QPushButton("Save checkpoint\u2026");
  connect(m_startButton, &QPushButton::clicked, this, [this] {
    if (!start()) QMessageBox::warning(this, "Cannot start training", m_lastError);
  });
  connect(m_pauseButton, &QPushButton::clicked, this, [this] { setPaused(!isPaused()); });
  connect(m_stopButton, &QPushButton::clicked, this, [this] { m_worker->requestStop(); });
  connect(m_saveButton, &QPushButton::clicked, this, &TrainingPanel::chooseCheckpointFolder);
  auto* buttons = new QHBoxLayout;
  for (auto* b : {m_startButton, m_pauseButton, m_stopButton, m_saveButton}) buttons->addWidget(b);

  m_progress = new QProgressBar;
  m_progress->setFormat("%v / %m steps");
  m_status = new QLabel("Choose a preset and a task, then Start.");
  m_status->setWordWrap(true);
  m_lossPlot = new CurvePlot;
  m_lossPlot->setTitle("Training loss");
  m_lossPlot->setAxisTitles("step", "loss per token");
  m_lossPlot->setValueBounds(0.0, std::nullopt);  // cross-entropy >= 0
  m_accuracyPlot = new CurvePlot;
  m_accuracyPlot->setTitle("Training accuracy");
  m_accuracyPlot->setAxisTitles("step", "accuracy");
  m_accuracyPlot->setValueBounds(0.0, 1.0);
  auto* plots = new QHBoxLayout;
  plots->addWidget(m_lossPlot);
  plots->addWidget(m_accuracyPlot);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(m_progress);
  layout->addWidget(m_status);
  layout->addLayout(plots, 1);
  resize(760, 720);
}

void TrainingPanel::setSetup(const TrainingSetup& s) {
  m_preset->setCurrentText(s.preset);
  m_task->setCurrentText(s.task);
  m_steps->setValue(s.steps);
  m_length->setValue(s.length);
  m_batch->setValue(s.batch);
  m_seed->setValue(s.seed);
  m_dModel->setValue(s.dModel);
  m_dFf->setValue(s.dFf);
  m_schedule->setCurrentText(s.schedule);
  m_lr->setValue(s.lr);
  m_warmup->setValue(s.warmup);
  m_logEverySpin->setValue(s.logEvery);
  m_snapshotEvery->setValue(s.snapshotEvery);
}

TrainingSetup TrainingPanel::setup() const {
  TrainingSetup s;
  s.preset = m_preset->currentText();
  s.task = m_task->currentText();
  s.steps = m_steps->value();
  s.length = m_length->value();
  s.batch = m_batch->value();
  s.seed = m_seed->value();
  s.dModel = m_dModel->value();
  s.dFf = m_dFf->value();
  s.schedule = m_schedule->currentText();
  s.lr = m_lr->value();
  s.warmup = m_warmup->value();
  s.logEvery = m_logEverySpin->value();
  s.snapshotEvery = m_snapshotEvery->value();
  return s;
}

bool TrainingPanel::start() {
  if (isRunning()) {
    m_lastError = "a run is already going: stop it first";
    return false;
  }
  const TrainingSetup s = setup();
  std::unique_ptr<train::Trainer> trainer;
  try {
    if (s.preset.isEmpty()) throw AtlasError("no trainable preset is available");
    train::TrainOptions o;
    o.preset = s.preset.toStdString();
    o.task = s.task.toStdString();
    o.steps = s.steps;
    o.batch = s.batch;
    o.seed = static_cast<uint64_t>(s.seed);
    o.task_options.length = s.length;
    o.schedule.kind = train::parse_schedule_kind(s.schedule.toStdString());
    o.schedule.lr = s.lr;
    o.schedule.warmup = s.warmup;
    ModelConfig c = preset_config(o.preset);
    c.d_model = s.dModel;
    c.d_ff = s.dFf;
    if (c.d_model % c.n_heads)
      throw AtlasError("d_model " + std::to_string(c.d_model) + " is not divisible by the " +
                       std::to_string(c.n_heads) + " heads of " + o.preset);
    c.name = o.preset + "-" + o.task;
    trainer = std::make_unique<train::Trainer>(std::move(c), std::move(o));
  } catch (const std::exception& e) {
    m_lastError = QString::fromStdString(e.what());
    m_status->setText("Cannot start: " + m_lastError);
    return false;
  }
  m_runLabel = QString("training:%1/%2").arg(s.preset, s.task);
  m_logEvery = s.logEvery;
  m_loss.clear();
  m_accuracy.clear();
  redrawCurves();
  m_progress->setRange(0, s.steps);
  m_progress->setValue(0);
  m_status->setText(QString("Training %1 on %2\u2026").arg(s.preset, s.task));
  m_lastError.clear();
  m_worker->start(std::move(trainer), s.snapshotEvery);
  m_running = true;
  updateButtons();
  return true;
}

void TrainingPanel::setPaused(bool paused) {
  if (!isRunning()) return;
  m_worker->setPaused(paused);
  m_status->setText(paused ? "Paused: the views show the model as it is now." : "Training\u2026");
  updateButtons();
}

void TrainingPanel::stop() {
  m_worker->stopAndWait();
  m_running = false;
  updateButtons();
}

bool TrainingPanel::isRunning() const { return m_running; }
bool TrainingPanel::isPaused() const { return m_worker->isPaused(); }
bool TrainingPanel::isHolding() const { return m_worker->isHolding(); }
qint64 TrainingPanel::stepsDone() const { return m_worker->stepsDone(); }

bool TrainingPanel::saveCheckpoint(const QString& dir) {
  try {
    m_worker->save(dir);
  } catch (const std::exception& e) {
    m_lastError = QString::fromStdString(e.what());
    return false;
  }
  m_status->setText(QString("Saved step %1 to %2 (open it with Model > Open model folder).")
                        .arg(stepsDone())
                        .arg(dir));
  return true;
}

void TrainingPanel::chooseCheckpointFolder() {
  const QString dir = QFileDialog::getExistingDirectory(this, "Save checkpoint to folder", dialogFolder(DialogPurpose::Checkpoint));
  if (dir.isEmpty()) return;
  rememberDialogChoice(DialogPurpose::Checkpoint, dir);
  if (!saveCheckpoint(dir)) QMessageBox::warning(this, "Cannot save checkpoint", m_lastError);
}

void TrainingPanel::onStepped(qint64 step, qint64 total, double loss, double accuracy) {
  m_progress->setMaximum(static_cast<int>(total));
  m_progress->setValue(static_cast<int>(step));
  if (step % m_logEvery != 0 && step != total) return;
  m_loss.append(QPointF(step, loss));
  m_accuracy.append(QPointF(step, accuracy));
  m_status->setText(QString("Step %1 / %2: loss %3, accuracy %4%")
                        .arg(step)
                        .arg(total)
                        .arg(loss, 0, 'f', 4)
                        .arg(100.0 * accuracy, 0, 'f', 1));
  redrawCurves();
}

void TrainingPanel::onFinished(bool stopped) {
  m_worker->stopAndWait();  // the loop emitted its last signal and is returning
  m_worker->setPaused(false);  // a run stopped while paused: the next Start is not paused
  m_running = false;
  m_status->setText(QString("%1 after %2 steps. Save checkpoint\u2026 writes the model format.")
                        .arg(stopped ? "Stopped" : "Finished")
                        .arg(stepsDone()));
  updateButtons();
  emit trainingFinished(stopped);
}

void TrainingPanel::onFailed(const QString& message) {
  m_worker->stopAndWait();
  m_running = false;
  m_lastError = message;
  m_status->setText("Training failed: " + message);
  updateButtons();
}

void TrainingPanel::redrawCurves() {
  m_lossPlot->setCurves({Curve{"loss", m_loss, QColor()}});
  m_accuracyPlot->setCurves({Curve{"accuracy", m_accuracy, QColor()}});
}

void TrainingPanel::updateButtons() {
  const bool running = isRunning();
  m_startButton->setEnabled(!running);
  m_pauseButton->setEnabled(running);
  m_pauseButton->setText(isPaused() ? "Resume" : "Pause");
  m_stopButton->setEnabled(running);
  m_saveButton->setEnabled(m_worker->hasTrainer());
}

}  // namespace atlas::ui
