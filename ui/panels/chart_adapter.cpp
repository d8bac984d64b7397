#include "ui/panels/chart_adapter.h"

#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <array>
#include <cmath>

namespace atlas::ui {

struct CurvePlot::Impl {
  QChart* chart = nullptr;
  QChartView* view = nullptr;
  QValueAxis* x = nullptr;
  QValueAxis* y = nullptr;
  std::optional<double> floor, ceiling;
};

AxisRange niceAxis(double lo, double hi, std::optional<double> floor, std::optional<double> ceiling) {
  // A diverged training loss is NaN or infinite: the axis then shows the bounds' unit.
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = hi = floor.value_or(0.0);
  if (floor) lo = std::max(lo, *floor);
  if (ceiling) hi = std::min(hi, *ceiling);
  if (!(hi - lo > 1e-200 * std::max(1.0, std::abs(lo)))) {  // one value (or none): a unit around it, within the bounds
    lo -= 0.5, hi = lo + 1.0;
    if (floor && lo < *floor) lo = *floor, hi = lo + 1.0;
    if (ceiling && hi > *ceiling) hi = *ceiling, lo = std::max(hi - 1.0, floor.value_or(hi - 1.0));
  }
  // The smallest nice step whose rounded-out range needs at most 6 steps (rounding out both
  // ends can add two to the span's own count, so the search starts at span / 6 and goes up).
  const double raw = (hi - lo) / 6.0;
  double unit = std::pow(10.0, std::floor(std::log10(raw)));
  AxisRange r;
  for (int k = 0, tries = 0; tries < 64; k = (k + 1) % 4, ++tries) {  // ends within 8 tries
    const double step = std::array<double, 4>{1.0, 2.0, 2.5, 5.0}[size_t(k)] * unit;
    if (k == 3) unit *= 10.0;
    if (step < raw) continue;
    r.min = std::floor(lo / step) * step;
    r.max = std::ceil(hi / step) * step;
    if (floor) r.min = std::max(r.min, *floor);
    if (ceiling) r.max = std::min(r.max, *ceiling);
    r.ticks = static_cast<int>(std::ceil((r.max - r.min) / step - 1e-9)) + 1;
    if (r.ticks <= 7) break;
  }
  return r;
}

CurvePlot::CurvePlot(QWidget* parent) : QWidget(parent), m_impl(new Impl) {
  m_impl->chart = new QChart;
  m_impl->chart->legend()->setAlignment(Qt::AlignBottom);
  m_impl->chart->setMargins(QMargins(4, 4, 4, 4));
  m_impl->x = new QValueAxis;
  m_impl->y = new QValueAxis;
  m_impl->x->setLabelFormat("%.4g");
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

void CurvePlot::setValueBounds(std::optional<double> floor, std::optional<double> ceiling) {
  m_impl->floor = floor;
  m_impl->ceiling = ceiling;
}

AxisRange CurvePlot::valueAxis() const {
  return {m_impl->y->min(), m_impl->y->max(), m_impl->y->tickCount()};
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
      if (!std::isfinite(p.x()) || !std::isfinite(p.y())) continue;  // drawn as a gap, not ranged
      if (first) x0 = x1 = p.x(), y0 = y1 = p.y(), first = false;
      x0 = std::min(x0, p.x()), x1 = std::max(x1, p.x());
      y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
    }
  }
  if (x1 <= x0) x1 = x0 + 1;
  const AxisRange x = niceAxis(x0, x1);  // steps 5..120 read 0 20 ... 120, not 5 33 62 91 120
  m_impl->x->setRange(x.min, x.max);
  m_impl->x->setTickCount(x.ticks);
  const AxisRange y = niceAxis(y0, y1, m_impl->floor, m_impl->ceiling);
  m_impl->y->setRange(y.min, y.max);
  m_impl->y->setTickCount(y.ticks);
  m_impl->y->setLabelFormat("%.4g");
}

void CurvePlot::setDark(bool dark) {
  m_impl->chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
}

int CurvePlot::curveCount() const { return static_cast<int>(m_impl->chart->series().size()); }

}  // namespace atlas::ui
