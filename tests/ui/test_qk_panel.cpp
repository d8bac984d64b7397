// The query-key embedding panel (ui/panels/qk_panel.cpp): its points equal the core's embedding of the
// selected layer and head by position, queries and keys in two series, a click on a point picks
// its token, and the scatter exports; opening it in the window traces q and k.
#include <catch2/catch.hpp>

#include <QChart>
#include <QDockWidget>
#include <QImage>
#include <QScatterSeries>
#include <QTemporaryDir>

#include "core/analysis/qk_embedding.h"
#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"
#include "ui/main_window/main_window.h"
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
  QTemporaryDir dir;
  panel->exportCurrent(dir.filePath("qk.png"), 80);
  const QImage img(dir.filePath("qk.png"));
  CHECK(img.width() > 300);
  panel->exportCurrent(dir.filePath("qk.svg"));
  panel->exportCurrent(dir.filePath("qk.npy"));
  CHECK(QFileInfo(dir.filePath("qk.svg")).size() > 1000);
}
