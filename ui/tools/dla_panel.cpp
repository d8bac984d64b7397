// Logit attribution panel (dla_panel.h). One forward on the CPU backend on a worker thread.
#include "ui/tools/dla_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "core/analysis/ablation_sweep.h"
#include "core/tensor/error.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"
#include "ui/tools/dla_figure.h"
#include "ui/tools/tool_state_json.h"
#include "ui/tools/tool_run.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

namespace {

// The result's arrays by name, for the workspace (one place lists them for save and restore).
std::vector<std::pair<const char*, std::vector<double>*>> dlaArrays(LogitAttribution& a) {
  return {{"embed_tokens", &a.embed_tokens}, {"embed_positions", &a.embed_positions}, {"head", &a.head},
          {"attn_bias", &a.attn_bias},       {"mlp", &a.mlp},                         {"norm_bias", &a.norm_bias},
          {"output_bias", &a.output_bias},   {"total", &a.total},                     {"logit", &a.logit},
          {"norm_scale", &a.norm_scale}};
}

}  // namespace

DlaPanel::DlaPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("dlaPanel");
  m_token = new QLineEdit;
  m_token->setPlaceholderText("target token (text or #id; empty: the top token)");
  m_against = new QLineEdit;
  m_against->setPlaceholderText("contrast token (optional: a logit difference)");
  m_position = new QSpinBox;
  m_position->setRange(-1, 0);
  m_position->setSpecialValueText("last");
  m_position->setValue(-1);
  m_start = new QPushButton("Attribute");
  m_start->setObjectName("dlaStart");
  m_status = new QLabel("Direct logit attribution: what each head, MLP and embedding writes into one logit, "
                        "through the final norm with its scale frozen.");
  m_status->setWordWrap(true);
  auto* form = new QFormLayout;
  auto* tokens = new QHBoxLayout;
  tokens->addWidget(m_token);
  tokens->addWidget(m_against);
  form->addRow("Logit of:", tokens);
  auto* row = new QHBoxLayout;
  row->addWidget(m_position);
  row->addWidget(m_start);
  row->addStretch(1);
  form->addRow("At position:", row);
  auto* controls = new QWidget;
  auto* cv = new QVBoxLayout(controls);
  cv->setContentsMargins(0, 0, 0, 0);
  cv->addLayout(form);
  cv->addWidget(m_status);

  auto plots = [this](const Trace&, const PanelContext&) {
    return m_result ? dlaPlots(*m_result, tokenText()) : std::vector<PanelPlot>{};
  };
  m_plots = embedToolPlots(this, "dla", "Logit attribution", plots, controls);
  connect(m_plots, &VariantPanel::layerPicked, this, &DlaPanel::layerPicked);
  connect(m_plots, &VariantPanel::headPicked, this, &DlaPanel::headPicked);
  connect(m_start, &QPushButton::clicked, this, [this] { startAttribution(); });
  connect(m_token, &QLineEdit::returnPressed, this, [this] { startAttribution(); });
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &DlaPanel::onDone);
  m_start->setEnabled(false);
}

DlaPanel::~DlaPanel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_watcher.waitForFinished();
}

void DlaPanel::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  const bool same = model == m_model && sameInputTokens(trace.get(), m_trace.get());
  m_model = std::move(model);
  m_trace = std::move(trace);
  const int L = m_trace ? int(m_trace->source_tokens.size()) : 0;
  m_position->setRange(-1, std::max(0, L - 1));
  if (L > 0 && m_waitingPosition != -2) {  // a restored position, once a run is on screen
    if (m_waitingPosition < L) m_position->setValue(m_waitingPosition);
    m_waitingPosition = -2;
  }
  if (!same) {
    ++m_generation;
    if (m_cancelFlag) m_cancelFlag->store(true);
    if (m_result) setStatus("The input or model changed: press Attribute to attribute this one.");
    m_result.reset();
  }
  if (m_pending && m_trace && !isRunning() && token_ids(m_trace->source_tokens) == m_pendingTokens) {
    m_result = std::move(m_pending);
    m_pending.reset();
    setStatus("Restored from the workspace: " + dlaTitle(*m_result, tokenText()) + ".");
  }
  m_plots->setTrace(m_trace);
  m_start->setEnabled(!isRunning() && m_model);
}

void DlaPanel::setStyle(const HeatmapStyle& style, bool dark) { m_plots->setStyle(style, dark); }

std::function<QString(int64_t)> DlaPanel::tokenText() const {
  if (!m_model) return {};
  return [model = m_model](int64_t id) { return vocabularyLabel(*model, id); };
}

DlaRequest DlaPanel::request() const {
  if (!m_model) throw AtlasError("no model is loaded");
  DlaRequest r;
  const int p = m_position->value();
  const int64_t L = m_trace ? int64_t(m_trace->source_tokens.size()) : 0;
  r.positions = {p < 0 ? L - 1 : p};
  if (!m_token->text().isEmpty()) r.token = single_token_id(*m_model, m_token->text().toStdString(), "the target token");
  if (!m_against->text().isEmpty()) {
    if (r.token < 0)
      throw AtlasError("a contrast token splits logit[target] - logit[contrast]: give the target token too");
    r.against = single_token_id(*m_model, m_against->text().toStdString(), "the contrast token");
  }
  return r;
}

void DlaPanel::setChoice(const QString& token, const QString& against, int position) {
  m_token->setText(token);
  m_against->setText(against);
  m_position->setValue(position);
  // Before a run as long (a workspace opened in a fresh window) the spin box cannot hold it yet.
  m_waitingPosition = m_position->value() == position ? -2 : position;
}

bool DlaPanel::startAttribution() {
  if (isRunning()) return false;
  if (!m_model || !m_trace || m_trace->source_tokens.empty()) {
    setStatus("Run the model on some input first.");
    return false;
  }
  DlaRequest req;
  try {
    const std::string refusal = logit_attribution_refusal(m_model->config());
    if (!refusal.empty()) throw AtlasError(refusal);
    req = request();
  } catch (const std::exception& e) {
    setStatus(QString::fromStdString(e.what()));
    emit attributionFinished();
    return false;
  }
  m_pending.reset();  // the user's own result replaces one still waiting from a workspace
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_runningGeneration = m_generation;
  setStatus("Attributing\u2026");
  m_watcher.setFuture(runTool<LogitAttribution>(
      m_cancelFlag, "Attribution cancelled.",
      [model = m_model, source = m_trace->source_tokens, req](const RunOptions& o) {
        return logit_attribution(*model, source, req, o);
      }));
  m_start->setEnabled(false);
  return true;
}

bool DlaPanel::isRunning() const { return m_watcher.isRunning(); }

QString DlaPanel::status() const { return m_status->text(); }

void DlaPanel::setStatus(const QString& text) { m_status->setText(text); }

void DlaPanel::onDone() {
  Outcome out = m_watcher.result();
  if (m_runningGeneration != m_generation) {
    setStatus("The input or model changed during the attribution: press Attribute to attribute this one.");
  } else if (!out.error.isEmpty()) {
    setStatus(out.error);
  } else if (out.result) {
    m_result = std::move(out.result);
    setStatus(dlaTitle(*m_result, tokenText()) + ". Click a head to select it.");
    m_plots->setTrace(m_trace);
  }
  m_start->setEnabled(m_model != nullptr);
  emit attributionFinished();
}

QJsonObject DlaPanel::saveState() const {
  QJsonObject o;
  o["token"] = m_token->text();
  o["against"] = m_against->text();
  o["position"] = m_waitingPosition != -2 ? m_waitingPosition : m_position->value();
  std::optional<LogitAttribution> r = m_result ? m_result : m_pending;
  if (r && (!m_result || m_trace)) {
    QJsonObject g;
    g["layers"] = qint64(r->layers);
    g["heads"] = qint64(r->heads);
    g["keys"] = qint64(r->keys);
    g["against"] = qint64(r->against);
    QJsonArray positions, tokens, ids;
    for (int64_t p : r->positions) positions.append(qint64(p));
    for (int64_t t : r->tokens) tokens.append(qint64(t));
    for (int32_t id : m_result ? token_ids(m_trace->source_tokens) : m_pendingTokens) ids.append(id);
    g["positions"] = positions;
    g["tokens"] = tokens;
    g["clean_tokens"] = ids;
    for (const auto& [key, values] : dlaArrays(*r)) g[key] = doublesToJson(*values);
    o["result"] = g;
  }
  return o;
}

void DlaPanel::restoreState(const QJsonObject& o) {
  try {
    for (const char* key : {"token", "against"})
      if (o.contains(key) && !o[key].isString()) throw AtlasError(std::string("\"") + key + "\" must be a string");
    setChoice(o["token"].toString(), o["against"].toString(), o["position"].toInt(-1));
    m_pending.reset();
    if (o.contains("result")) {
      const QJsonObject g = o["result"].toObject();
      LogitAttribution a;
      a.layers = g["layers"].toInteger();
      a.heads = g["heads"].toInteger();
      a.keys = g["keys"].toInteger();
      a.against = g["against"].toInteger(-1);
      if (a.layers < 1 || a.heads < 1 || a.layers > (1 << 12) || a.heads > (1 << 12))
        throw AtlasError("\"layers\" and \"heads\" must be positive sizes");
      for (const QJsonValue& v : g["positions"].toArray()) a.positions.push_back(v.toInteger());
      for (const QJsonValue& v : g["tokens"].toArray()) a.tokens.push_back(v.toInteger());
      const size_t P = a.positions.size();
      if (P == 0 || a.tokens.size() != P) throw AtlasError("\"positions\" and \"tokens\" must be lists of one size");
      for (const auto& [key, values] : dlaArrays(a)) *values = doublesFromJson(g[key], key);
      const size_t perLayer = P * size_t(a.layers);
      for (const auto& [key, values] : dlaArrays(a)) {
        const std::string k = key;
        const size_t want = k == "head" ? perLayer * size_t(a.heads) : k == "attn_bias" || k == "mlp" ? perLayer : P;
        if (values->size() != want) throw AtlasError("\"" + k + "\" must hold " + std::to_string(want) + " values");
      }
      std::vector<int32_t> ids;
      for (const QJsonValue& v : g["clean_tokens"].toArray()) ids.push_back(v.toInt());
      m_pending = std::move(a);
      m_pendingTokens = std::move(ids);
      m_result.reset();
      setRun(m_model, m_trace);  // shown at once when the run on screen has these tokens
    }
  } catch (const AtlasError& e) {
    setStatus(QString("The workspace's logit attribution was not restored: %1").arg(e.what()));
  }
}

}  // namespace atlas::ui
