#include "ui/views/positional_view.h"

#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/panels/chart_adapter.h"
#include "ui/views/token_view.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/positional_data.h"
#include "ui/views/value_mapper.h"
#include "core/model/model_arrays.h"

namespace atlas::ui {

PositionalView::PositionalView(QWidget* parent) : QWidget(parent) {
  m_encoding = new HeatmapView;
  m_similarity = new HeatmapView;
  m_curves = new CurvePlot;
  m_curves->setAxisTitles("position", "P[pos, dim]");
  m_dims = new QLineEdit("0, 1, 4, 5");
  m_dims->setToolTip("Dimensions of P to plot, separated by commas or spaces");
  m_dims->setObjectName("dimensionsEdit");
  m_note = new QLabel;
  m_note->setWordWrap(true);
  m_dimsProblem = new QLabel;
  m_dimsProblem->setWordWrap(true);
  m_dimsProblem->setTextFormat(Qt::PlainText);  // it quotes what the user typed
  m_dimsProblem->setStyleSheet("color: #c0392b");
  m_dimsProblem->hide();

  auto* curvesPage = new QWidget;
  auto* form = new QFormLayout;
  form->addRow("Dimensions:", m_dims);
  form->addRow(m_dimsProblem);
  auto* cl = new QVBoxLayout(curvesPage);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->addLayout(form);
  cl->addWidget(m_curves, 1);

  // Tabs rather than side by side: a dock is rarely wide enough for three plots.
  m_tabs = new QTabWidget;
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(m_encoding, "Encoding P");
  m_tabs->addTab(curvesPage, "Dimensions");
  m_tabs->addTab(m_similarity, "Similarity P P\u1D40");
  connect(m_tabs, &QTabWidget::currentChanged, this, &PositionalView::rebuildVisible);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(m_tabs, 1);
  layout->addWidget(m_note);
  connect(m_dims, &QLineEdit::editingFinished, this, &PositionalView::updateCurves);
  ColorMapping m;
  m.colormap = Colormap::Diverging;
  m_encoding->setMapping(m);
  m_similarity->setMapping(m);
}

void PositionalView::setTrace(std::shared_ptr<const Trace> trace) {
  m_trace = std::move(trace);
  m_dirty[0] = m_dirty[1] = m_dirty[2] = true;
  if (isVisible()) rebuildVisible();
}

void PositionalView::showEvent(QShowEvent*) { rebuildVisible(); }

// Only the tab on screen is computed: P P^T of 4096 positions is not free, and nobody looks
// at all three at once.
void PositionalView::rebuildVisible() {
  const int tab = m_tabs->currentIndex();
  if (tab < 0 || tab > 2 || !m_dirty[tab]) return;
  m_dirty[tab] = false;
  const bool has = m_trace && m_trace->find(model_arrays::kPositional);
  if (!has) {
    m_encoding->setData({});
    m_similarity->setData({});
    m_curves->setCurves({});
    m_note->setText("This model records no absolute positional encoding.");
    return;
  }
  if (tab == 0) m_encoding->setData(positionalHeatmap(*m_trace));
  if (tab == 1) updateCurves();  // builds P first when it is stale
  if (tab == 2) m_similarity->setData(positionalSimilarity(*m_trace));
  const TracedArray* p = m_trace->find(model_arrays::kPositional);
  if (m_trace->find(model_arrays::kPositionalFrequencies))
    m_note->setText(
        QString("Positions by rotation: nothing is added to the embeddings; each head's q "
                "and k are rotated by the angles p w\u1D62 of this %1 table. P P\u1D40 "
                "[m, n] = \u03A3\u1D62 cos((m \u2212 n) w\u1D62): it depends on the "
                "distance only.")
            .arg(QString::fromStdString(shape_str(p->tensor.shape))));
  else
    m_note->setText(QString("P is %1 (positions \u00D7 dimensions). P P\u1D40 peaks on the diagonal and decays "
                            "with distance for sinusoidal encodings.")
                        .arg(QString::fromStdString(shape_str(p->tensor.shape))));
}

void PositionalView::setStyle(const HeatmapStyle& style, bool dark) {
  HeatmapStyle s = style;
  s.mapping.colormap = Colormap::Diverging;  // P has both signs
  s.mapping.normalization = Normalization::Global;
  m_encoding->setStyle(s);
  m_similarity->setStyle(s);
  m_curves->setDark(dark);
}

QList<int> PositionalView::chosenDimensions() const {
  QList<int> dims;
  for (const QString& part : m_dims->text().split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
    bool ok = false;
    const int d = part.toInt(&ok);
    if (ok && d >= 0 && !dims.contains(d)) dims << d;
  }
  return dims;
}

QString PositionalView::dimensionsProblem() const { return m_dimsProblem->isHidden() ? QString() : m_dimsProblem->text(); }

void PositionalView::updateCurves() {
  if (m_dirty[0] && m_trace && m_trace->find(model_arrays::kPositional)) {
    m_encoding->setData(positionalHeatmap(*m_trace));
    m_dirty[0] = false;
  }
  const HeatmapData& p = m_encoding->data();
  QVector<Curve> curves;
  const QList<int> dims = chosenDimensions();
  for (int k = 0; k < dims.size(); ++k) {
    const int d = dims[k];
    if (d >= p.cols) continue;
    Curve c;
    c.name = QString("dim %1").arg(d);
    c.color = headColor(k, static_cast<int>(dims.size()) + 1);
    for (int pos = 0; pos < p.rows; ++pos) c.points << QPointF(pos, p.at(pos, d));
    curves << c;
  }
  m_curves->setCurves(curves);
  // A typed dimension that is not plotted is said so, with P's range: never dropped silently.
  QStringList problems;
  const QStringList parts =
      p.cols == 0 ? QStringList() : m_dims->text().split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts);
  for (const QString& part : parts) {
    bool ok = false;
    const long long d = part.toLongLong(&ok);
    if (!ok && !QRegularExpression("^-?[0-9]+$").match(part).hasMatch())
      problems << QString("\"%1\" is not a dimension number").arg(part);
    else if (!ok || d < 0 || d >= p.cols)  // !ok: beyond 64 bits
      problems << QString("dimension %1 is out of range: P has %2 dimensions (0 to %3)").arg(part).arg(p.cols).arg(p.cols - 1);
  }
  m_dimsProblem->setText(problems.join("; "));
  m_dimsProblem->setVisible(!problems.isEmpty());
}

}  // namespace atlas::ui
