// Workspaces (ui/workspace.h): a window's model, input, selection, query, colours, open panels
// and option round-trip through a .atlas file into a fresh window, which then shows the same
// heatmap by value; hostile files (not JSON, another format, a newer version, unknown keys,
// wrong types, huge) are refused with a message naming the problem.
#include <catch2/catch.hpp>

#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "core/tensor/error.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/workspace.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("a workspace round-trips: the reopened window shows the same views", "[ui][workspace]") {
  QTemporaryDir dir;
  const QString path = dir.filePath("study.atlas");
  HeatmapData shownBefore;
  Workspace before;
  {
    uitest::RunWindow rw("preset:tiny-encoder-decoder", "one two one two");
    rw.w.setTargetText("un deux un deux");
    REQUIRE(rw.shown.wait(30000));
    rw.settle();
    rw.w.setSelection({"decoder", "cross_attn", 1, 3, 0});
    rw.w.selectQuery(2);
    uitest::dock(rw.w, "sweepDock")->show();
    uitest::action(rw.w, "valueWeighted")->setChecked(true);
    uitest::action(rw.w, "sharedGridScale")->setChecked(true);
    REQUIRE(rw.shown.wait(30000));
    rw.settle();
    REQUIRE(rw.w.saveWorkspace(path));
    before = rw.w.workspace();
    shownBefore = uitest::heatmapView(rw.w)->data();
  }
  REQUIRE_FALSE(shownBefore.empty());
  uitest::ensureApp();
  MainWindow w;
  w.resize(1100, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  REQUIRE(w.openWorkspace(path));
  REQUIRE(shown.wait(60000));
  while (shown.wait(300)) {
  }
  const Workspace after = w.workspace();
  CHECK(after.model == "preset:tiny-encoder-decoder");
  CHECK(after.source == "one two one two");
  CHECK(after.target == "un deux un deux");
  CHECK(after.selection.stack == "decoder");
  CHECK(after.selection.kind == "cross_attn");
  CHECK(after.selection.layer == 1);
  CHECK(after.selection.head == 3);
  CHECK(after.query == 2);
  CHECK(after.valueWeighted);
  CHECK(after.sharedGridScale);
  CHECK(uitest::action(w, "sharedGridScale")->isChecked());
  CHECK(after.openPanels.contains("sweepDock"));
  CHECK(uitest::heatmapView(w)->data().values == shownBefore.values);
  CHECK(uitest::heatmapView(w)->data().title == shownBefore.title);
}

TEST_CASE("hostile workspace files are refused naming the problem", "[ui][workspace]") {
  auto refused = [](const QByteArray& json) {
    try {
      workspaceFromJson(json, "w.atlas");
    } catch (const AtlasError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  Workspace induction;
  induction.model = "demo:induction";
  const QByteArray good = workspaceToJson(induction);
  CHECK(workspaceFromJson(good, "w.atlas").model == "demo:induction");
  CHECK_THAT(refused("{not json"), Catch::Contains("w.atlas: not a workspace (malformed JSON"));
  CHECK_THAT(refused("[1, 2]"), Catch::Contains("not an object"));
  CHECK_THAT(refused(R"({"format": "something-else", "version": 1, "model": "x"})"), Catch::Contains("\"format\""));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 9, "model": "x"})"),
             Catch::Contains("version 9"));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1, "model": "x", "zoom": 2})"),
             Catch::Contains("unknown key \"zoom\""));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1})"), Catch::Contains("\"model\""));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1, "model": "x", "query": "two"})"),
             Catch::Contains("\"query\" must be an integer"));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1, "model": "x", "selection": {"layer": -4}})"),
             Catch::Contains("\"layer\""));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1, "model": "x", "colormap": "jet"})"),
             Catch::Contains("viridis, magma, diverging"));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1, "model": "x", "shared_grid_scale": 1})"),
             Catch::Contains("\"shared_grid_scale\" must be true or false"));
  QTemporaryDir dir;
  QFile big(dir.filePath("big.atlas"));
  REQUIRE(big.open(QIODevice::WriteOnly));
  big.write(QByteArray(5 << 20, ' '));
  big.close();
  CHECK_THROWS_WITH(loadWorkspaceFile(big.fileName()), Catch::Contains("over the 4.0 MB limit for a workspace"));
  CHECK_THROWS_WITH(loadWorkspaceFile(dir.filePath("missing.atlas")), Catch::Contains("missing.atlas: no such file"));
  // A window given a bad file keeps what it had and says why.
  uitest::RunWindow rw("demo:induction", "abab");
  rw.w.setHeadless(true);
  QFile bad(dir.filePath("bad.atlas"));
  REQUIRE(bad.open(QIODevice::WriteOnly));
  bad.write("{}");
  bad.close();
  CHECK_FALSE(rw.w.openWorkspace(bad.fileName()));
  CHECK(rw.w.lastError().contains("bad.atlas"));
  CHECK(rw.w.modelSpec() == "demo:induction");
}
