// Activation patching panel (patching_panel.h). Like the ablation sweep, the grid runs on the
// CPU backend on a worker thread, independent of the interactive run.
#include "ui/tools/patching_panel.h"

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
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <cmath>
#include <limits>

#include "core/analysis/ablation.h"
#include "core/analysis/ablation_sweep.h"
#include "core/tensor/error.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"
#include "ui/tools/compare_view.h"
#include "ui/tools/patching_figure.h"
#include "ui/tools/tool_state_json.h"
#include "ui/tools/tool_run.h"

namespace atlas::ui {

PatchingPanel::PatchingPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("patchingPanel");
  m_corrupted = new QLineEdit;
  m_corrupted->setObjectName("patchingCorrupted");
  m_corrupted->setPlaceholderText("corrupted text, same number of tokens as the input");
  m_site = new QComboBox;
  for (PatchSite s : {PatchSite::Resid, PatchSite::Attn, PatchSite::Mlp, PatchSite::Head, PatchSite::HeadPos,
                      PatchSite::Q, PatchSite::K, PatchSite::V, PatchSite::Pattern})
    m_site->addItem(patch_site_name(s), static_cast<int>(s));
  m_site->setToolTip("resid: the residual stream before each layer x position; attn / mlp: each sub-layer's "
                     "output x position; head: each head's output (all positions); head-pos: each head x position; "
                     "q / k / v / pattern: each head's queries, keys, values or attention pattern (all positions)");
  m_direction = new QComboBox;
  m_direction->addItem("denoise (clean into corrupted)", static_cast<int>(PatchDirection::Denoise));
  m_direction->addItem("noise (corrupted into clean)", static_cast<int>(PatchDirection::Noise));
  m_metric = new QComboBox;
  for (PatchMetric m : {PatchMetric::LogitDiff, PatchMetric::Prob, PatchMetric::KL, PatchMetric::Loss})
    m_metric->addItem(patch_metric_name(m), static_cast<int>(m));
  m_tokenA = new QLineEdit;
  m_tokenA->setPlaceholderText("token A (text or #id)");
  m_tokenB = new QLineEdit;
  m_tokenB->setPlaceholderText("token B");
  m_position = new QSpinBox;
  m_position->setRange(-1, 0);
  m_position->setSpecialValueText("last");
  m_position->setValue(-1);
  m_slice = new QSpinBox;
  m_slice->setRange(0, 0);
  m_slice->setToolTip("head-pos grids: the patched position whose layers x heads slice is shown");
  m_start = new QPushButton("Run");
  m_start->setObjectName("patchingStart");
  m_cancel = new QPushButton("Cancel");
  m_cancel->setObjectName("patchingCancel");
  m_progress = new QProgressBar;
  m_progress->setTextVisible(true);
  m_status = new QLabel("Type a corrupted text of the same token count and press Run: one forward per cell.");
  m_status->setWordWrap(true);

  auto* form = new QFormLayout;
  form->addRow("Corrupted:", m_corrupted);
  auto* row = new QHBoxLayout;
  row->addWidget(m_site);
  row->addWidget(m_direction);
  row->addWidget(m_metric);
  form->addRow("Site:", row);
  auto* tokens = new QHBoxLayout;
  tokens->addWidget(m_tokenA);
  tokens->addWidget(m_tokenB);
  tokens->addWidget(new QLabel("at"));
  tokens->addWidget(m_position);
  tokens->addWidget(new QLabel("slice"));
  tokens->addWidget(m_slice);
  form->addRow("Tokens:", tokens);
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
    out.push_back(patchingGridPlot(*m_result, tokenLabels(), m_slice->value()));
    if (m_trace && m_corruptedTrace) {
      try {
        PanelPlot side;
        side.kind = PanelPlot::Kind::Matrix;
        side.matrix = compareSideBySide(*m_trace, *m_corruptedTrace, m_sel);
        side.matrix.title.replace("A | B", "clean | corrupted");  // A is the clean run, B the corrupted
        side.name = "clean | corrupted maps of the selected head";
        side.rowAxis = PlotAxis::Token;
        out.push_back(std::move(side));
      } catch (const AtlasError&) {
        // A selection of another family (a model without this map): the grid alone.
      }
    }
    return out;
  };
  m_plots = embedToolPlots(this, "patching", "Activation patching", plots, controls);

  connect(m_plots, &VariantPanel::layerPicked, this, &PatchingPanel::layerPicked);
  connect(m_plots, &VariantPanel::headPicked, this, &PatchingPanel::headPicked);
  connect(m_plots, &VariantPanel::tokenPicked, this, &PatchingPanel::tokenPicked);
  connect(m_start, &QPushButton::clicked, this, [this] { startPatching(); });
  connect(m_cancel, &QPushButton::clicked, this, &PatchingPanel::cancelPatching);
  connect(m_corrupted, &QLineEdit::returnPressed, this, [this] { startPatching(); });
  connect(m_metric, &QComboBox::currentIndexChanged, this, &PatchingPanel::updateControls);
  connect(m_slice, &QSpinBox::valueChanged, this, [this] {
    if (m_result && m_result->spec.site == PatchSite::HeadPos) m_plots->setTrace(m_trace);
  });
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &PatchingPanel::onDone);
  updateControls();
}

PatchingPanel::~PatchingPanel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_watcher.waitForFinished();
}

void PatchingPanel::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  const bool same = model == m_model && sameInputTokens(trace.get(), m_trace.get());
  m_model = std::move(model);
  m_trace = std::move(trace);
  const int L = m_trace ? int(m_trace->source_tokens.size()) : 0;
  m_position->setRange(-1, std::max(0, L - 1));
  m_slice->setRange(0, std::max(0, L - 1));
  if (L > 0 && m_waitingPosition != -2) {  // a restored position, once a run is on screen
    if (m_waitingPosition < L) m_position->setValue(m_waitingPosition);
    m_waitingPosition = -2;
  }
  if (L > 0 && m_waitingSlice >= 0) {
    if (m_waitingSlice < L) m_slice->setValue(m_waitingSlice);
    m_waitingSlice = -1;
  }
  if (!same) {
    ++m_generation;  // a grid in flight is of the old input: its result is dropped
    if (m_cancelFlag) m_cancelFlag->store(true);
    if (m_result) setStatus("The input or model changed: press Run to patch this one.");
    m_result.reset();
    m_corruptedTrace.reset();
    m_gate.forget();
  }
  adoptPending();
  m_plots->setTrace(m_trace);
  updateControls();
}

void PatchingPanel::adoptPending() {
  if (!m_pending || !m_trace || isRunning() || token_ids(m_trace->source_tokens) != m_pendingTokens) return;
  m_result = std::move(m_pending);
  m_pending.reset();
  m_corruptedTrace.reset();
  setStatus("Restored from the workspace: " + patchingTitle(*m_result) + ".");
  if (!m_model || m_resultCorrupted.isEmpty()) return;
  // The clean | corrupted maps need the corrupted run's trace: one forward, on the worker.
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_runningGeneration = m_generation;
  m_watcher.setFuture(QtConcurrent::run([model = m_model, text = m_resultCorrupted.toStdString(), cancel = m_cancelFlag] {
    Outcome out;
    out.mapsOnly = true;
    RunOptions traced;
    traced.cancel = cancel.get();
    try {
      out.corruptedTrace = std::make_shared<const Trace>(model->forward(model->tokenize(text, "").first, {}, traced).trace);
    } catch (const std::exception&) {
      // Without the maps the grid stays on screen alone.
    }
    return out;
  }));
}

void PatchingPanel::setSelection(const AttentionSelection& sel) {
  m_sel = sel;
  if (m_corruptedTrace) m_plots->setTrace(m_trace);  // the side-by-side maps follow the head
}

void PatchingPanel::setStyle(const HeatmapStyle& style, bool dark) { m_plots->setStyle(style, dark); }

PatchSpec PatchingPanel::spec() const {
  if (!m_model) throw AtlasError("no model is loaded");
  PatchSpec s;
  s.site = static_cast<PatchSite>(m_site->currentData().toInt());
  s.direction = static_cast<PatchDirection>(m_direction->currentData().toInt());
  s.metric = static_cast<PatchMetric>(m_metric->currentData().toInt());
  s.position = m_position->value();
  if (s.metric != PatchMetric::KL) s.token_a = single_token_id(*m_model, m_tokenA->text().toStdString(), "token A");
  if (s.metric == PatchMetric::LogitDiff)
    s.token_b = single_token_id(*m_model, m_tokenB->text().toStdString(), "token B");
  return s;
}

void PatchingPanel::setChoice(PatchSite site, PatchDirection direction, PatchMetric metric, const QString& tokenA,
                              const QString& tokenB, int position) {
  m_site->setCurrentIndex(m_site->findData(static_cast<int>(site)));
  m_direction->setCurrentIndex(m_direction->findData(static_cast<int>(direction)));
  m_metric->setCurrentIndex(m_metric->findData(static_cast<int>(metric)));
  m_tokenA->setText(tokenA);
  m_tokenB->setText(tokenB);
  m_position->setValue(position);
  // Before a run as long (a workspace opened in a fresh window) the spin box cannot hold it yet.
  m_waitingPosition = m_position->value() == position ? -2 : position;
}

void PatchingPanel::setCorruptedText(const QString& text) { m_corrupted->setText(text); }
QString PatchingPanel::corruptedText() const { return m_corrupted->text(); }
void PatchingPanel::setSlice(int position) {
  m_slice->setValue(position);
  m_waitingSlice = m_slice->value() == position ? -1 : position;
}

int64_t PatchingPanel::cellCount(const PatchSpec& s) const {
  const ModelConfig& c = m_model->config();
  const int64_t layers = ablation_layer_count(c), L = int64_t(m_trace->source_tokens.size());
  switch (s.site) {
    case PatchSite::Head:
    case PatchSite::Q:
    case PatchSite::K:
    case PatchSite::V:
    case PatchSite::Pattern: return layers * c.n_heads;
    case PatchSite::HeadPos: return layers * c.n_heads * L;
    default: return layers * L;
  }
}

QStringList PatchingPanel::tokenLabels() const {
  QStringList labels;
  if (m_trace)
    for (const TokenInfo& t : m_trace->source_tokens) labels << QString::fromStdString(t.label);
  return labels;
}

bool PatchingPanel::startPatching() {
  if (isRunning()) return false;
  if (!m_model || !m_trace || m_trace->source_tokens.empty()) {
    setStatus("Run the model on some input first.");
    return false;
  }
  PatchSpec s;
  std::vector<TokenInfo> corrupted;
  try {
    s = spec();
    corrupted = m_model->tokenize(m_corrupted->text().toStdString(), "").first;
    check_patching(*m_model, m_trace->source_tokens, corrupted, s);
  } catch (const std::exception& e) {
    setStatus(QString::fromStdString(e.what()));
    emit patchingFinished();
    return false;
  }
  const int64_t forwards = cellCount(s) + 2;
  const bool confirmed = m_gate.takeConfirmation();
  if (m_gate.isLong(forwards) && !confirmed) {
    m_gate.confirmed = true;
    setStatus(estimateText(forwards, m_gate.forwardSeconds) + ". Press Run again to start.");
    emit patchingFinished();
    return false;
  }
  m_pending.reset();  // a grid of the user's own replaces one still waiting from a workspace
  m_runningCorrupted = m_corrupted->text();
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_runningGeneration = m_generation;
  m_progress->setRange(0, static_cast<int>(forwards));
  m_progress->setValue(0);
  setStatus(m_gate.forwardSeconds >= 0 ? "Patching: " + estimateText(forwards, m_gate.forwardSeconds) + "\u2026"
                                  : QString("Measuring one forward to estimate %1 forwards\u2026").arg(forwards));
  QPointer<PatchingPanel> self(this);
  const quint64 generation = m_generation;
  m_watcher.setFuture(QtConcurrent::run([model = m_model, clean = m_trace->source_tokens, corrupted, s,
                                         cancel = m_cancelFlag, self, generation, known = m_gate.forwardSeconds,
                                         limit = m_gate.limitSeconds, confirmed, forwards,
                                         cellLimit = m_cellLimit]() {
    Outcome out;
    RunOptions o;
    o.cancel = cancel.get();
    o.trace = TraceOptions::none();
    try {
      if (known < 0) {  // the estimate: one untraced forward of the clean input, timed
        out.forwardSeconds = timeOneForward(*model, clean, {}, o);
        if (out.forwardSeconds * double(forwards) > limit && !confirmed) {
          out.waitingForConfirm = true;
          return out;
        }
      }
      PatchResult partial;
      try {
        out.result = activation_patching(*model, clean, corrupted, s, o, [self, generation, cancel, cellLimit](int64_t done, int64_t total) {
          if (cellLimit > 0 && done >= 2 + cellLimit && done < total) cancel->store(true);  // the grid stops before the next cell
          QMetaObject::invokeMethod(self.data(), [self, done, generation] {
            if (self && self->m_generation == generation) self->m_progress->setValue(static_cast<int>(done));
          }, Qt::QueuedConnection);
        }, &partial);
      } catch (const Cancelled&) {
        out.cancelled = true;
        if (!partial.raw.empty()) out.result = std::move(partial);
        return out;
      }
      RunOptions traced;  // the corrupted run's maps, beside the clean run's
      traced.cancel = cancel.get();
      out.corruptedTrace = std::make_shared<const Trace>(model->forward(corrupted, {}, traced).trace);
    } catch (const Cancelled&) {
      out.cancelled = true;
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  }));
  updateControls();
  return true;
}

void PatchingPanel::cancelPatching() {
  if (m_cancelFlag) m_cancelFlag->store(true);
}

bool PatchingPanel::isRunning() const { return m_watcher.isRunning(); }

QString PatchingPanel::status() const { return m_status->text(); }

void PatchingPanel::setStatus(const QString& text) { m_status->setText(text); }

void PatchingPanel::onDone() {
  Outcome out = m_watcher.result();
  if (out.mapsOnly) {
    if (m_runningGeneration == m_generation && m_result) m_corruptedTrace = out.corruptedTrace;
    m_plots->setTrace(m_trace);
  } else if (m_runningGeneration != m_generation) {
    setStatus("The input or model changed during the run: press Run to patch this one.");
  } else {
    if (out.forwardSeconds >= 0) m_gate.forwardSeconds = out.forwardSeconds;
    const int64_t forwards = m_progress->maximum();
    if (out.waitingForConfirm) {
      m_gate.confirmed = true;
      setStatus(estimateText(forwards, m_gate.forwardSeconds) + ". Press Run again to start.");
    } else if (out.cancelled && out.result) {
      int64_t finished = 0;
      for (double v : out.result->raw) finished += std::isfinite(v) ? 1 : 0;
      m_result = std::move(out.result);
      m_corruptedTrace.reset();
      m_resultCorrupted = m_runningCorrupted;
      setStatus(QString("Cancelled: %1 of %2 cells finished (the others are masked).")
                    .arg(finished)
                    .arg(m_result->raw.size()));
    } else if (out.cancelled) {
      setStatus("Patching cancelled.");
    } else if (!out.error.isEmpty()) {
      setStatus(out.error);
    } else if (out.result) {
      m_result = std::move(out.result);
      m_corruptedTrace = out.corruptedTrace;
      m_resultCorrupted = m_runningCorrupted;
      setStatus(patchingTitle(*m_result) + ". Click a cell to select its layer and head.");
    }
    m_plots->setTrace(m_trace);  // rebuild the plots from the new result
  }
  updateControls();
  emit patchingFinished();
}

void PatchingPanel::updateControls() {
  const bool running = isRunning();
  const auto metric = static_cast<PatchMetric>(m_metric->currentData().toInt());
  m_tokenA->setEnabled(metric != PatchMetric::KL);
  m_tokenB->setEnabled(metric == PatchMetric::LogitDiff);
  m_start->setEnabled(!running && m_model);
  m_cancel->setEnabled(running);
  for (QWidget* w : std::initializer_list<QWidget*>{m_site, m_direction, m_metric, m_corrupted, m_position})
    w->setEnabled(!running);
  m_slice->setEnabled(m_result && m_result->spec.site == PatchSite::HeadPos);
}

QJsonObject PatchingPanel::saveState() const {
  QJsonObject o;
  o["site"] = patch_site_name(static_cast<PatchSite>(m_site->currentData().toInt()));
  o["direction"] = patch_direction_name(static_cast<PatchDirection>(m_direction->currentData().toInt()));
  o["metric"] = patch_metric_name(static_cast<PatchMetric>(m_metric->currentData().toInt()));
  o["corrupted"] = m_corrupted->text();
  o["token_a"] = m_tokenA->text();
  o["token_b"] = m_tokenB->text();
  o["position"] = m_waitingPosition != -2 ? m_waitingPosition : m_position->value();
  o["slice"] = m_waitingSlice >= 0 ? m_waitingSlice : m_slice->value();
  const std::optional<PatchResult>& r = m_result ? m_result : m_pending;
  if (r && (m_result ? m_trace != nullptr : true)) {
    QJsonObject g;
    g["site"] = patch_site_name(r->spec.site);
    g["direction"] = patch_direction_name(r->spec.direction);
    g["metric"] = patch_metric_name(r->spec.metric);
    g["token_a"] = r->spec.token_a;
    g["token_b"] = r->spec.token_b;
    g["position"] = qint64(r->position);
    QJsonArray shape, ids;
    for (int64_t s : r->shape) shape.append(qint64(s));
    for (int32_t id : m_result ? token_ids(m_trace->source_tokens) : m_pendingTokens) ids.append(id);
    g["shape"] = shape;
    g["clean_tokens"] = ids;
    g["corrupted_text"] = m_resultCorrupted;
    g["raw"] = doublesToJson(r->raw);
    g["normalised"] = doublesToJson(r->normalised);
    g["clean"] = r->clean;
    g["corrupted"] = r->corrupted;
    g["runs"] = qint64(r->runs);
    g["complete"] = r->complete;
    o["result"] = g;
  }
  return o;
}

void PatchingPanel::restoreState(const QJsonObject& o) {
  try {
    const auto text = [&o](const char* key) {
      if (o.contains(key) && !o[key].isString()) throw AtlasError(std::string("\"") + key + "\" must be a string");
      return o[key].toString();
    };
    const PatchSite site = parse_patch_site(text("site").isEmpty() ? "resid" : text("site").toStdString(), "site");
    const PatchDirection dir =
        parse_patch_direction(text("direction").isEmpty() ? "denoise" : text("direction").toStdString(), "direction");
    const PatchMetric metric =
        parse_patch_metric(text("metric").isEmpty() ? "logit-diff" : text("metric").toStdString(), "metric");
    setCorruptedText(text("corrupted"));
    setChoice(site, dir, metric, text("token_a"), text("token_b"), o["position"].toInt(-1));
    setSlice(o["slice"].toInt(0));
    m_pending.reset();
    if (o.contains("result")) {
      const QJsonObject g = o["result"].toObject();
      PatchResult r;
      r.spec.site = parse_patch_site(g["site"].toString().toStdString(), "result.site");
      r.spec.direction = parse_patch_direction(g["direction"].toString().toStdString(), "result.direction");
      r.spec.metric = parse_patch_metric(g["metric"].toString().toStdString(), "result.metric");
      r.spec.token_a = g["token_a"].toInt(-1);
      r.spec.token_b = g["token_b"].toInt(-1);
      r.position = g["position"].toInteger();
      r.spec.position = r.position;
      int64_t cells = 1;
      for (const QJsonValue& s : g["shape"].toArray()) {
        if (!s.isDouble() || s.toInteger() < 1 || s.toInteger() > (1 << 20)) throw AtlasError("\"shape\" must list positive sizes");
        r.shape.push_back(s.toInteger());
        cells *= r.shape.back();
        if (cells > (1 << 24)) throw AtlasError("\"shape\" is too large");
      }
      if (r.shape.size() != (r.spec.site == PatchSite::HeadPos ? 3u : 2u))
        throw AtlasError("\"shape\" does not fit the site " + std::string(patch_site_name(r.spec.site)));
      r.raw = doublesFromJson(g["raw"], "raw");
      r.normalised = doublesFromJson(g["normalised"], "normalised");
      if (int64_t(r.raw.size()) != cells || int64_t(r.normalised.size()) != cells)
        throw AtlasError("\"raw\" and \"normalised\" must hold one value per cell of \"shape\"");
      r.clean = g["clean"].toDouble();
      r.corrupted = g["corrupted"].toDouble();
      r.runs = g["runs"].toInteger();
      r.complete = g["complete"].toBool(true);
      std::vector<int32_t> ids;
      for (const QJsonValue& v : g["clean_tokens"].toArray()) ids.push_back(v.toInt());
      m_pending = std::move(r);
      m_pendingTokens = std::move(ids);
      m_resultCorrupted = g["corrupted_text"].toString();
      // A restored result replaces the one on screen when its tokens are the run's.
      m_result.reset();
      adoptPending();
      m_plots->setTrace(m_trace);
    }
  } catch (const AtlasError& e) {
    setStatus(QString("The workspace's patching state was not restored: %1").arg(e.what()));
  }
  updateControls();
}

}  // namespace atlas::ui
