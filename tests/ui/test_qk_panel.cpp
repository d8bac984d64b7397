// The query-key embedding panel (ui/panels/qk_panel.cpp): its points equal the core's embedding of the
// selected layer and head by position, queries and keys in two series, a click on a point picks
// its token, and the scatter exports; opening it in the window traces q and k.
#include <catch2/catch.hpp>

#include <QChart>
#include <QDockWidget>
#include <QImage>
#include <QScatterSeries>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>

#include "core/analysis/qk_embedding.h"
#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"
#include "ui/main_window/main_window.h"
#include "ui/panels/panel_chart.h"
#include "ui/panels/variant_panel.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("query-key embedding panel: points by position, two series, export", "[ui][qk]") {
  uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
  QDockWidget* dock = uitest::variantDock(rw.w, "qk");
  REQUIRE(dock);
  dock->show();  // turns on q and k tracing: one more run
  REQUIRE(rw.shown.wait(30000));
  rw.settle();
  REQUIRE(rw.w.trace()->find("decoder.layer0.self_attn.q"));
  AttentionSelection s = rw.w.selection();
  s.layer = 1;
  s.head = 2;
  rw.w.setSelection(s);
  VariantPanel* panel = uitest::variantPanel(rw.w, "qk");
  panel->ensureBuilt();
  REQUIRE(panel->plots().size() == 1);
  panel->setCurrentPlot(0);
  const QkEmbedding want = qk_embedding(*rw.w.trace(), "decoder.layer1.self_attn", 2);
  const PanelPlot& p = panel->plots().front();
  REQUIRE(p.matrix.rows == 48);
  for (int r = 0; r < 48; ++r) {
    CHECK(p.matrix.at(r, 0) == want.points[size_t(2 * r)]);
    CHECK(p.matrix.at(r, 1) == want.points[size_t(2 * r + 1)]);
    CHECK(p.matrix.at(r, 2) == (r < 24 ? 0.0f : 1.0f));
  }
  CHECK(p.matrix.rowLabels.at(4) == "query 4 s");
  CHECK(p.matrix.rowLabels.at(24 + 5) == "key 5 o");
  QChart* chart = panel->chart();
  REQUIRE(chart);
  int series = 0;
  for (QAbstractSeries* a : chart->series())
    if (auto* scatter = qobject_cast<QScatterSeries*>(a)) {
      CHECK(scatter->count() == 24);
      ++series;
    }
  CHECK(series == 2);
  // Equal aspect: one unit spans as many pixels across as up, and every point is inside, on
  // screen as the panel is resized.
  auto checkEqualAspect = [&](const QString& when) {
    INFO(when.toStdString());
    QTest::qWait(100);  // the panel's layout, the view's resize, then the chart's queued fit
    const auto* x = qobject_cast<QValueAxis*>(chart->axes(Qt::Horizontal).front());
    const auto* y = qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).front());
    REQUIRE((x && y));
    const QRectF area = chart->plotArea();
    REQUIRE(area.width() > 20);
    REQUIRE(area.height() > 20);
    CHECK((x->max() - x->min()) / area.width() == Approx((y->max() - y->min()) / area.height()).epsilon(1e-6));
    for (int r = 0; r < 48; ++r) {
      CHECK(x->min() <= p.matrix.at(r, 0));
      CHECK(p.matrix.at(r, 0) <= x->max());
      CHECK(y->min() <= p.matrix.at(r, 1));
      CHECK(p.matrix.at(r, 1) <= y->max());
    }
  };
  panel->resize(700, 420);
  checkEqualAspect("700 x 420");
  panel->resize(360, 640);
  checkEqualAspect("360 x 640");
  QTemporaryDir dir;
  panel->exportCurrent(dir.filePath("qk.png"), 80);
  const QImage img(dir.filePath("qk.png"));
  CHECK(img.width() > 300);
  panel->exportCurrent(dir.filePath("qk.svg"));
  panel->exportCurrent(dir.filePath("qk.npy"));
  CHECK(QFileInfo(dir.filePath("qk.svg")).size() > 1000);
}

TEST_CASE("query-key embedding panel on Transformer-XL: a plot per segment, memory keys never pick a token", "[ui][qk]") {
  // 24 tokens in segments of 16: segment 1 has 8 queries and 16 memory keys + its 8.
  uitest::RunWindow rw("preset:tiny-xl", "abababababababababababab");
  QDockWidget* dock = uitest::variantDock(rw.w, "qk");
  REQUIRE(dock);
  dock->show();
  REQUIRE(rw.shown.wait(30000));
  rw.settle();
  VariantPanel* panel = uitest::variantPanel(rw.w, "qk");
  panel->ensureBuilt();
  REQUIRE(panel->plots().size() == 2);  // layer 0 of segments 0 and 1
  const PanelPlot& p = panel->plots()[1];
  const QkEmbedding want = qk_embedding(*rw.w.trace(), "decoder.seg1.layer0.self_attn", std::max(0, rw.w.selection().head));
  REQUIRE(want.queries == 8);
  REQUIRE(want.keys == 24);
  REQUIRE(p.matrix.rows == 32);
  for (int r = 0; r < 32; ++r) {
    CHECK(p.matrix.at(r, 0) == want.points[size_t(2 * r)]);
    CHECK(p.matrix.at(r, 1) == want.points[size_t(2 * r + 1)]);
  }
  CHECK(p.rowTokens.at(3) == 3);        // query 3 of the segment
  CHECK(p.rowTokens.at(8 + 15) == -1);  // a memory key: a token of the previous segment
  CHECK(p.rowTokens.at(8 + 16) == 0);   // the segment's first key
}

TEST_CASE("equal-aspect ranges hold the data with one scale across and up", "[ui][qk]") {
  // 10 x 1 data units in 600 x 400 pixels: x needs 1/60 units a pixel, y 1/400; the larger
  // holds both, so y widens to 400/60 = 6.67 units around its centre 0.5.
  const QRectF r = equalAspectRanges(QRectF(0, 0, 10, 1), QSizeF(600, 400));
  CHECK(r.left() == Approx(0.0));
  CHECK(r.right() == Approx(10.0));
  CHECK(r.top() == Approx(0.5 - 10.0 / 3.0));
  CHECK(r.bottom() == Approx(0.5 + 10.0 / 3.0));
  // Tall data in a wide area: x widens instead.
  const QRectF t = equalAspectRanges(QRectF(-1, -5, 2, 10), QSizeF(500, 100));
  CHECK(t.height() == Approx(10.0));
  CHECK(t.width() == Approx(50.0));
  CHECK(t.center().x() == Approx(0.0));
}
