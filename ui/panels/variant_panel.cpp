#include "ui/panels/variant_panel.h"

#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCursor>
#include <QScatterSeries>
#include <QToolTip>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QTableWidget>
#include <QHeaderView>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/tensor/error.h"
#include "ui/export/export_dialog.h"
#include "ui/views/heatmap_view.h"
#include "ui/panels/panel_chart.h"

namespace atlas::ui {

VariantPanel::VariantPanel(PanelProvider provider, QWidget* parent)
    : QWidget(parent), m_provider(std::move(provider)) {
  setObjectName(m_provider.id + "Panel");
  m_list = new QComboBox;
  m_list->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_list->setToolTip("Which plot of this panel to show");
  m_export = new QToolButton;
  m_export->setText("Export\u2026");
  m_export->setToolTip("Save this plot as SVG, PDF or PNG, or its data as .npy or .csv");
  m_matrix = new HeatmapView;
  m_chartView = new QChartView(new QChart);
  m_chartView->setRenderHint(QPainter::Antialiasing);
  // A chart keeps room for its title, legend, upright category names and an axis title: in a
  // shorter dock the panel scrolls (panel_docks.cpp) instead of Qt Charts cutting them to "...".
  m_chartView->setMinimumHeight(280);
  m_stack = new QStackedWidget;
  m_stack->addWidget(m_matrix);
  m_stack->addWidget(m_chartView);
  m_table = new QTableWidget;
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_stack->addWidget(m_table);
  m_note = new QLabel;
  m_note->setWordWrap(true);
  auto* top = new QHBoxLayout;
  top->addWidget(m_list, 1);
  top->addWidget(m_export);
  m_layout = new QVBoxLayout(this);
  m_layout->setContentsMargins(2, 2, 2, 2);
  m_layout->addLayout(top);
  m_layout->addWidget(m_stack, 1);
  m_layout->addWidget(m_note);
  connect(m_list, &QComboBox::currentIndexChanged, this, &VariantPanel::showPlot);
  connect(m_export, &QToolButton::clicked, this, &VariantPanel::exportDialog);
  connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int col) {
    const int i = currentPlot();
    if (i < 0) return;
    const PanelPlot& p = m_plots[static_cast<size_t>(i)];
    // The row as built (a sorted table shows rows in another order).
    const QTableWidgetItem* first = m_table->item(row, 0);
    const int built = first ? first->data(Qt::UserRole).toInt() : row;
    if (!p.rowPicks.empty()) {
      if (built >= 0 && built < static_cast<int>(p.rowPicks.size())) {
        emit layerPicked(p.rowPicks[size_t(built)].first);
        emit headPicked(p.rowPicks[size_t(built)].second);
      }
      return;
    }
    picked(p.rowAxis, built);
    picked(p.colAxis, col);
  });
  connect(m_matrix, &HeatmapView::rowPinned, this, [this](int row) {
    const int i = currentPlot();
    if (row >= 0 && i >= 0) picked(m_plots[static_cast<size_t>(i)].rowAxis, row);
  });
  // A layers x heads matrix (head statistics): the clicked cell's column is the head.
  connect(m_matrix, &HeatmapView::cellClicked, this, [this](int, int col) {
    const int i = currentPlot();
    if (i >= 0) picked(m_plots[static_cast<size_t>(i)].colAxis, col);
  });
}

void VariantPanel::setControls(QWidget* controls) { m_layout->insertWidget(1, controls); }

VariantPanel* embedToolPlots(QWidget* owner, const QString& id, const QString& title,
                             std::function<std::vector<PanelPlot>(const Trace&, const PanelContext&)> plots,
                             QWidget* controls) {
  PanelProvider p;
  p.id = id;
  p.title = title;
  p.arrays = "a run of the current model";
  p.available = [](const Trace&) { return true; };
  p.plots = std::move(plots);
  p.autoShow = false;
  auto* panel = new VariantPanel(std::move(p));
  panel->setControls(controls);
  auto* v = new QVBoxLayout(owner);
  v->setContentsMargins(0, 0, 0, 0);
  v->addWidget(panel);
  return panel;
}

void VariantPanel::setNote(const QString& text) { m_note->setText(text); }

void VariantPanel::setTrace(std::shared_ptr<const Trace> trace, std::function<QString(int32_t)> tokenText) {
  m_trace = std::move(trace);
  m_ctx.tokenText = std::move(tokenText);
  m_available = m_trace && m_provider.available(*m_trace);
  m_dirty = true;
  if (isVisible()) rebuild();
}

void VariantPanel::setContext(const PanelContext& ctx) {
  if (ctx.layer == m_ctx.layer && ctx.head == m_ctx.head && ctx.query == m_ctx.query && ctx.segment == m_ctx.segment)
    return;
  m_ctx.layer = ctx.layer;
  m_ctx.head = ctx.head;
  m_ctx.query = ctx.query;
  m_ctx.segment = ctx.segment;
  m_dirty = true;
  if (isVisible()) rebuild();
}

void VariantPanel::setStyle(const HeatmapStyle& style, bool dark) {
  m_style = style;
  m_dark = dark;
  m_dirty = true;
  if (isVisible()) rebuild();
}

void VariantPanel::showEvent(QShowEvent*) {
  if (m_dirty) rebuild();
}

void VariantPanel::ensureBuilt() {
  if (m_dirty) rebuild();
}

void VariantPanel::rebuild() {
  m_dirty = false;
  const int previous = m_list->currentIndex();
  m_plots.clear();
  QString error;
  if (m_available) {
    try {
      m_plots = m_provider.plots(*m_trace, m_ctx);
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());  // a malformed array: say which
    }
  }
  {
    const QSignalBlocker block(m_list);
    m_list->clear();
    for (const PanelPlot& p : m_plots) m_list->addItem(p.name);
    m_list->setCurrentIndex(m_plots.empty() ? -1 : std::clamp(previous, 0, static_cast<int>(m_plots.size()) - 1));
  }
  m_export->setEnabled(!m_plots.empty());
  if (!error.isEmpty()) m_note->setText(error);
  else if (!m_available) m_note->setText("This model records none of: " + m_provider.arrays);
  else m_note->setText(QString());
  showPlot(m_list->currentIndex());
}

int VariantPanel::currentPlot() const { return m_plots.empty() ? -1 : m_list->currentIndex(); }

void VariantPanel::setCurrentPlot(int index) { m_list->setCurrentIndex(index); }

void VariantPanel::showPlot(int index) {
  if (index < 0 || index >= static_cast<int>(m_plots.size())) {
    m_matrix->setData({});
    m_stack->setCurrentWidget(m_matrix);
    return;
  }
  const PanelPlot& p = m_plots[static_cast<size_t>(index)];
  if (p.kind == PanelPlot::Kind::Matrix) {
    HeatmapStyle s = m_style;
    s.mapping.colormap = p.mapping.colormap;
    s.mapping.normalization = p.mapping.normalization;
    s.mapping.centreZero = p.mapping.centreZero;
    m_matrix->setStyle(s);
    m_matrix->setData(p.matrix);
    const QSignalBlocker block(m_matrix);
    m_matrix->setPinnedRow(p.rowAxis == PlotAxis::Token && m_ctx.query < p.matrix.rows ? m_ctx.query : -1);
    m_stack->setCurrentWidget(m_matrix);
    return;
  }
  if (p.kind == PanelPlot::Kind::Table) {
    m_table->setSortingEnabled(false);  // while filling: a sorted table would move rows under us
    m_table->clear();
    m_table->setRowCount(p.matrix.rows);
    m_table->setColumnCount(p.matrix.cols);
    m_table->setVerticalHeaderLabels(p.matrix.rowLabels);
    m_table->setHorizontalHeaderLabels(p.matrix.colLabels);
    for (int r = 0; r < p.matrix.rows; ++r)
      for (int c = 0; c < p.matrix.cols; ++c) {
        auto* item = new QTableWidgetItem;
        const QString text = p.cellText.value(r * p.matrix.cols + c);
        bool number = false;
        const double v = text.toDouble(&number);
        if (p.sortable && number) item->setData(Qt::DisplayRole, v);  // sorts as a number
        else item->setText(text);
        if (c == 0) item->setData(Qt::UserRole, r);
        m_table->setItem(r, c, item);
      }
    m_table->setSortingEnabled(p.sortable);
    // Every column as wide as its cells and header (a map name elided to "decoder.laye…" does
    // not say which layer a row is); the table scrolls sideways instead.
    m_table->resizeColumnsToContents();
    m_table->resizeRowsToContents();
    m_stack->setCurrentWidget(m_table);
    return;
  }
  QChart* chart = buildPanelChart(p, m_dark);
  QChart* old = m_chartView->chart();
  m_chartView->setChart(chart);  // the view owns the new chart; the old one is ours to delete
  delete old;
  for (QAbstractSeries* s : chart->series())
    if (auto* bars = qobject_cast<QBarSeries*>(s))
      connect(bars, &QBarSeries::clicked, this, [this, axis = p.rowAxis](int i, QBarSet*) { picked(axis, i); });
  if (p.kind == PanelPlot::Kind::Scatter) connectScatter(p, chart);
  m_stack->setCurrentWidget(m_chartView);
}

// Scatter points: hover names the point, a click picks its token. Each series holds its
// group's rows in order, so a point's index in its series gives the row.
void VariantPanel::connectScatter(const PanelPlot& p, QChart* chart) {
  int group = 0;
  for (QAbstractSeries* s : chart->series()) {
    auto* scatter = qobject_cast<QScatterSeries*>(s);
    if (!scatter) continue;
    std::vector<int> rows;
    for (int r = 0; r < p.matrix.rows; ++r)
      if (int(p.matrix.at(r, 2)) == group) rows.push_back(r);
    ++group;
    auto rowOf = [scatter, rows](const QPointF& point) {
      const QList<QPointF> pts = scatter->points();
      for (int i = 0; i < pts.size() && i < int(rows.size()); ++i)
        if (pts[i] == point) return rows[size_t(i)];
      return -1;
    };
    connect(scatter, &QScatterSeries::hovered, this, [p, rowOf](const QPointF& point, bool state) {
      const int r = rowOf(point);
      if (state && r >= 0) QToolTip::showText(QCursor::pos(), p.matrix.rowLabels.value(r));
      else QToolTip::hideText();
    });
    connect(scatter, &QScatterSeries::clicked, this, [this, p, rowOf](const QPointF& point) {
      const int r = rowOf(point);
      if (r >= 0 && r < int(p.rowTokens.size())) picked(p.rowAxis, p.rowTokens[size_t(r)]);
    });
  }
}

QChart* VariantPanel::chart() const {
  const int i = currentPlot();
  if (i < 0) return nullptr;
  const PanelPlot::Kind k = m_plots[static_cast<size_t>(i)].kind;
  if (k != PanelPlot::Kind::Bars && k != PanelPlot::Kind::Curves && k != PanelPlot::Kind::Scatter) return nullptr;
  return m_chartView->chart();
}

void VariantPanel::picked(PlotAxis axis, int index) {
  if (axis == PlotAxis::Layer) emit layerPicked(index);
  if (axis == PlotAxis::Head) emit headPicked(index);
  if (axis == PlotAxis::Token) emit tokenPicked(index);
}

void VariantPanel::exportCurrent(const QString& path, int dpi) const {
  const int i = currentPlot();
  if (i < 0) throw AtlasError("the " + m_provider.title.toStdString() + " panel has nothing to export for this model");
  FigureSpec spec;
  spec.dpi = dpi;
  writeFigure(panelFigure(m_plots[static_cast<size_t>(i)], spec), dpi, path);
}

void VariantPanel::exportDialog() {
  runExportDialog(this, "Export " + m_provider.title, m_provider.id + ".svg",
                  [this](const QString& path, int dpi) { exportCurrent(path, dpi); });
}

}  // namespace atlas::ui
