// Compare panel (compare_panel.h). B runs on the CPU backend on a worker thread; B's model is
// loaded there too and kept while its spec stays the same.
#include "ui/tools/compare_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonValue>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "core/formats/model_header.h"
#include "core/formats/model_io.h"
#include "core/tensor/error.h"
#include "ui/tools/compare_view.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"

namespace atlas::ui {

ComparePanel::ComparePanel(QWidget* parent) : QWidget(parent) {
  setObjectName("comparePanel");
  m_modelEdit = new QLineEdit;
  m_modelEdit->setPlaceholderText("the same model (or a folder, .safetensors, .gguf, preset:NAME)");
  m_modelEdit->setToolTip("B's model: another checkpoint of the same shape; empty = A's model");
  m_textEdit = new QLineEdit;
  m_textEdit->setPlaceholderText("the same input (or another text with as many tokens)");
  m_textEdit->setToolTip("B's input; empty = A's input. The difference needs as many tokens as A");
  m_compare = new QPushButton("Compare");
  m_compare->setObjectName("compareStart");
  m_stop = new QPushButton("Stop comparing");
  m_status = new QLabel("A is the current run. Give B another model, another text, or both, and press Compare.");
  m_status->setWordWrap(true);
  auto* form = new QFormLayout;
  form->addRow("B model:", m_modelEdit);
  form->addRow("B text:", m_textEdit);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_compare);
  buttons->addWidget(m_stop);
  buttons->addStretch(1);
  auto* controls = new QWidget;
  auto* cv = new QVBoxLayout(controls);
  cv->setContentsMargins(0, 0, 0, 0);
  cv->addLayout(form);
  cv->addLayout(buttons);
  cv->addWidget(m_status);

  // Each view that applies; when none does (other token counts for all), the first reason.
  auto plots = [this](const Trace&, const PanelContext&) {
    std::vector<PanelPlot> out;
    if (!m_trace || !m_traceB) return out;
    QString firstError;
    auto add = [&](const QString& name, auto build, ColorMapping mapping, PlotAxis rows, PlotAxis cols) {
      try {
        PanelPlot plot;
        plot.kind = PanelPlot::Kind::Matrix;
        plot.name = name;
        plot.matrix = build();
        plot.mapping = mapping;
        plot.rowAxis = rows;
        plot.colAxis = cols;
        out.push_back(std::move(plot));
      } catch (const AtlasError& e) {
        if (firstError.isEmpty()) firstError = QString::fromStdString(e.what());
      }
    };
    add("A \u2212 B", [&] { return compareDifference(*m_trace, *m_traceB, m_sel); }, compareDifferenceMapping(),
        PlotAxis::Token, PlotAxis::None);
    add("A | B side by side", [&] { return compareSideBySide(*m_trace, *m_traceB, m_sel); }, ColorMapping{},
        PlotAxis::Token, PlotAxis::None);
    add("per head: mean TV distance", [&] { return compareHeadGrid(*m_trace, *m_traceB, m_sel); }, ColorMapping{},
        PlotAxis::Layer, PlotAxis::Head);
    if (out.empty() && !firstError.isEmpty()) throw AtlasError(firstError.toStdString());
    return out;
  };
  m_plots = embedToolPlots(this, "compare", "Compare", plots, controls);

  connect(m_plots, &VariantPanel::layerPicked, this, &ComparePanel::layerPicked);
  connect(m_plots, &VariantPanel::headPicked, this, &ComparePanel::headPicked);
  connect(m_plots, &VariantPanel::tokenPicked, this, &ComparePanel::tokenPicked);
  connect(m_compare, &QPushButton::clicked, this, [this] { compare(); });
  connect(m_stop, &QPushButton::clicked, this, &ComparePanel::stop);
  connect(m_textEdit, &QLineEdit::returnPressed, this, [this] { compare(); });
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &ComparePanel::onRunDone);
  m_stop->setEnabled(false);
}

ComparePanel::~ComparePanel() {
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_watcher.waitForFinished();
}

void ComparePanel::setRun(std::shared_ptr<const Model> model, std::shared_ptr<const Trace> trace) {
  const bool changed = model != m_model || trace != m_trace;
  m_model = std::move(model);
  m_trace = std::move(trace);
  if (!changed) return;
  // B was run against the previous A: it is not shown against this one.
  m_resultB.reset();
  m_traceB.reset();
  m_plots->setTrace(m_trace);
  if (m_active && !isVisible()) {  // nobody looks: no forward per keystroke until shown
    m_stale = true;
  } else if (m_active) {
    if (isRunning()) {
      m_rerun = true;
      if (m_cancelFlag) m_cancelFlag->store(true);
    } else {
      compare();
    }
  }
}

void ComparePanel::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (m_stale && m_active) {
    m_stale = false;
    compare();
  }
}

void ComparePanel::setSelection(const AttentionSelection& sel) {
  m_sel = sel;
  m_plots->setTrace(m_trace);  // marks the plots stale: rebuilt now if shown, else when shown
}

void ComparePanel::setStyle(const HeatmapStyle& style, bool dark) { m_plots->setStyle(style, dark); }

void ComparePanel::setB(const QString& modelSpec, const QString& text) {
  m_modelEdit->setText(modelSpec);
  m_textEdit->setText(text);
}

bool ComparePanel::compare() {
  if (isRunning()) {
    m_rerun = true;
    return true;
  }
  if (!m_model || !m_trace || m_trace->source_tokens.empty()) {
    setStatus("Run the model on some input first.");
    return false;
  }
  const QString spec = m_modelEdit->text().trimmed();
  const QString text = m_textEdit->text();
  if (spec.isEmpty() && text.isEmpty()) {
    setStatus("B would be A itself: give B another model, another text, or both.");
    return false;
  }
  m_active = true;
  m_rerun = false;
  m_stop->setEnabled(true);
  m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
  setStatus(spec.isEmpty() ? "Running B\u2026" : "Loading and running B\u2026");
  std::shared_ptr<const Model> cachedB = spec == m_modelBSpec ? m_modelB : nullptr;
  m_watcher.setFuture(QtConcurrent::run([modelA = m_model, cachedB, spec, text, source = m_trace->source_tokens,
                                         target = m_trace->target_tokens, cancel = m_cancelFlag]() {
    Outcome out;
    try {
      std::shared_ptr<const Model> b = spec.isEmpty() ? modelA : cachedB;
      if (!b) b = std::make_shared<const Model>(load_model(spec.toStdString()));
      if (!spec.isEmpty()) out.model = b;
      RunOptions o;
      o.cancel = cancel.get();
      std::vector<TokenInfo> src = source;
      if (!text.isEmpty()) src = b->tokenize(text.toStdString(), "").first;
      for (const TokenInfo& t : src)
        if (t.id >= b->config().vocab_size)
          throw AtlasError("B's model has a vocabulary of " + std::to_string(b->config().vocab_size) +
                           " tokens; A's input holds id " + std::to_string(t.id) + " (models of the same shape share a vocabulary)");
      out.result = b->forward_shared(src, target, o);
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  }));
  return true;
}

void ComparePanel::stop() {
  m_active = false;
  m_rerun = false;
  m_stale = false;
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_resultB.reset();
  m_traceB.reset();
  m_plots->setTrace(m_trace);
  m_stop->setEnabled(false);
  setStatus("Not comparing. Press Compare to run B again.");
}

QJsonObject ComparePanel::saveState() const {
  QJsonObject o;
  o["model"] = m_modelEdit->text();
  o["text"] = m_textEdit->text();
  o["active"] = m_active;
  return o;
}

bool ComparePanel::restoreState(const QJsonObject& o) {
  try {
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "model" && it.key() != "text" && it.key() != "active")
        throw AtlasError("unknown key \"" + it.key().left(80).toStdString() + "\"");
    for (const char* key : {"model", "text"})
      if (o.contains(key) && !o[key].isString()) throw AtlasError(std::string("\"") + key + "\" must be a string");
    if (o.contains("active") && !o["active"].isBool()) throw AtlasError("\"active\" must be true or false");
  } catch (const AtlasError& e) {
    setStatus(QString("The workspace's Compare state (tools.compare) was not restored: %1").arg(e.what()));
    return false;
  }
  // Whatever B this panel had belongs to the window before the workspace.
  m_active = m_rerun = m_stale = false;
  if (m_cancelFlag) m_cancelFlag->store(true);
  m_resultB.reset();
  m_traceB.reset();
  m_plots->setTrace(m_trace);
  m_stop->setEnabled(false);
  setB(o["model"].toString(), o["text"].toString());
  if (!o["active"].toBool()) {
    setStatus("Restored B's model and text from the workspace. Press Compare to run B.");
    return true;
  }
  // A folder or file moved since the save: said now, not as a failed run later.
  const std::string spec = o["model"].toString().trimmed().toStdString();
  if (!spec.empty() && spec.rfind("preset:", 0) != 0 && spec.rfind("demo:", 0) != 0) {
    try {
      check_model_path(spec);
    } catch (const AtlasError& e) {
      setStatus(QString("The workspace's Compare B model was not restored: %1. Give B another model and press "
                        "Compare.").arg(e.what()));
      return false;
    }
  }
  m_active = true;
  m_stop->setEnabled(true);
  if (!m_trace) {
    setStatus("B runs once A's run is shown.");
  } else if (isVisible()) {
    compare();
  } else {
    m_stale = true;  // shown later: B runs then
  }
  return true;
}

bool ComparePanel::isRunning() const { return m_watcher.isRunning(); }

QString ComparePanel::status() const { return m_status->text(); }

void ComparePanel::setStatus(const QString& text) { m_status->setText(text); }

void ComparePanel::onRunDone() {
  Outcome out = m_watcher.result();
  if (out.model) {
    m_modelB = out.model;
    m_modelBSpec = m_modelEdit->text().trimmed();
  }
  if (m_rerun && m_active) {  // A changed meanwhile: B again, against the new A
    compare();
    return;
  }
  if (!m_active) return;
  if (!out.error.isEmpty()) {
    setStatus("B failed: " + out.error);
  } else if (out.result) {
    m_resultB = out.result;
    m_traceB = std::shared_ptr<const Trace>(m_resultB, &m_resultB->trace);
    setStatus(QString("A: %1 tokens; B: %2 tokens%3. Selection is linked; click the per-head grid to select a head.")
                  .arg(m_trace->source_tokens.size())
                  .arg(m_traceB->source_tokens.size())
                  .arg(m_modelEdit->text().trimmed().isEmpty() ? QString() : ", B's model " + m_modelEdit->text().trimmed()));
    m_plots->setTrace(m_trace);
  }
  emit compared();
}

}  // namespace atlas::ui
