// The token search panel (ui/tools/search_panel.h): the layers x heads heatmap shows the core's
// scores at [layer, head] on an input whose labels repeat, a click selects that layer and head,
// and the matching chips of the main window are marked, by position.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QSignalSpy>
#include <QTest>

#include "core/analysis/token_search.h"
#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/tools/search_panel.h"
#include "ui/views/token_chips.h"
#include "ui/panels/variant_panel.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("token search panel: scores by position, click selects, chips marked", "[ui][search]") {
  uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
  TokenSearchPanel* panel = uitest::searchPanel(rw.w);
  REQUIRE(panel);
  uitest::dock(rw.w, "searchDock")->show();
  panel->setPatterns("s", "o");
  VariantPanel* plots = panel->plotPanel();
  plots->ensureBuilt();
  REQUIRE(plots->plots().size() == 1);
  plots->setCurrentPlot(0);
  const HeatmapData& d = plots->matrixView()->data();
  REQUIRE(d.rows == 2);
  REQUIRE(d.cols == 4);
  for (const TokenLinkScore& s : search_token_links(*rw.w.trace(), "s", "o"))
    CHECK(d.at(int(s.map.layer), int(s.head)) == Approx(s.score));
  // "s" sits at 4, 11, 16 and 23; "o" at 5 and 17 of "atlasofheadsatlasofheads".
  CHECK(uitest::sourceChips(rw.w)->highlightedQueries() == QVector<int>{4, 11, 16, 23});
  CHECK(uitest::sourceChips(rw.w)->highlightedKeys() == QVector<int>{5, 17});
  // The main heatmap marks the same rows and columns (a self-attention map over the input).
  const HeatmapData& shown = uitest::heatmapView(rw.w)->data();
  REQUIRE(shown.rowMarks.size() == 24);
  REQUIRE(shown.colMarks.size() == 24);
  for (int i = 0; i < 24; ++i) {
    CHECK(bool(shown.rowMarks[size_t(i)]) == (i == 4 || i == 11 || i == 16 || i == 23));
    CHECK(bool(shown.colMarks[size_t(i)]) == (i == 5 || i == 17));
  }
  QSignalSpy layers(panel, &TokenSearchPanel::layerPicked), heads(panel, &TokenSearchPanel::headPicked);
  HeatmapView* view = plots->matrixView();
  const HeatmapLayout L = layoutHeatmap(view, QRectF(view->rect()), view->data(), view->heatmapStyle(), view->viewWindow());
  QTest::mouseClick(view, Qt::LeftButton, {}, L.cellRect(1, 3).center().toPoint());
  REQUIRE(layers.count() == 1);
  CHECK(layers.at(0).at(0).toInt() == 1);
  REQUIRE(heads.count() == 1);
  CHECK(heads.at(0).at(0).toInt() == 3);
  CHECK(rw.w.selection().layer == 1);
  CHECK(rw.w.selection().head == 3);
  // No match: the reason, and no marks.
  panel->setPatterns("zebra", "o");
  plots->ensureBuilt();
  CHECK(plots->plots().empty());
  CHECK(uitest::sourceChips(rw.w)->highlightedQueries().isEmpty());
  uitest::dock(rw.w, "searchDock")->hide();
  CHECK(uitest::sourceChips(rw.w)->highlightedKeys().isEmpty());
  CHECK(uitest::heatmapView(rw.w)->data().colMarks.empty());
  // A closed panel marks nothing on later runs either.
  rw.w.setSourceText("ooss ooss");
  REQUIRE(rw.shown.wait(30000));
  rw.settle();
  CHECK(uitest::sourceChips(rw.w)->highlightedKeys().isEmpty());
  CHECK(uitest::heatmapView(rw.w)->data().colMarks.empty());
}
