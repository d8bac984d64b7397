// Ablations (LayerDrop, DropHead; core/analysis/ablation.h): the change of the model's output when the
// layers and heads chosen in the panel are dropped, per position, as KL(P_full || P_ablated)
// of the next-token distributions or the cosine of the final hidden states. The comparison
// runs the ablated model on the run controller's worker after the full forward.
#include <QLineEdit>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/analysis/ablation.h"
#include "core/tensor/error.h"
#include "ui/panels/ablation_controls.h"
#include "ui/panels/panel_registry.h"

namespace atlas::ui {
namespace {

std::vector<PanelPlot> ablationPlots(const Trace& trace, const PanelContext&) {
  std::vector<PanelPlot> out;
  for (const char* metric : {ablation_arrays::kKl, ablation_arrays::kCosine}) {
    const TracedArray* a = trace.find(metric);
    if (!a) continue;
    const int L = static_cast<int>(a->tensor.shape[0]);
    double mean = 0;
    for (float v : a->tensor.data) mean += v;
    mean /= std::max(1, L);
    QStringList dropped;
    if (const TracedArray* l = trace.find(ablation_arrays::kLayers))
      for (float v : l->tensor.data) dropped << QString("layer %1").arg(static_cast<int>(v));
    if (const TracedArray* h = trace.find(ablation_arrays::kHeads))
      for (size_t k = 0; k + 1 < h->tensor.data.size(); k += 2)
        dropped << QString("head %1:%2").arg(static_cast<int>(h->tensor.data[k])).arg(static_cast<int>(h->tensor.data[k + 1]));
    const bool kl = metric == ablation_arrays::kKl;
    PanelPlot p;
    p.kind = PanelPlot::Kind::Bars;
    p.name = kl ? "KL(full || ablated) per position" : "cosine(full, ablated) per position";
    p.matrix = matrixFrom(a->tensor, 0, L, 1);
    p.matrix.title = QString("%1, mean %2 (dropped: %3)").arg(p.name).arg(mean, 0, 'g', 4).arg(dropped.isEmpty() ? "nothing" : dropped.join(", "));
    p.matrix.rowLabels = tokenLabels(trace, L, !trace.target_tokens.empty());
    p.matrix.colLabels = {kl ? "KL (nats)" : "cosine"};
    p.matrix.rowAxis = "position";
    p.matrix.colAxis = "metric";
    p.matrix.valueName = p.matrix.colLabels.front();
    p.rowAxis = PlotAxis::Token;
    p.xTitle = "position";
    p.yTitle = p.matrix.colLabels.front();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

PanelProvider ablationProvider() {
  PanelProvider p;
  p.id = "ablation";
  p.title = "Ablations";
  p.arrays = QString("%1 or %2, %3, %4")
                 .arg(ablation_arrays::kKl, ablation_arrays::kCosine, ablation_arrays::kLayers, ablation_arrays::kHeads);
  p.available = [](const Trace& t) { return !t.arrays.empty(); };
  p.plots = ablationPlots;
  p.autoShow = false;
  return p;
}

AblationControls::AblationControls(QWidget* parent) : QWidget(parent) {
  m_layers = new QLineEdit;
  m_layers->setPlaceholderText("e.g. 1,3");
  m_layers->setToolTip("Layers to drop, numbered over all stacks in execution order");
  m_heads = new QLineEdit;
  m_heads->setPlaceholderText("layer:head, e.g. 0:1,1:3");
  m_rate = new QDoubleSpinBox;
  m_rate->setRange(0.0, 1.0);
  m_rate->setSingleStep(0.25);
  m_rate->setToolTip("LayerDrop every-other pruning rate (0 = off)");
  auto* apply = new QPushButton("Compare");
  auto* clear = new QPushButton("Clear");
  m_message = new QLabel;
  m_message->setWordWrap(true);
  auto* form = new QFormLayout;
  form->addRow("Drop layers:", m_layers);
  form->addRow("Drop heads:", m_heads);
  form->addRow("LayerDrop rate:", m_rate);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(apply);
  buttons->addWidget(clear);
  buttons->addStretch(1);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->addLayout(form);
  v->addLayout(buttons);
  v->addWidget(m_message);
  connect(apply, &QPushButton::clicked, this, &AblationControls::apply);
  connect(clear, &QPushButton::clicked, this, [this] {
    m_layers->clear();
    m_heads->clear();
    m_rate->setValue(0.0);
    m_message->clear();
    emit cleared();
  });
}

AblationSpec AblationControls::spec() const {
  AblationSpec s;
  const std::string layers = m_layers->text().trimmed().toStdString();
  const std::string heads = m_heads->text().trimmed().toStdString();
  if (!layers.empty()) s.drop_layers = parse_layer_list(layers, "drop layers");
  if (!heads.empty()) s.drop_heads = parse_head_list(heads, "drop heads");
  s.layerdrop_rate = m_rate->value();
  return s;
}

void AblationControls::setInput(const QString& layers, const QString& heads, double rate) {
  m_layers->setText(layers);
  m_heads->setText(heads);
  m_rate->setValue(rate);
}

void AblationControls::apply() {
  try {
    const AblationSpec s = spec();
    if (s.empty()) throw AtlasError("choose layers or heads to drop, or a LayerDrop rate");
    m_message->clear();
    emit applied(s);
  } catch (const std::exception& e) {
    m_message->setText(QString::fromStdString(e.what()));
  }
}

QJsonObject AblationControls::inputs() const {
  return {{"drop_layers", m_layers->text()}, {"drop_heads", m_heads->text()}, {"layerdrop_rate", m_rate->value()}};
}

void AblationControls::setInputs(const QJsonObject& o) {
  for (auto it = o.begin(); it != o.end(); ++it)
    if (it.key() != "drop_layers" && it.key() != "drop_heads" && it.key() != "layerdrop_rate" && it.key() != "compared")
      throw AtlasError("unknown key \"" + it.key().left(80).toStdString() + "\"");
  for (const char* key : {"drop_layers", "drop_heads"})
    if (o.contains(key) && !o[key].isString()) throw AtlasError(std::string("\"") + key + "\" must be a string");
  const double rate = o.contains("layerdrop_rate") ? (o["layerdrop_rate"].isDouble() ? o["layerdrop_rate"].toDouble() : -1) : 0;
  if (!(rate >= 0 && rate <= 1)) throw AtlasError("\"layerdrop_rate\" must be a number from 0 to 1");
  setInput(o["drop_layers"].toString(), o["drop_heads"].toString(), rate);
}

}  // namespace atlas::ui

namespace atlas::ui {
void AblationControls::setMessage(const QString& text) { m_message->setText(text); }
QString AblationControls::message() const { return m_message->text(); }
}  // namespace atlas::ui
