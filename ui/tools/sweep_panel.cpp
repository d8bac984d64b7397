// Ablation sweep panel (sweep_panel.h). The sweep runs on the CPU backend on a worker thread,
// independent of the interactive run (which may be on Vulkan): a sweep is many forwards, and
// the interactive view stays responsive while it goes.
#include "ui/tools/sweep_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMetaObject>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <chrono>

#include "core/analysis/ablation.h"
#include "core/tensor/error.h"
#include "ui/tools/duration_text.h"
#include "ui/tools/sweep_figure.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"

namespace atlas::ui {

namespace {

bool sameInput(const Trace* a, const Trace* b) {
  if (!a || !b) return a == b;
  return token_ids(a->source_tokens) == token_ids(b->source_tokens) &&
         token_ids(a->target_tokens) == token_ids(b->target_tokens);
}

}  // namespace

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("sweepPanel");
  m_unit = new QComboBox;
  m_unit->addItem("every head", static_cast<int>(SweepUnit::Heads));
  m_unit->addItem("every layer", static_cast<int>(SweepUnit::Layers));
  m_mode = new QComboBox;
  m_mode->addItem("zero", static_cast<int>(AblationMode::Zero));
  m_mode->addItem("mean over positions", static_cast<int>(AblationMode::Mean));
  m_metric = new QComboBox;
  for (SweepMetric m : {SweepMetric::KL, SweepMetric::Loss, SweepMetric::LogitDiff, SweepMetric::Cosine})
    m_metric->addItem(sweep_metric_name(m), static_cast<int>(m));
  m_metric->setToolTip("kl: mean KL(clean || ablated) of the output distributions; loss: next-token loss on the "
                       "text; logit-diff: logit[A] - logit[B] at the last position; cosine: final hidden states");
  m_tokenA = new QLineEdit;
  m_tokenA->setPlaceholderText("token A (text or #id)");
  m_tokenB = new QLineEdit;
  m_tokenB->setPlaceholderText("token B");
  m_start = new QPushButton("Sweep");
  m_start->setObjectName("sweepStart");
  m_cancel = new QPushButton("Cancel");
  m_cancel->setObjectName("sweepCancel");
  m_progress = new QProgressBar;
  m_progress->setTextVisible(true);
  m_status = new QLabel("Choose what to ablate and press Sweep: one forward per cell.");
  m_status->setWordWrap(true);

  auto* form = new QFormLayout;
  form->addRow("Ablate:", m_unit);
  form->addRow("Replace by:", m_mode);
  form->addRow("Metric:", m_metric);
  auto* tokens = new QHBoxLayout;
  tokens->addWidget(m_tokenA);
  tokens->addWidget(m_tokenB);
  form->addRow("Logit diff:", tokens);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_start);
  buttons->addWidget(m_cancel);
  buttons->addWidget(m_progress, 1);
  auto* controls = new QWidget;
  auto* cv = new QVBoxLayout(controls);
  cv->setContentsMargins(0, 0, 0, 0);
  cv->addLayout(form);
  cv->addLayout(buttons);
  cv->addWidget(m_status);

  auto plots = [this](const Trace&, const PanelContext&) {
    std::vector<PanelPlot> out;
    if (!m_result) return out;
    PanelPlot plot;
    plot.kind = PanelPlot::Kind::Matrix;
    plot.matrix = sweepHeatmap(*m_result);
    plot.mapping = sweepColorMapping(*m_result);
    plot.name = sweepEffectName(*m_result);
    plot.rowAxis = PlotAxis::Layer;
    plot.colAxis = m_result->spec.unit == SweepUnit::Heads ? PlotAxis::Head : PlotAxis::None;
    out.push_back(std::move(plot));
    return out;
  };
  m_plots = embedToolPlots(this, "sweep", "Ablation sweep", plots, controls);

  connect(m_plots, &VariantPanel::layerPicked, this, &SweepPanel::layerPicked);
  connect(m_plots, &VariantPanel::headPicked, this, &SweepPanel::headPicked);
  connect(m_start, &QPushButton::clicked, this, [this] { startSweep(); });
  connect(m_cancel, &QPushButton::clicked, this, &SweepPanel::cancelSweep);
  connect(m_metric, &QComboBox::currentIndexChanged, this, &SweepPanel::updateControls);
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &SweepPanel::onSweepDone);
  updateControls();
}

SweepPanel::~SweepPanel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_watcher.waitForFinished();
}

void SweepPanel::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  const bool same = model == m_model && sameInput(trace.get(), m_trace.get());
  m_model = std::move(model);
  m_trace = std::move(trace);
  if (!same) {
    ++m_generation;  // a sweep in flight is of the old input: its result is dropped
    if (m_cancelFlag) m_cancelFlag->store(true);
    if (m_result) setStatus("The input or model changed: press Sweep to ablate this one.");
    m_result.reset();
  }
  m_plots->setTrace(m_trace);
  updateControls();
}

void SweepPanel::setStyle(const HeatmapStyle& style, bool dark) { m_plots->setStyle(style, dark); }

SweepSpec SweepPanel::spec() const {
  if (!m_model) throw AtlasError("no model is loaded");
  SweepSpec s;
  s.unit = static_cast<SweepUnit>(m_unit->currentData().toInt());
  s.mode = static_cast<AblationMode>(m_mode->currentData().toInt());
  s.metric = static_cast<SweepMetric>(m_metric->currentData().toInt());
  if (s.metric == SweepMetric::LogitDiff) {
    s.token_a = single_token_id(*m_model, m_tokenA->text().toStdString(), "token A");
    s.token_b = single_token_id(*m_model, m_tokenB->text().toStdString(), "token B");
  }
  return s;
}

void SweepPanel::setChoice(SweepUnit unit, AblationMode mode, SweepMetric metric, const QString& tokenA,
                           const QString& tokenB) {
  m_unit->setCurrentIndex(m_unit->findData(static_cast<int>(unit)));
  m_mode->setCurrentIndex(m_mode->findData(static_cast<int>(mode)));
  m_metric->setCurrentIndex(m_metric->findData(static_cast<int>(metric)));
  m_tokenA->setText(tokenA);
  m_tokenB->setText(tokenB);
}

bool SweepPanel::startSweep() {
  if (isRunning()) return false;
  if (!m_model || !m_trace || m_trace->source_tokens.empty()) {
    setStatus("Run the model on some input first.");
    return false;
  }
  SweepSpec s;
  try {
    s = spec();
    check_sweep(*m_model, m_trace->source_tokens, m_trace->target_tokens, s);
  } catch (const std::exception& e) {
    setStatus(QString::fromStdString(e.what()));
    return false;
  }
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_runningGeneration = m_generation;
  const int64_t cells = ablation_layer_count(m_model->config()) * (s.unit == SweepUnit::Heads ? m_model->config().n_heads : 1);
  m_progress->setRange(0, static_cast<int>(cells + 1));
  m_progress->setValue(0);
  setStatus(QString("Ablating %1 cells, one forward each\u2026").arg(cells));
  QPointer<SweepPanel> self(this);
  const quint64 generation = m_generation;
  m_watcher.setFuture(QtConcurrent::run([model = m_model, source = m_trace->source_tokens,
                                         target = m_trace->target_tokens, s, cancel = m_cancelFlag, self,
                                         generation]() {
    Outcome out;
    RunOptions o;
    o.cancel = cancel.get();
    SweepResult partial;
    const auto started = std::chrono::steady_clock::now();
    try {
      out.result = ablation_sweep(*model, source, target, s, o, [self, generation, started](int64_t done, int64_t total) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(self.data(), [self, done, total, elapsed, generation] {
          if (!self || self->m_generation != generation) return;
          self->m_progress->setValue(static_cast<int>(done));
          self->setStatus(QString("Ablating: %1 of %2 forwards, about %3 left…")
                              .arg(done)
                              .arg(total)
                              .arg(durationText(elapsed / double(done) * double(total - done))));
        }, Qt::QueuedConnection);
      }, &partial);
    } catch (const Cancelled&) {
      out.cancelled = true;
      if (!partial.values.empty()) out.result = std::move(partial);  // the finished cells
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  }));
  updateControls();
  return true;
}

void SweepPanel::cancelSweep() {
  if (m_cancelFlag) m_cancelFlag->store(true);
}

bool SweepPanel::isRunning() const { return m_watcher.isRunning(); }

QString SweepPanel::status() const { return m_status->text(); }

void SweepPanel::setStatus(const QString& text) { m_status->setText(text); }

void SweepPanel::onSweepDone() {
  Outcome out = m_watcher.result();
  if (m_runningGeneration != m_generation) {
    setStatus("The input or model changed during the sweep: press Sweep to ablate this one.");
  } else if (out.cancelled && out.result) {
    m_result = std::move(out.result);
    setStatus(sweepTitle(*m_result) + ": the finished cells are shown, the others hatched. Press Sweep to run all.");
    m_plots->setTrace(m_trace);
  } else if (out.cancelled) {
    setStatus("Sweep cancelled.");
  } else if (!out.error.isEmpty()) {
    setStatus(out.error);
  } else if (out.result) {
    m_result = std::move(out.result);
    setStatus(sweepTitle(*m_result) + ". Click a cell to select its layer and head.");
    m_plots->setTrace(m_trace);  // rebuild the plot from the new result
  }
  updateControls();
  emit sweepFinished();
}

void SweepPanel::updateControls() {
  const bool running = isRunning();
  const bool logitDiff = static_cast<SweepMetric>(m_metric->currentData().toInt()) == SweepMetric::LogitDiff;
  m_tokenA->setEnabled(logitDiff);
  m_tokenB->setEnabled(logitDiff);
  m_start->setEnabled(!running && m_model);
  m_cancel->setEnabled(running);
  m_unit->setEnabled(!running);
  m_mode->setEnabled(!running);
  m_metric->setEnabled(!running);
  if (!running && m_progress->value() < 0) m_progress->setRange(0, 1);
}

}  // namespace atlas::ui
