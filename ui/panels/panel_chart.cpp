#include "ui/panels/panel_chart.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLineSeries>
#include <QScatterSeries>
#include <QPainter>
#include <QTextStream>
#include <QValueAxis>
#include <QFontMetricsF>
#include <QLegend>
#include <QLegendMarker>
#include <algorithm>
#include <cmath>

#include "ui/export/svg_writer.h"
#include "ui/panels/chart_adapter.h"
#include "ui/views/token_view.h"

namespace atlas::ui {

QStringList positionCategories(const QStringList& labels, int count) {
  QStringList out;
  out.reserve(count);
  for (int r = 0; r < count; ++r)
    out << (labels.value(r).isEmpty() ? QString::number(r) : QString("%1 %2").arg(r).arg(labels.value(r)));
  return out;
}

namespace {

// Qt Charts draws every title, axis label and legend entry as HTML (QGraphicsTextItem::setHtml):
// a token "<b>" would turn bold and "a<&b" lose its middle. Plain text is escaped for it.
QString chartText(const QString& s) { return figureText(s).toHtmlEscaped(); }

QStringList chartTexts(const QStringList& list) {
  QStringList out;
  out.reserve(list.size());
  for (const QString& s : list) out << chartText(s);
  return out;
}

// A chart's fonts in pixels of the figure (scene units): a point size would be resolved
// against each export device's own DPI (72 for SVG and PDF, the PNG's --dpi), so text laid out
// for one size would be drawn at another. The sizes are the screen's (96 DPI) so an export
// looks like the panel.
void useFigureFonts(QChart* chart) {
  auto pixels = [](QFont f) {
    if (f.pointSizeF() > 0) f.setPixelSize(std::max(1, static_cast<int>(std::lround(f.pointSizeF() * 96.0 / 72.0))));
    return f;
  };
  chart->setTitleFont(pixels(chart->titleFont()));
  chart->legend()->setFont(pixels(chart->legend()->font()));
  for (QAbstractAxis* axis : chart->axes()) {
    axis->setLabelsFont(pixels(axis->labelsFont()));
    axis->setTitleFont(pixels(axis->titleFont()));
  }
}

}  // namespace

QRectF equalAspectRanges(const QRectF& data, const QSizeF& area) {
  if (area.width() <= 0 || area.height() <= 0) return data;
  // Units per pixel: the larger of the two, so both ranges still hold the data.
  const double scale = std::max(data.width() / area.width(), data.height() / area.height());
  const QSizeF half(0.5 * scale * area.width(), 0.5 * scale * area.height());
  return QRectF(data.center() - QPointF(half.width(), half.height()), 2 * half);
}

namespace {
constexpr const char* kScatterData = "atlasScatterData";  // the padded data bounds, a QRectF
}  // namespace

void fitScatterAspect(QChart* chart) {
  const QRectF data = chart->property(kScatterData).toRectF();
  const QList<QAbstractAxis*> xs = chart->axes(Qt::Horizontal), ys = chart->axes(Qt::Vertical);
  if (data.isEmpty() || xs.isEmpty() || ys.isEmpty()) return;
  auto* x = qobject_cast<QValueAxis*>(xs.front());
  auto* y = qobject_cast<QValueAxis*>(ys.front());
  if (!x || !y) return;
  // New ranges change the tick labels, whose widths move the plot area: a few rounds settle it
  // (a reaction to every plot-area change would chase its own tail).
  for (int round = 0; round < 4; ++round) {
    if (chart->layout()) chart->layout()->activate();
    const QRectF area = chart->plotArea();
    const QRectF r = equalAspectRanges(data, area.size());
    const bool settled = std::abs(r.width() - (x->max() - x->min())) <= 1e-9 * r.width() &&
                         std::abs(r.height() - (y->max() - y->min())) <= 1e-9 * r.height();
    if (settled && round > 0) break;
    x->setRange(r.left(), r.right());
    y->setRange(r.top(), r.bottom());
    // Ticks at round values, one step on both axes (a square grid), without moving the ranges.
    const AxisRange ax = niceAxis(r.left(), r.right()), ay = niceAxis(r.top(), r.bottom());
    const double step = std::max((ax.max - ax.min) / (ax.ticks - 1), (ay.max - ay.min) / (ay.ticks - 1));
    for (QValueAxis* axis : {x, y}) {
      axis->setTickType(QValueAxis::TicksDynamic);
      axis->setTickAnchor(0.0);
      axis->setTickInterval(step);
    }
  }
}

QChart* buildPanelChart(const PanelPlot& plot, bool dark) {
  auto* chart = new QChart;
  chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
  chart->setTitle(chartText(plot.matrix.title));
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  const HeatmapData& m = plot.matrix;
  double lo = 0, hi = 0;
  for (float v : m.values) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  if (hi <= lo) hi = lo + 1;
  auto* y = new QValueAxis;
  y->setTitleText(chartText(plot.yTitle));
  y->setRange(lo, hi + 0.05 * (hi - lo));
  y->applyNiceNumbers();  // ticks at round values, the range widened to hold them
  if (plot.kind == PanelPlot::Kind::Scatter) {
    double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    for (int r = 0; r < m.rows; ++r) {
      x0 = std::min(x0, double(m.at(r, 0))), x1 = std::max(x1, double(m.at(r, 0)));
      y0 = std::min(y0, double(m.at(r, 1))), y1 = std::max(y1, double(m.at(r, 1)));
    }
    const double px = 0.05 * std::max(x1 - x0, 1e-6), py = 0.05 * std::max(y1 - y0, 1e-6);
    auto* x = new QValueAxis;
    x->setTitleText(chartText(plot.xTitle));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    // An embedding's distances are what it shows: one unit is as long across as up, whatever
    // the chart's shape, so the ranges follow the chart's size (fitScatterAspect).
    chart->setProperty(kScatterData, QRectF(QPointF(x0 - px, y0 - py), QPointF(x1 + px, y1 + py)));
    x->setRange(x0 - px, x1 + px);
    y->setRange(y0 - py, y1 + py);
    // Queued: the view resizes the chart inside its own resize, before the layout has run.
    QObject::connect(chart, &QGraphicsWidget::geometryChanged, chart, [chart] {
      QMetaObject::invokeMethod(chart, [chart] { fitScatterAspect(chart); }, Qt::QueuedConnection);
    });
    const QColor colours[] = {QColor(230, 120, 20), QColor(20, 150, 140), QColor(120, 80, 200)};
    for (int g = 0; g < plot.groupNames.size(); ++g) {
      auto* s = new QScatterSeries;
      s->setName(chartText(plot.groupNames[g]));
      s->setColor(colours[g % 3]);
      s->setBorderColor(colours[g % 3].darker(130));
      s->setMarkerSize(9);
      for (int r = 0; r < m.rows; ++r)
        if (int(m.at(r, 2)) == g) s->append(m.at(r, 0), m.at(r, 1));
      chart->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
    }
    return chart;
  }
  if (plot.kind == PanelPlot::Kind::Bars) {
    auto* series = new QBarSeries;
    for (int c = 0; c < m.cols; ++c) {
      auto* set = new QBarSet(chartText(m.colLabels.value(c)));
      if (m.cols > 1) set->setColor(headColor(c, m.cols));
      for (int r = 0; r < m.rows; ++r) *set << m.at(r, c);
      series->append(set);
    }
    chart->addSeries(series);
    // Categories are keyed by position: QBarCategoryAxis drops repeated strings, which would
    // merge tokens that share a label ("0 1 1 0" as two bars). Each category is "i label".
    auto* x = new QBarCategoryAxis;
    const QStringList categories = positionCategories(m.rowLabels, m.rows);
    x->append(chartTexts(categories));
    x->setTitleText(chartText(plot.xTitle));
    qsizetype longest = 0;
    for (const QString& c : categories) longest = std::max(longest, c.size());
    // Many tokens, or long names (the predictions' tokens): upright labels, never elided to
    // "..." (a category axis elides a label wider than its band).
    // Qt Charts under-measures upright labels and lays the axis title over their ends (the
    // predictions' "4 <0xF8>" under "predicted token"): upright names go without the title, as
    // they name the bars themselves (the QK value path's bars too).
    if (m.rows > 16 || longest * m.rows > 48) {
      x->setLabelsAngle(-90);
      x->setTruncateLabels(false);
      x->setTitleText(QString());
    }
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
  } else {
    auto* x = new QValueAxis;
    x->setTitleText(chartText(plot.xTitle));
    x->setLabelFormat("%d");
    x->setRange(0, std::max(1, m.cols - 1));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (int r = 0; r < m.rows; ++r) {
      auto* s = new QLineSeries;
      s->setName(chartText(m.rowLabels.value(r)));
      s->setColor(headColor(r, std::max(2, m.rows)));
      for (int c = 0; c < m.cols; ++c) s->append(c, m.at(r, c));
      chart->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
    }
  }
  return chart;
}

QVector<QVector<double>> chartSeriesValues(const QChart* chart) {
  QVector<QVector<double>> out;
  for (QAbstractSeries* s : chart->series()) {
    if (auto* bars = qobject_cast<QBarSeries*>(s)) {
      for (QBarSet* set : bars->barSets()) {
        QVector<double> v;
        for (int i = 0; i < set->count(); ++i) v << set->at(i);
        out << v;
      }
    } else if (auto* scatter = qobject_cast<QScatterSeries*>(s)) {  // x then y of each point
      QVector<double> v;
      for (const QPointF& p : scatter->points()) v << p.x() << p.y();
      out << v;
    } else if (auto* line = qobject_cast<QLineSeries*>(s)) {
      QVector<double> v;
      for (const QPointF& p : line->points()) v << p.y();
      out << v;
    }
  }
  return out;
}

namespace {

// A legend along the bottom elides its entries ("h...") once they do not fit in one row; a
// list on the right keeps them whole (names like "h7: 1/256", one per curve).
void keepLegendWhole(QChart* chart, double width) {
  QLegend* legend = chart->legend();
  const QFontMetricsF fm(legend->font());
  double row = 0;
  for (QLegendMarker* marker : legend->markers())
    row += fm.horizontalAdvance(marker->label()) + 3.0 * fm.height();  // marker, gaps
  if (row > 0.95 * width) legend->setAlignment(Qt::AlignRight);
}

}  // namespace

FigureContent panelFigure(const PanelPlot& plot, const FigureSpec& spec) {
  FigureSpec s = spec;
  s.mapping = plot.mapping;
  FigureContent f = heatmapFigureContent(plot.matrix, s);
  if (plot.kind == PanelPlot::Kind::Matrix) return f;
  if (plot.kind == PanelPlot::Kind::Table) {
    // The figure is the heatmap of the cell numbers; the CSV keeps the table's text.
    auto table = std::make_shared<PanelPlot>(plot);
    f.csv = [table](QTextStream& out) {
      const auto field = [](QString v) { return '"' + v.replace('"', "\"\"").replace('\n', "; ") + '"'; };
      out << field(table->matrix.rowAxis + "\\" + table->matrix.colAxis);
      for (const QString& c : table->matrix.colLabels) out << ',' << field(c);
      out << '\n';
      for (int r = 0; r < table->matrix.rows; ++r) {
        out << field(table->matrix.rowLabels.value(r));
        for (int c = 0; c < table->matrix.cols; ++c) out << ',' << field(table->cellText.value(r * table->matrix.cols + c));
        out << '\n';
      }
    };
    return f;
  }
  f.sizeInches = !spec.sizeInches.isEmpty()                 ? spec.sizeInches
                  : plot.kind == PanelPlot::Kind::Scatter ? QSizeF(6.5, 5.5)
                                                          : QSizeF(std::clamp(3.0 + 0.25 * plot.matrix.rows, 6.0, 14.0), 4.5);
  auto shared = std::make_shared<PanelPlot>(plot);
  if (!spec.title.isEmpty()) shared->matrix.title = spec.title;  // --title names the chart too
  f.paint = [shared](QPainter& p, const QRectF& bounds, bool) {
    // The chart lives in a scene only while it is rendered into the export painter.
    QGraphicsScene scene;
    QChart* chart = buildPanelChart(*shared, false);
    useFigureFonts(chart);
    keepLegendWhole(chart, bounds.width());
    scene.addItem(chart);  // the scene owns and deletes it
    chart->setGeometry(QRectF(QPointF(0, 0), bounds.size()));
    fitScatterAspect(chart);  // at the figure's size (the view's queued fit never runs here)
    scene.setSceneRect(QRectF(QPointF(0, 0), bounds.size()));
    scene.render(&p, bounds, scene.sceneRect());
  };
  return f;
}

}  // namespace atlas::ui
