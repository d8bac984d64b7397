// QK decomposition panel (qk_decomposition_panel.h). One forward with hooks on the CPU backend on
// a worker thread, started whenever the panel is visible and its result does not answer the
// selection; a newer selection cancels the run on its way and starts its own when it ends.
#include "ui/tools/qk_decomposition_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "core/tensor/error.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"
#include "ui/tools/qk_decomposition_figure.h"
#include "ui/tools/tool_run.h"
#include "ui/tools/tool_state_json.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

namespace {

bool sameQkRequest(const QkRequest& a, const QkRequest& b) {
  return a.layer == b.layer && a.head == b.head && a.query == b.query && a.key == b.key && a.value == b.value;
}

QJsonArray qkNamesToJson(const std::vector<std::string>& names) {
  QJsonArray out;
  for (const std::string& n : names) out.append(QString::fromStdString(n));
  return out;
}

std::vector<std::string> qkNamesFromJson(const QJsonValue& v, const char* key) {
  if (!v.isArray()) throw AtlasError(std::string("\"") + key + "\" must be a list of names");
  std::vector<std::string> out;
  for (const QJsonValue& n : v.toArray()) {
    if (!n.isString()) throw AtlasError(std::string("\"") + key + "\" must be a list of names");
    out.push_back(n.toString().toStdString());
  }
  if (out.size() > 100000) throw AtlasError(std::string("\"") + key + "\" is too long");
  return out;
}

}  // namespace

QkDecompositionPanel::QkDecompositionPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("qkDecompositionPanel");
  m_query = new QSpinBox;
  m_query->setObjectName("qkQuery");
  m_key = new QSpinBox;
  m_key->setObjectName("qkKey");
  for (QSpinBox* s : {m_query, m_key}) {
    s->setRange(0, 0);
    s->setEnabled(false);
  }
  m_head_label = new QLabel;
  m_status = new QLabel("Why this head attends here: the selected head's score from a query to a key, split into "
                        "what every earlier component contributes on each side. Click a cell of the heatmap.");
  m_status->setWordWrap(true);
  auto* cell = new QHBoxLayout;
  cell->addWidget(m_head_label);
  cell->addWidget(new QLabel("query"));
  cell->addWidget(m_query);
  cell->addWidget(new QLabel("\u2192 key"));
  cell->addWidget(m_key);
  cell->addStretch(1);
  auto* form = new QFormLayout;
  form->addRow("Split the score of:", cell);
  auto* controls = new QWidget;
  auto* cv = new QVBoxLayout(controls);
  cv->setContentsMargins(0, 0, 0, 0);
  cv->addLayout(form);
  cv->addWidget(m_status);

  auto plots = [this](const Trace&, const PanelContext&) {
    return m_result ? qkDecompositionPlots(*m_result, tokenLabels()) : std::vector<PanelPlot>{};
  };
  m_plots = embedToolPlots(this, "qkDecomposition", "QK decomposition", plots, controls);
  auto edited = [this] {
    if (m_settingUp) return;
    m_cellChosen = true;
    changed();
  };
  connect(m_query, &QSpinBox::valueChanged, this, edited);
  connect(m_key, &QSpinBox::valueChanged, this, edited);
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &QkDecompositionPanel::onDone);
  setSelection(AttentionSelection{});
}

QkDecompositionPanel::~QkDecompositionPanel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_watcher.waitForFinished();
}

QStringList QkDecompositionPanel::tokenLabels() const {
  QStringList out;
  if (m_trace)
    for (const TokenInfo& t : m_trace->source_tokens) out << displayLabel(t.label);
  return out;
}

void QkDecompositionPanel::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  const bool same = model == m_model && sameInputTokens(trace.get(), m_trace.get());
  m_model = std::move(model);
  m_trace = std::move(trace);
  const int L = m_trace ? int(m_trace->source_tokens.size()) : 0;
  {
    m_settingUp = true;
    const bool fresh = !m_cellChosen;
    for (QSpinBox* s : {m_query, m_key}) {
      if (L > 0) s->setRange(0, L - 1);  // no run: a restored cell waits for one
      s->setEnabled(L > 0);
    }
    if (fresh && L > 0) {  // until a cell is chosen: the last query, to the first key
      m_query->setValue(L - 1);
      m_key->setValue(0);
    }
    m_settingUp = false;
  }
  if (!same) {
    ++m_generation;
    if (m_cancelFlag) m_cancelFlag->store(true);
    m_result.reset();
    m_failed.reset();
  }
  if (m_pending && m_trace && !isRunning() && token_ids(m_trace->source_tokens) == m_pendingTokens) {
    m_result = std::move(m_pending);
    m_pending.reset();
    setStatus("Restored from the workspace: " + qkDecompositionTitle(*m_result, tokenLabels()) + ".");
  }
  m_plots->setTrace(m_trace);
  scheduleRefresh();
}

void QkDecompositionPanel::setSelection(const AttentionSelection& selection) {
  const bool moved = selection.layer != m_layer || selection.head != m_head;
  m_layer = selection.layer;
  m_head = selection.head;
  m_head_label->setText(m_head >= 0 ? QString("layer %1 head %2,").arg(m_layer).arg(m_head)
                                    : QString("layer %1 %2 (pick one head),").arg(m_layer).arg(headName(m_head)));
  if (moved) changed();
}

void QkDecompositionPanel::setCell(int query, int key) {
  if (query == m_followedQuery && key == m_followedKey) return;  // keeps a query or key typed since
  m_followedQuery = query;
  m_followedKey = key;
  m_settingUp = true;
  if (query >= 0) m_query->setValue(query);
  if (key >= 0) m_key->setValue(key);
  m_settingUp = false;
  if (query >= 0 || key >= 0) m_cellChosen = true;
  changed();
}

void QkDecompositionPanel::setStyle(const HeatmapStyle& style, bool dark) { m_plots->setStyle(style, dark); }

QkRequest QkDecompositionPanel::request() const {
  if (!m_model) throw AtlasError("no model is loaded");
  if (const std::string why = qk_decomposition_refusal(m_model->config()); !why.empty())
    throw AtlasError("This model's scores cannot be split: " + why);
  if (m_head < 0)
    throw AtlasError("The selection is " + headName(m_head).toStdString() +
                     ", not one head: pick one head to split its score.");
  QkRequest r;
  r.layer = m_layer;
  r.head = m_head;
  r.query = m_query->value();
  r.key = m_key->value();
  r.value = true;
  return r;
}

bool QkDecompositionPanel::answers(const QkDecomposition& r, const QkRequest& q) const {
  return r.layer == q.layer && r.head == q.head && r.query == q.query && r.key == q.key &&
         r.value_names.empty() != q.value;
}

void QkDecompositionPanel::changed() {
  QkRequest want;
  bool valid = true;
  try {
    want = request();
  } catch (const AtlasError&) {
    valid = false;
  }
  if (m_result && (!valid || !answers(*m_result, want))) {
    m_result.reset();
    m_plots->setTrace(m_trace);
  }
  if (m_pending && !valid) m_pending.reset();
  scheduleRefresh();
}

void QkDecompositionPanel::scheduleRefresh() {
  if (m_refreshQueued || !isVisible()) return;
  m_refreshQueued = true;
  QMetaObject::invokeMethod(
      this,
      [this] {
        m_refreshQueued = false;
        if (isVisible()) refresh();
      },
      Qt::QueuedConnection);
}

bool QkDecompositionPanel::refresh() {
  if (!m_model || !m_trace || m_trace->source_tokens.empty()) {
    setStatus("Run the model on some input first.");
    return false;
  }
  QkRequest q;
  try {
    q = request();
  } catch (const std::exception& e) {
    if (m_cancelFlag) m_cancelFlag->store(true);
    setStatus(QString::fromStdString(e.what()));
    emit decompositionFinished();
    return false;
  }
  if (m_result && answers(*m_result, q)) return false;
  if (m_failed && sameQkRequest(*m_failed, q)) {  // not tried again: its reason stands
    setStatus(m_failedError);
    return false;
  }
  if (isRunning()) {
    // onDone starts the newest request once the one on its way has stopped.
    if (m_runningGeneration != m_generation || !sameQkRequest(m_running, q)) m_cancelFlag->store(true);
    return false;
  }
  m_pending.reset();  // the user's own result replaces one still waiting from a workspace
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  m_running = q;
  m_runningGeneration = m_generation;
  setStatus(QString("Splitting the score of layer %1 head %2, query %3 \u2192 key %4\u2026")
                .arg(q.layer)
                .arg(q.head)
                .arg(q.query)
                .arg(q.key));
  m_watcher.setFuture(runTool<QkDecomposition>(
      m_cancelFlag, "Decomposition cancelled.",
      [model = m_model, source = m_trace->source_tokens, q](const RunOptions& o) {
        return qk_decomposition(*model, source, q, o);
      }));
  return true;
}

bool QkDecompositionPanel::isRunning() const { return m_watcher.isRunning(); }

QString QkDecompositionPanel::status() const { return m_status->text(); }

void QkDecompositionPanel::setStatus(const QString& text) { m_status->setText(text); }

void QkDecompositionPanel::onDone() {
  Outcome out = m_watcher.result();
  std::optional<QkRequest> want;
  try {
    want = request();
  } catch (const AtlasError&) {
  }
  const bool current = m_runningGeneration == m_generation && want && sameQkRequest(*want, m_running);
  if (current && out.result) {
    m_result = std::move(out.result);
    setStatus(qkDecompositionTitle(*m_result, tokenLabels()) +
              " (query \u2192 key). Rows: the query side, columns: the key side; hover a cell for its value, "
              "click a heatmap cell to split another.");
    m_plots->setTrace(m_trace);
  } else if (current) {
    m_failed = m_running;  // not tried again until the run changes
    m_failedError = out.error;
    setStatus(out.error);
  }
  emit decompositionFinished();
  if (!current) scheduleRefresh();  // the selection moved on during the run
}

QJsonObject QkDecompositionPanel::saveState() const {
  QJsonObject o;
  o["layer"] = m_layer;
  o["head"] = m_head;
  o["query"] = m_query->value();
  o["key"] = m_key->value();
  std::optional<QkDecomposition> r = m_result ? m_result : m_pending;
  if (r && (!m_result || m_trace)) {
    QJsonObject g;
    const std::pair<const char*, int64_t> sizes[] = {{"layer", r->layer}, {"head", r->head}, {"kv_head", r->kv_head},
                                                     {"query", r->query}, {"key", r->key}, {"d_model", r->d_model}};
    for (const auto& [key, v] : sizes) g[key] = qint64(v);
    g["rows"] = qkNamesToJson(r->rows);
    g["columns"] = qkNamesToJson(r->columns);
    g["cells"] = doublesToJson(r->cells);
    const std::pair<const char*, double> numbers[] = {{"scale", r->scale},
                                                      {"query_norm_scale", r->query_norm_scale},
                                                      {"key_norm_scale", r->key_norm_scale},
                                                      {"total", r->total},
                                                      {"score", r->score}};
    for (const auto& [key, v] : numbers) g[key] = v;
    // value_parts ([components, d_model]) are left out: the panel draws their projections.
    g["value_names"] = qkNamesToJson(r->value_names);
    g["value_projection"] = doublesToJson(r->value_projection);
    g["head_output"] = doublesToJson(r->head_output);
    QJsonArray ids;
    for (int32_t id : m_result ? token_ids(m_trace->source_tokens) : m_pendingTokens) ids.append(id);
    g["clean_tokens"] = ids;
    o["result"] = g;
  }
  return o;
}

void QkDecompositionPanel::restoreState(const QJsonObject& o) {
  try {
    for (const char* key : {"layer", "head", "query", "key"})
      if (o.contains(key) && !o[key].isDouble()) throw AtlasError(std::string("\"") + key + "\" must be a number");
    m_settingUp = true;
    // Before the run is on screen the boxes' range may not hold the cell yet: the next run's
    // setRun clamps it to that input.
    for (auto [box, key] : {std::pair{m_query, "query"}, std::pair{m_key, "key"}}) {
      box->setMaximum(std::max(box->maximum(), o[key].toInt()));
      box->setValue(o[key].toInt());
    }
    m_settingUp = false;
    m_cellChosen = true;
    if (o.contains("layer") || o.contains("head"))
      setSelection(AttentionSelection{"encoder", "attn", o["layer"].toInt(), o["head"].toInt()});
    m_pending.reset();
    if (o.contains("result")) {
      const QJsonObject g = o["result"].toObject();
      QkDecomposition r;
      const std::pair<const char*, int64_t*> sizes[] = {{"layer", &r.layer}, {"head", &r.head},
                                                        {"kv_head", &r.kv_head}, {"query", &r.query},
                                                        {"key", &r.key},     {"d_model", &r.d_model}};
      for (const auto& [key, v] : sizes) {
        if (!g[key].isDouble() || g[key].toInteger(-1) < 0 || g[key].toInteger() > (int64_t(1) << 40))
          throw AtlasError(std::string("\"") + key + "\" must be a non-negative whole number");
        *v = g[key].toInteger();
      }
      r.rows = qkNamesFromJson(g["rows"], "rows");
      r.columns = qkNamesFromJson(g["columns"], "columns");
      r.cells = doublesFromJson(g["cells"], "cells");
      if (r.rows.empty() || r.columns.empty() || r.cells.size() != r.rows.size() * r.columns.size())
        throw AtlasError("\"cells\" must hold rows x columns values");
      const std::pair<const char*, double*> numbers[] = {{"scale", &r.scale},
                                                         {"query_norm_scale", &r.query_norm_scale},
                                                         {"key_norm_scale", &r.key_norm_scale},
                                                         {"total", &r.total},
                                                         {"score", &r.score}};
      for (const auto& [key, v] : numbers) {
        if (!g[key].isDouble()) throw AtlasError(std::string("\"") + key + "\" must be a number");
        *v = g[key].toDouble();
      }
      r.value_names = qkNamesFromJson(g["value_names"], "value_names");
      r.value_projection = doublesFromJson(g["value_projection"], "value_projection");
      r.head_output = doublesFromJson(g["head_output"], "head_output");
      if (r.value_projection.size() != r.value_names.size())
        throw AtlasError("\"value_projection\" must hold one value per name of \"value_names\"");
      if (!r.value_names.empty() && r.head_output.size() != size_t(r.d_model))
        throw AtlasError("\"head_output\" must hold d_model values");
      std::vector<int32_t> ids;
      for (const QJsonValue& v : g["clean_tokens"].toArray()) ids.push_back(v.toInt());
      m_pending = std::move(r);
      m_pendingTokens = std::move(ids);
      m_result.reset();
      setRun(m_model, m_trace);  // shown at once when the run on screen has these tokens
    }
  } catch (const AtlasError& e) {
    m_settingUp = false;
    setStatus(QString("The workspace's QK decomposition was not restored: %1").arg(e.what()));
  }
}

void QkDecompositionPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  scheduleRefresh();
}

}  // namespace atlas::ui
