#pragma once
// A thin adapter over Qt Charts: the rest of ui/ draws curves through CurvePlot only, so the
// move to Qt Graphs (Qt Charts is deprecated upstream from Qt 6.10) touches this file alone.
#include <QColor>
#include <QPointF>
#include <QString>
#include <QVector>
#include <QWidget>

namespace atlas::ui {

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
  void setCurves(const QVector<Curve>& curves);
  void setDark(bool dark);
  int curveCount() const;

 private:
  struct Impl;
  Impl* m_impl;
};

}  // namespace atlas::ui
