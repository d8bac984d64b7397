// Ablation sweep panel (sweep_panel.h). The sweep runs on the CPU backend on a worker thread,
// independent of the interactive run (which may be on Vulkan): a sweep is many forwards, and
// the interactive view stays responsive while it goes.
#include "ui/tools/sweep_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
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
#include "ui/tools/sweep_figure.h"
#include "ui/tools/tool_state_json.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"
#include "ui/tools/tool_run.h"

namespace atlas::ui {

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
  const bool same = model == m_model && sameInputTokens(trace.get(), m_trace.get());
  m_model = std::move(model);
  m_trace = std::move(trace);
  if (!same) {
    ++m_generation;  // a sweep in flight is of the old input: its result is dropped
    if (m_cancelFlag) m_cancelFlag->store(true);
    if (m_result) setStatus("The input or model changed: press Sweep to ablate this one.");
    m_result.reset();
    m_gate.forget();
  }
  if (m_pending && m_trace && !isRunning() && token_ids(m_trace->source_tokens) == m_pendingTokens) {
    m_result = std::move(m_pending);
    m_pending.reset();
    setStatus("Restored from the workspace: " + sweepTitle(*m_result) + ".");
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

QJsonObject SweepPanel::saveState() const {
  QJsonObject o;
  o["unit"] = sweep_unit_name(static_cast<SweepUnit>(m_unit->currentData().toInt()));
  o["mode"] = ablation_mode_name(static_cast<AblationMode>(m_mode->currentData().toInt()));
  o["metric"] = sweep_metric_name(static_cast<SweepMetric>(m_metric->currentData().toInt()));
  o["token_a"] = m_tokenA->text();
  o["token_b"] = m_tokenB->text();
  const std::optional<SweepResult>& r = m_result ? m_result : m_pending;
  if (r && (!m_result || m_trace)) {
    QJsonObject g;
    g["unit"] = sweep_unit_name(r->spec.unit);
    g["mode"] = ablation_mode_name(r->spec.mode);
    g["metric"] = sweep_metric_name(r->spec.metric);
    g["token_a"] = r->spec.token_a;
    g["token_b"] = r->spec.token_b;
    g["layers"] = qint64(r->layers);
    g["heads"] = qint64(r->heads);
    g["clean"] = r->clean;
    g["position"] = qint64(r->position);
    g["complete"] = r->complete;
    g["values"] = doublesToJson(r->values);
    QJsonArray labels, ids;
    for (const std::string& l : r->row_labels) labels.append(QString::fromStdString(l));
    for (int32_t id : m_result ? token_ids(m_trace->source_tokens) : m_pendingTokens) ids.append(id);
    g["row_labels"] = labels;
    g["clean_tokens"] = ids;
    o["result"] = g;
  }
  return o;
}

void SweepPanel::restoreState(const QJsonObject& o) {
  try {
    for (const char* key : {"unit", "mode", "metric", "token_a", "token_b"})
      if (o.contains(key) && !o[key].isString()) throw AtlasError(std::string("\"") + key + "\" must be a string");
    const auto text = [&](const QJsonObject& from, const char* key, const char* fallback) {
      return from.contains(key) ? from[key].toString().toStdString() : std::string(fallback);
    };
    setChoice(parse_sweep_unit(text(o, "unit", "heads"), "unit"), parse_ablation_mode(text(o, "mode", "zero"), "mode"),
              parse_sweep_metric(text(o, "metric", "kl"), "metric"), o["token_a"].toString(), o["token_b"].toString());
    m_pending.reset();
    if (!o.contains("result")) return;
    if (!o["result"].isObject()) throw AtlasError("\"result\" must be an object");
    const QJsonObject g = o["result"].toObject();
    SweepResult r;
    r.spec.unit = parse_sweep_unit(text(g, "unit", ""), "result.unit");
    r.spec.mode = parse_ablation_mode(text(g, "mode", ""), "result.mode");
    r.spec.metric = parse_sweep_metric(text(g, "metric", ""), "result.metric");
    r.spec.token_a = g["token_a"].toInt(-1);
    r.spec.token_b = g["token_b"].toInt(-1);
    r.layers = g["layers"].toInteger();
    r.heads = g["heads"].toInteger();
    if (r.layers < 1 || r.heads < 1 || r.layers > (1 << 12) || r.heads > (1 << 12))
      throw AtlasError("\"layers\" and \"heads\" must be positive sizes");
    r.clean = g["clean"].toDouble();
    r.position = g["position"].toInteger(-1);
    r.complete = g["complete"].toBool(true);
    r.values = doublesFromJson(g["values"], "values");
    if (r.values.size() != size_t(r.layers * r.heads))
      throw AtlasError("\"values\" must hold layers x heads = " + std::to_string(r.layers * r.heads) + " values");
    for (const QJsonValue& v : g["row_labels"].toArray()) r.row_labels.push_back(v.toString().toStdString());
    if (r.row_labels.size() != size_t(r.layers)) throw AtlasError("\"row_labels\" must hold one label per layer");
    std::vector<int32_t> ids;
    for (const QJsonValue& v : g["clean_tokens"].toArray()) ids.push_back(v.toInt());
    if (ids.empty()) throw AtlasError("\"clean_tokens\" must list the input's token ids");
    m_pending = std::move(r);
    m_pendingTokens = std::move(ids);
    m_result.reset();
    setRun(m_model, m_trace);  // shown at once when the run on screen has these tokens
  } catch (const AtlasError& e) {
    setStatus(QString("The workspace's ablation sweep was not restored: %1").arg(e.what()));
  }
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
  const int64_t cells = ablation_layer_count(m_model->config()) * (s.unit == SweepUnit::Heads ? m_model->config().n_heads : 1);
  const int64_t forwards = cells + 1;  // and the clean run
  const bool confirmed = m_gate.takeConfirmation();
  if (m_gate.isLong(forwards) && !confirmed) {
    m_gate.confirmed = true;
    setStatus(estimateText(forwards, m_gate.forwardSeconds) + ". Press Sweep again to start.");
    emit sweepFinished();
    return false;
  }
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_runningGeneration = m_generation;
  m_progress->setRange(0, static_cast<int>(forwards));
  m_progress->setValue(0);
  setStatus(m_gate.forwardSeconds >= 0 ? "Ablating: " + estimateText(forwards, m_gate.forwardSeconds) + "\u2026"
                                       : QString("Measuring one forward to estimate %1 forwards\u2026").arg(forwards));
  QPointer<SweepPanel> self(this);
  const quint64 generation = m_generation;
  m_watcher.setFuture(QtConcurrent::run([model = m_model, source = m_trace->source_tokens,
                                         target = m_trace->target_tokens, s, cancel = m_cancelFlag, self,
                                         generation, known = m_gate.forwardSeconds, limit = m_gate.limitSeconds,
                                         confirmed, forwards]() {
    Outcome out;
    RunOptions o;
    o.cancel = cancel.get();
    try {
      if (known < 0) {  // the estimate
        out.forwardSeconds = timeOneForward(*model, source, target, o);
        if (out.forwardSeconds * double(forwards) > limit && !confirmed) {
          out.waitingForConfirm = true;
          return out;
        }
      }
    } catch (const Cancelled&) {
      out.cancelled = true;
      return out;
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
      return out;
    }
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
  if (m_runningGeneration == m_generation && out.forwardSeconds >= 0) m_gate.forwardSeconds = out.forwardSeconds;
  if (m_runningGeneration != m_generation) {
    setStatus("The input or model changed during the sweep: press Sweep to ablate this one.");
  } else if (out.waitingForConfirm) {
    m_gate.confirmed = true;
    setStatus(estimateText(m_progress->maximum(), m_gate.forwardSeconds) + ". Press Sweep again to start.");
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
