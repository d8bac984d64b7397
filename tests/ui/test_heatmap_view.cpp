// The heatmap widget: zoom and pan keep the window inside the matrix, clicking pins a row,
// and the widget paints the matrix it was given.
#include <catch2/catch.hpp>

#include <QSignalSpy>
#include <QTest>

#include "ui/views/heatmap_view.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {
HeatmapData grid(int n) {
  HeatmapData d;
  d.rows = d.cols = n;
  for (int i = 0; i < n * n; ++i) d.values.push_back(static_cast<float>(i % 7) / 6.0f);
  for (int i = 0; i < n; ++i) d.rowLabels << QString("t%1").arg(i), d.colLabels << QString("t%1").arg(i);
  d.rowAxis = "query";
  d.colAxis = "key";
  return d;
}
}  // namespace

TEST_CASE("wheel zoom narrows the visible window and reset restores it", "[ui][heatmap]") {
  ensureApp();
  HeatmapView v;
  v.resize(600, 500);
  v.setData(grid(40));
  v.show();
  CHECK(v.viewWindow() == QRectF(0, 0, 40, 40));
  v.zoomBy(2.0, QPointF(300, 250));
  CHECK(v.viewWindow().width() == Approx(20));
  CHECK(v.viewWindow().height() == Approx(20));
  CHECK(v.viewWindow().left() >= 0);
  CHECK(v.viewWindow().right() <= 40);
  v.zoomBy(1000.0, QPointF(300, 250));  // clamped: never fewer than 3 cells
  CHECK(v.viewWindow().width() == Approx(3));
  v.zoomBy(0.0001, QPointF(300, 250));  // clamped: never more than the matrix
  CHECK(v.viewWindow() == QRectF(0, 0, 40, 40));
  v.setViewWindow(QRectF(35, 35, 10, 10));  // panned past the edge is pulled back
  CHECK(v.viewWindow().right() == Approx(40));
  v.resetZoom();
  CHECK(v.viewWindow() == QRectF(0, 0, 40, 40));
}

TEST_CASE("clicking a cell pins its query row; clicking again unpins", "[ui][heatmap]") {
  ensureApp();
  HeatmapView v;
  v.resize(600, 500);
  v.setData(grid(10));
  v.show();
  QSignalSpy pinned(&v, &HeatmapView::rowPinned);
  const HeatmapLayout L = layoutHeatmap(&v, QRectF(v.rect()), v.data(), v.heatmapStyle(), v.viewWindow());
  // Centre of row 4, column 7: cells are equal slices of the cell rectangle.
  const QPoint p(static_cast<int>(L.cells.left() + 7.5 * L.cells.width() / 10),
                 static_cast<int>(L.cells.top() + 4.5 * L.cells.height() / 10));
  QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, p);
  REQUIRE(pinned.size() == 1);
  CHECK(pinned.at(0).at(0).toInt() == 4);
  CHECK(v.pinnedRow() == 4);
  QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, p);
  CHECK(v.pinnedRow() == -1);
}

TEST_CASE("the hover text names query, key, weight and rank in the row", "[ui][heatmap]") {
  ensureApp();
  HeatmapView v;
  HeatmapData d;
  d.rows = 1;
  d.cols = 3;
  d.values = {0.2f, 0.5f, 0.3f};
  d.mask = {1, 1, 0};
  d.rowLabels = {"cat"};
  d.colLabels = {"the", "dog", "sat"};
  d.rowAxis = "query";
  d.colAxis = "key";
  v.setData(d);
  const QString t = v.describeCell(0, 0);
  CHECK(t.contains("cat"));
  CHECK(t.contains("the"));
  CHECK(t.contains("0.2"));
  CHECK(t.contains("rank 2 of 2"));  // 0.5 is larger; the masked 0.3 does not count
  CHECK(v.describeCell(0, 2).contains("masked"));
}

TEST_CASE("the painted widget shows the cell colours of the data", "[ui][heatmap]") {
  ensureApp();
  HeatmapView v;
  v.resize(500, 400);
  HeatmapData d;
  d.rows = d.cols = 2;
  d.values = {0.0f, 1.0f, 1.0f, 0.0f};
  d.rowLabels = d.colLabels = QStringList{"a", "b"};
  v.setData(d);
  const QImage img = v.grab().toImage();
  const HeatmapLayout L = layoutHeatmap(&v, QRectF(v.rect()), v.data(), v.heatmapStyle(), v.viewWindow());
  auto at = [&](int r, int c) {
    const QRectF cell = L.cellRect(r, c);
    return QColor(img.pixel(cell.center().toPoint() * img.devicePixelRatio()));
  };
  const QColor lo = evaluateColormap(Colormap::Viridis, 0.0), hi = evaluateColormap(Colormap::Viridis, 1.0);
  CHECK(std::abs(at(0, 0).green() - lo.green()) <= 2);
  CHECK(std::abs(at(0, 1).green() - hi.green()) <= 2);
  CHECK(std::abs(at(1, 0).red() - hi.red()) <= 2);
}
