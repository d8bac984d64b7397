#pragma once
// A thin adapter over Qt Charts: the rest of ui/ draws curves through CurvePlot only, so the
// move to Qt Graphs (Qt Charts is deprecated upstream from Qt 6.10) touches this file alone.
#include <QColor>
#include <QPointF>
#include <QString>
#include <QVector>
#include <QWidget>
#include <optional>

namespace atlas::ui {

// A value axis: from `min` to `max` in `ticks` - 1 equal steps of 1, 2, 2.5 or 5 times a power
// of ten (ticks read 0.4 0.6 ... 1.4, not 0.57 0.74 ... 1.26).
struct AxisRange {
  double min = 0, max = 1;
  int ticks = 2;
};
// The axis over data from `lo` to `hi` (lo <= hi) with at most 7 ticks, never past what the
// quantity can take: `floor` (a loss >= 0) and `ceiling` (an accuracy or a probability <= 1).
AxisRange niceAxis(double lo, double hi, std::optional<double> floor = std::nullopt,
                   std::optional<double> ceiling = std::nullopt);

struct Curve {
  QString name;
  QVector<QPointF> points;
  QColor color;  // invalid = the chart's palette
};

class CurvePlot : public QWidget {
  Q_OBJECT
 public:
  explicit CurvePlot(QWidget* parent = nullptr);
  ~CurvePlot() override;
  void setTitle(const QString& title);
  void setAxisTitles(const QString& x, const QString& y);
  // What the plotted quantity can take: the value axis never extends past it (set before the
  // curves).
  void setValueBounds(std::optional<double> floor, std::optional<double> ceiling);
  void setCurves(const QVector<Curve>& curves);
  void setDark(bool dark);
  int curveCount() const;
  AxisRange valueAxis() const;  // as drawn

 private:
  struct Impl;
  Impl* m_impl;
};

}  // namespace atlas::ui
