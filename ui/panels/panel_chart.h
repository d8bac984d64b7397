#pragma once
// Qt Charts drawing of the variant panels' bar and curve plots, shared by the panel on screen
// and the figure export (the chart is rendered into the SVG/PDF/PNG painter), so an exported
// chart looks like the panel. With chart_adapter.cpp the only files that use Qt Charts.
#include <QRectF>
#include <QStringList>
#include <QVector>

#include "ui/export/figure_export.h"
#include "ui/panels/variant_plots.h"

QT_BEGIN_NAMESPACE
class QChart;
QT_END_NAMESPACE

namespace atlas::ui {

// Bar categories keyed by position ("0 a", "1 b", "2 a"): one per row even when labels repeat.
QStringList positionCategories(const QStringList& labels, int count);
// The x range (left..right) and y range (top..bottom) that hold `data` with one unit as long
// across as up in a plot area of `area` pixels, centred on the data.
QRectF equalAspectRanges(const QRectF& data, const QSizeF& area);
// A new chart of a Bars, Curves or Scatter plot (the caller owns it); a scatter keeps an equal
// aspect when the chart is resized (fitScatterAspect, queued after each resize).
QChart* buildPanelChart(const PanelPlot& plot, bool dark);
// A scatter chart's ranges for its current size: one unit as long across as up, the data inside.
// Other charts are left as they are.
void fitScatterAspect(QChart* chart);
// The values the chart holds, one vector per series (bar set or line), read from the chart.
QVector<QVector<double>> chartSeriesValues(const QChart* chart);
// The figure of any plot: Matrix plots as heatmaps, Bars and Curves as the rendered chart;
// the data (.npy) and CSV are the plot's matrix in every case.
FigureContent panelFigure(const PanelPlot& plot, const FigureSpec& spec);

}  // namespace atlas::ui
