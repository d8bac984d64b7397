#include "ui/panels/chart_adapter.h"

#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>

namespace atlas::ui {

struct CurvePlot::Impl {
  QChart* chart = nullptr;
  QChartView* view = nullptr;
  QValueAxis* x = nullptr;
  QValueAxis* y = nullptr;
};

CurvePlot::CurvePlot(QWidget* parent) : QWidget(parent), m_impl(new Impl) {
  m_impl->chart = new QChart;
  m_impl->chart->legend()->setAlignment(Qt::AlignBottom);
  m_impl->chart->setMargins(QMargins(4, 4, 4, 4));
  m_impl->x = new QValueAxis;
  m_impl->y = new QValueAxis;
  m_impl->x->setLabelFormat("%d");
  m_impl->chart->addAxis(m_impl->x, Qt::AlignBottom);
  m_impl->chart->addAxis(m_impl->y, Qt::AlignLeft);
  m_impl->view = new QChartView(m_impl->chart, this);  // takes ownership of the chart
  m_impl->view->setRenderHint(QPainter::Antialiasing);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(m_impl->view);
}

CurvePlot::~CurvePlot() { delete m_impl; }

void CurvePlot::setTitle(const QString& title) { m_impl->chart->setTitle(title); }

void CurvePlot::setAxisTitles(const QString& x, const QString& y) {
  m_impl->x->setTitleText(x);
  m_impl->y->setTitleText(y);
}

void CurvePlot::setCurves(const QVector<Curve>& curves) {
  m_impl->chart->removeAllSeries();
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool first = true;
  for (const Curve& c : curves) {
    auto* s = new QLineSeries;
    s->setName(c.name);
    s->replace(QList<QPointF>(c.points.begin(), c.points.end()));
    if (c.color.isValid()) s->setColor(c.color);
    m_impl->chart->addSeries(s);
    s->attachAxis(m_impl->x);
    s->attachAxis(m_impl->y);
    for (const QPointF& p : c.points) {
      if (first) x0 = x1 = p.x(), y0 = y1 = p.y(), first = false;
      x0 = std::min(x0, p.x()), x1 = std::max(x1, p.x());
      y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
    }
  }
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  const double pad = 0.05 * (y1 - y0);
  m_impl->x->setRange(x0, x1);
  m_impl->y->setRange(y0 - pad, y1 + pad);
}

void CurvePlot::setDark(bool dark) {
  m_impl->chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
}

int CurvePlot::curveCount() const { return static_cast<int>(m_impl->chart->series().size()); }

}  // namespace atlas::ui
