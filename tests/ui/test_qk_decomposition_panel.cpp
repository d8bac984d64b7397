// The QK decomposition panel (ui/tools/qk_decomposition_panel.h), "why this head attends here":
// its matrix and value bars are the core's decomposition of the selected head and cell (the
// oracle is an independent call to atlas::qk_decomposition on the same tokens), by value and by
// position, on inputs whose tokens repeat; it follows the selection, a heatmap click, other
// tokens and a model switch without ever showing the previous values; a model it does not cover
// shows the refusal; and its state survives a workspace round trip.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QJsonArray>
#include <QJsonDocument>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>

#include "core/analysis/qk_decomposition.h"
#include "core/formats/model_io.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"
#include "tests/svg_xml.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/panels/variant_panel.h"
#include "ui/export/figure_export.h"
#include "ui/tools/qk_decomposition_figure.h"
#include "ui/tools/qk_decomposition_panel.h"
#include "ui/views/heatmap_painter.h"
#include "ui/views/heatmap_view.h"
#include "ui/workspace.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::runOn;

namespace {

// Repeated tokens: the same labels name different positions.
const std::string kRepeating = "abcabcabcab";

std::shared_ptr<const Model> qkTinyModel(const char* preset, uint64_t seed) {
  const ModelConfig c = preset_test::small_preset_config(preset);
  return std::make_shared<const Model>(c, init_params(c, seed));
}

// Waits until the panel shows a result for (layer, head, query, key) with no run on its way.
bool qkShows(QkDecompositionPanel& panel, int64_t layer, int64_t head, int64_t query, int64_t key) {
  return QTest::qWaitFor(
      [&] {
        const auto& r = panel.result();
        return !panel.isRunning() && r && r->layer == layer && r->head == head && r->query == query && r->key == key;
      },
      60000);
}

// The panel's plots against an independent decomposition: every cell at its row and column, the
// names on both axes, the value path's bars, and the title naming the cell and both totals.
void checkAgainstCore(QkDecompositionPanel& panel, const QkDecomposition& want) {
  VariantPanel* plots = panel.plotPanel();
  plots->ensureBuilt();
  REQUIRE(plots->plots().size() == 2);
  const HeatmapData& m = plots->plots()[0].matrix;
  REQUIRE(m.rows == int(want.rows.size()));
  REQUIRE(m.cols == int(want.columns.size()));
  for (int r = 0; r < m.rows; ++r) CHECK(m.rowLabels[r].toStdString() == want.rows[size_t(r)]);
  for (int c = 0; c < m.cols; ++c) CHECK(m.colLabels[c].toStdString() == want.columns[size_t(c)]);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) {
      CAPTURE(r, c);
      CHECK(m.at(r, c) == Approx(want.cell(size_t(r), size_t(c))).margin(1e-6));
    }
  // The heatmap on screen is this matrix.
  plots->setCurrentPlot(0);
  CHECK(plots->matrixView()->data().values == m.values);
  const HeatmapData& bars = plots->plots()[1].matrix;
  REQUIRE(bars.rows == int(want.value_names.size()) + 1);
  for (size_t k = 0; k < want.value_names.size(); ++k) {
    CHECK(bars.rowLabels[int(k)].toStdString() == want.value_names[k]);
    CHECK(bars.at(int(k), 0) == Approx(want.value_projection[k]).margin(1e-6));
  }
  CHECK(bars.rowLabels.back() == "|o|");
  const QString title = m.title;
  CHECK(title.startsWith(QString("L%1 H%2, %3 '").arg(want.layer).arg(want.head).arg(want.query)));
  CHECK(title.contains(QString("\u2192 %1 '").arg(want.key)));
  CHECK(title.contains(QString("sum %1,").arg(want.total, 0, 'g', 5)));
  CHECK(title.contains(QString("score %1").arg(want.score, 0, 'g', 5)));
}

QkDecomposition coreQk(const Model& model, const Trace& trace, int64_t layer, int64_t head, int64_t q, int64_t k) {
  QkRequest r;
  r.layer = layer;
  r.head = head;
  r.query = q;
  r.key = k;
  r.value = true;
  return qk_decomposition(model, trace.source_tokens, r);
}

// The window's QK decomposition panel, its dock shown and raised (as View > Variant panels does).
QkDecompositionPanel* openQkPanel(uitest::RunWindow& rw) {
  auto* panel = uitest::part<QkDecompositionPanel>(rw.w, "qkDecompositionPanel");
  REQUIRE(panel);
  QDockWidget* dock = uitest::dock(rw.w, "qkDecompositionDock");
  REQUIRE(dock);
  dock->show();
  dock->raise();
  return panel;
}

void clickHeatmapCell(HeatmapView* view, int row, int col) {
  const HeatmapLayout L = layoutHeatmap(view, QRectF(view->rect()), view->data(), view->heatmapStyle(), view->viewWindow());
  QTest::mouseClick(view, Qt::LeftButton, {}, L.cellRect(row, col).center().toPoint());
}

}  // namespace

TEST_CASE("QK decomposition panel: the matrix and value bars are qk_decomposition's for the selected head and cell",
          "[ui][qkdecomp]") {
  ensureApp();
  auto model = qkTinyModel("tiny-llama", 41);
  auto trace = runOn(*model, kRepeating);
  QkDecompositionPanel panel;
  panel.resize(900, 650);
  panel.show();
  panel.setRun(model, trace);
  panel.setSelection(AttentionSelection{"decoder", "self_attn", 1, 2});
  // Query 9 and key 3 are both 'a' (so are 0 and 6): the labels repeat, the positions do not.
  panel.setCell(9, 3);
  REQUIRE(qkShows(panel, 1, 2, 9, 3));
  INFO(panel.status().toStdString());
  checkAgainstCore(panel, coreQk(*model, *trace, 1, 2, 9, 3));
  CHECK(panel.status().contains("9 'a' \u2192 3 'a'"));
  // Both plots export through the panel's Export, their names readable in the SVG.
  QTemporaryDir dir;
  for (int plot = 0; plot < 2; ++plot) {
    panel.plotPanel()->setCurrentPlot(plot);
    const QString path = dir.filePath(QString("qk%1.svg").arg(plot));
    panel.plotPanel()->exportCurrent(path);
    QFile svg(path);
    REQUIRE(svg.open(QIODevice::ReadOnly));
    const atlas_test::SvgXml xml = atlas_test::readSvgXml(svg.readAll());
    INFO(xml.describe());
    REQUIRE(xml.wellFormed());
    // A bar chart's categories are numbered ("2 layer0.head1").
    const auto shows = [&xml](const QString& text) {
      return std::any_of(xml.texts.begin(), xml.texts.end(), [&](const QString& t) { return t.endsWith(text); });
    };
    CHECK(shows("layer0.head1"));
    CHECK(shows(plot == 0 ? "key side" : "|o|"));
  }

  // Another head: the old matrix goes at once, the new one is that head's.
  panel.setSelection(AttentionSelection{"decoder", "self_attn", 0, 1});
  CHECK_FALSE(panel.result().has_value());
  REQUIRE(qkShows(panel, 0, 1, 9, 3));
  checkAgainstCore(panel, coreQk(*model, *trace, 0, 1, 9, 3));
  // Another cell, typed or clicked, likewise; a quick succession ends on the last one.
  panel.setCell(7, 6);
  panel.setCell(10, 0);
  CHECK_FALSE(panel.result().has_value());
  REQUIRE(qkShows(panel, 0, 1, 10, 0));
  checkAgainstCore(panel, coreQk(*model, *trace, 0, 1, 10, 0));

  // A key after the query of a causal model: the core's reason, no matrix.
  QSignalSpy done(&panel, &QkDecompositionPanel::decompositionFinished);
  panel.setCell(2, 8);
  REQUIRE(QTest::qWaitFor([&] { return !done.isEmpty() && !panel.isRunning(); }, 60000));
  CHECK_FALSE(panel.result().has_value());
  const QString keyRefusal = panel.status();
  CHECK(keyRefusal.contains("key"));
  // Back to a good cell and again to the refused one: its reason again, not the good cell's title.
  panel.setCell(8, 2);
  REQUIRE(qkShows(panel, 0, 1, 8, 2));
  panel.setCell(2, 8);
  REQUIRE(QTest::qWaitFor([&] { return panel.status() == keyRefusal; }, 10000));
  CHECK_FALSE(panel.result().has_value());
  // An aggregate is not one head.
  panel.setCell(8, 2);
  panel.setSelection(AttentionSelection{"decoder", "self_attn", 0, HeadMean});
  REQUIRE(QTest::qWaitFor([&] { return panel.status().contains("pick one head"); }, 10000));
  CHECK_FALSE(panel.result().has_value());

  // Other tokens: cleared at once, then this input's split.
  panel.setSelection(AttentionSelection{"decoder", "self_attn", 1, 3});
  REQUIRE(qkShows(panel, 1, 3, 8, 2));
  auto other = runOn(*model, "cabcabcabca");
  panel.setRun(model, other);
  CHECK_FALSE(panel.result().has_value());
  REQUIRE(qkShows(panel, 1, 3, 8, 2));
  checkAgainstCore(panel, coreQk(*model, *other, 1, 3, 8, 2));

  // Another model on the same text: never the first model's numbers.
  auto second = qkTinyModel("tiny-decoder", 5);
  auto secondTrace = runOn(*second, kRepeating);
  panel.setRun(second, secondTrace);
  CHECK_FALSE(panel.result().has_value());
  REQUIRE(qkShows(panel, 1, 3, 8, 2));
  checkAgainstCore(panel, coreQk(*second, *secondTrace, 1, 3, 8, 2));

  // A model the decomposition does not cover: its refusal in the panel, no matrix, no crash.
  auto gtrxl = qkTinyModel("tiny-gtrxl", 3);
  panel.setRun(gtrxl, runOn(*gtrxl, kRepeating));
  CHECK_FALSE(panel.result().has_value());
  const std::string why = qk_decomposition_refusal(gtrxl->config());
  REQUIRE_FALSE(why.empty());
  REQUIRE(QTest::qWaitFor([&] { return panel.status().contains(QString::fromStdString(why)); }, 10000));
  CHECK_FALSE(panel.isRunning());
  CHECK_FALSE(panel.result().has_value());

  // Transformer-XL: positions over the whole text; query 20 (segment 1) on key 5 (in its memory).
  auto xl = qkTinyModel("tiny-xl", 3);
  auto xlTrace = runOn(*xl, "abcabcabcabcabcabcabcabc");
  panel.setRun(xl, xlTrace);
  panel.setSelection(AttentionSelection{"decoder", "self_attn", 1, 1});
  panel.setCell(20, 5);
  REQUIRE(qkShows(panel, 1, 1, 20, 5));
  const QkDecomposition want = coreQk(*xl, *xlTrace, 1, 1, 20, 5);
  CHECK(want.key_in_memory);
  checkAgainstCore(panel, want);
}

TEST_CASE("QK decomposition in the window: a heatmap click splits that cell, a model switch never shows stale values",
          "[ui][qkdecomp]") {
  uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
  QkDecompositionPanel* panel = openQkPanel(rw);
  AttentionSelection s = rw.w.selection();
  s.layer = 1;
  s.head = 2;
  rw.w.setSelection(s);
  rw.settle();
  // 'e' at 20 attends to what followed the earlier 'e'; 9 and 21 are both 'a'.
  HeatmapView* heatmap = uitest::heatmapView(rw.w);
  clickHeatmapCell(heatmap, 20, 9);
  REQUIRE(qkShows(*panel, 1, 2, 20, 9));
  const Model oracle = load_model("demo:induction");
  checkAgainstCore(*panel, coreQk(oracle, *rw.w.trace(), 1, 2, 20, 9));
  CHECK(panel->status().contains("20 'e' \u2192 9 'a'"));
  // A second click on the same row unpins it but still picks its cell.
  clickHeatmapCell(heatmap, 20, 20);
  REQUIRE(qkShows(*panel, 1, 2, 20, 20));
  checkAgainstCore(*panel, coreQk(oracle, *rw.w.trace(), 1, 2, 20, 20));
  // Another head picked anywhere (here the model grid's selection).
  s = rw.w.selection();
  s.head = 0;
  rw.w.setSelection(s);
  REQUIRE(qkShows(*panel, 1, 0, 20, 20));
  checkAgainstCore(*panel, coreQk(oracle, *rw.w.trace(), 1, 0, 20, 20));

  // Another model: the induction demo's numbers go with it.
  rw.w.loadModel("preset:tiny-llama");
  REQUIRE(rw.shown.wait(60000));
  rw.settle();
  const Model llama = load_model("preset:tiny-llama");
  const AttentionSelection now = rw.w.selection();
  REQUIRE(now.head >= 0);
  REQUIRE(qkShows(*panel, now.layer, now.head, 20, 20));
  checkAgainstCore(*panel, coreQk(llama, *rw.w.trace(), now.layer, now.head, 20, 20));
  // A model it refuses: the reason in the panel.
  rw.w.loadModel("preset:tiny-gtrxl");
  REQUIRE(rw.shown.wait(60000));
  rw.settle();
  const std::string why = qk_decomposition_refusal(load_model("preset:tiny-gtrxl").config());
  REQUIRE(QTest::qWaitFor([&] { return panel->status().contains(QString::fromStdString(why)); }, 10000));
  CHECK_FALSE(panel->result().has_value());
}

TEST_CASE("QK decomposition state survives a workspace round trip, for its own tokens only", "[ui][qkdecomp][workspace]") {
  ensureApp();
  auto model = qkTinyModel("tiny-llama", 43);
  auto trace = runOn(*model, kRepeating);
  QkDecompositionPanel panel;
  panel.show();
  panel.setRun(model, trace);
  panel.setSelection(AttentionSelection{"decoder", "self_attn", 1, 1});
  panel.setCell(10, 4);
  REQUIRE(qkShows(panel, 1, 1, 10, 4));
  const QkDecomposition& a = *panel.result();

  Workspace w;
  w.model = "preset:tiny-llama";
  w.tools["qk"] = panel.saveState();
  const Workspace back = workspaceFromJson(workspaceToJson(w), "test.atlas");

  QkDecompositionPanel restored;  // hidden: shows what was saved, computes nothing
  restored.restoreState(back.tools["qk"].toObject());
  CHECK_FALSE(restored.result().has_value());  // no run yet
  restored.setRun(model, runOn(*model, "abcabcabcaa"));  // other tokens: not shown
  CHECK_FALSE(restored.result().has_value());
  QkDecompositionPanel again;
  again.restoreState(back.tools["qk"].toObject());
  again.setRun(model, runOn(*model, kRepeating));
  REQUIRE(again.result().has_value());
  CHECK(again.status().contains("Restored"));
  const QkDecomposition& b = *again.result();
  CHECK(b.rows == a.rows);
  CHECK(b.columns == a.columns);
  CHECK(b.cells == a.cells);
  CHECK(b.score == a.score);
  CHECK(b.total == a.total);
  CHECK(b.value_names == a.value_names);
  CHECK(b.value_projection == a.value_projection);
  CHECK(b.head_output == a.head_output);
  CHECK((b.layer == 1 && b.head == 1 && b.query == 10 && b.key == 4));
  // Shown without a new run, and saved again as it came.
  again.show();
  QTest::qWait(50);
  CHECK_FALSE(again.isRunning());
  INFO(QJsonDocument(again.saveState()).toJson().toStdString());
  INFO(QJsonDocument(back.tools["qk"].toObject()).toJson().toStdString());
  CHECK(again.saveState() == back.tools["qk"].toObject());

  // A damaged state is refused in the panel's status, not applied.
  QJsonObject bad = back.tools["qk"].toObject();
  QJsonObject g = bad["result"].toObject();
  g["cells"] = QJsonArray({1.0, 2.0});
  bad["result"] = g;
  QkDecompositionPanel damaged;
  damaged.restoreState(bad);
  damaged.setRun(model, runOn(*model, kRepeating));
  CHECK_FALSE(damaged.result().has_value());
  CHECK(damaged.status().contains("not restored"));
}

TEST_CASE("a workspace opened in the window splits its saved cell of its saved head", "[ui][qkdecomp][workspace]") {
  ensureApp();
  QTemporaryDir dir;
  const QString path = dir.filePath("qk.atlas");
  QFile f(path);
  REQUIRE(f.open(QIODevice::WriteOnly));
  f.write(R"({"format":"attention-atlas-workspace","version":1,"model":"demo:induction",
    "source":"atlasofheadsatlasofheads","selection":{"stack":"decoder","kind":"self_attn","layer":1,"head":2},
    "open_panels":["qkDecompositionDock"],"tools":{"qk":{"layer":1,"head":2,"query":20,"key":9}}})");
  f.close();
  MainWindow w;
  w.resize(1100, 800);
  w.show();
  auto* panel = uitest::part<QkDecompositionPanel>(w, "qkDecompositionPanel");
  REQUIRE(panel);
  // Every result the panel shows on the way is of the saved cell: never the boxes' defaults.
  std::vector<std::pair<int64_t, int64_t>> seen;
  QObject::connect(panel, &QkDecompositionPanel::decompositionFinished, panel, [&] {
    if (panel->result()) seen.push_back({panel->result()->query, panel->result()->key});
  });
  REQUIRE(w.openWorkspace(path));
  const bool shown = qkShows(*panel, 1, 2, 20, 9);
  INFO(panel->status().toStdString());
  REQUIRE(shown);
  const Model oracle = load_model("demo:induction");
  checkAgainstCore(*panel, coreQk(oracle, *w.trace(), 1, 2, 20, 9));
  for (const auto& [q, k] : seen) {
    CAPTURE(q, k);
    CHECK((q == 20 && k == 9));
  }
}

TEST_CASE("QK decomposition figure: component names longer than a token label are drawn whole in the export",
          "[ui][qkdecomp][legibility]") {
  ensureApp();
  // tiny-decoder has learned positions and biases: "embed.positions", "layer0.attn_bias" are
  // longer than the 14 characters token labels are cut at.
  auto model = qkTinyModel("tiny-decoder", 5);
  auto trace = runOn(*model, kRepeating);
  const QkDecomposition r = coreQk(*model, *trace, 1, 0, 9, 3);
  std::vector<std::string> names = r.rows;
  names.insert(names.end(), r.columns.begin(), r.columns.end());
  REQUIRE(std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.size() > 14; }));
  FigureSpec spec;
  spec.mapping = signedEffectMapping();
  const atlas_test::SvgXml xml = atlas_test::readSvgXml(figureSvg(heatmapFigureContent(qkScoreMatrix(r), spec)));
  INFO(xml.describe());
  REQUIRE(xml.wellFormed());
  for (const std::string& n : names) {
    CAPTURE(n);
    CHECK(std::count(xml.texts.begin(), xml.texts.end(), QString::fromStdString(n)) >= 1);
  }
  CHECK(std::none_of(xml.texts.begin(), xml.texts.end(), [](const QString& t) { return t.endsWith(QChar(0x2026)); }));
}

TEST_CASE("QK decomposition in the window: a click on a Transformer-XL memory column splits that earlier key",
          "[ui][qkdecomp][xl]") {
  // 36 bytes: segments of 16, 16 and 4 tokens; segment 1 attends over segment 0's 16 keys first.
  uitest::RunWindow rw("preset:tiny-xl", "abcabcabcabcabcabcabcabcabcabcabcabc");
  QkDecompositionPanel* panel = openQkPanel(rw);
  rw.w.setSelection({"decoder", "self_attn", 1, 2, 1});
  rw.settle();
  REQUIRE(rw.w.selection().segment == 1);
  HeatmapView* heatmap = uitest::heatmapView(rw.w);
  REQUIRE(heatmap->data().rows == 16);
  REQUIRE(heatmap->data().cols == 32);  // 16 memory columns, then the segment's own 16
  const Model oracle = load_model("preset:tiny-xl");
  // Row 3 of segment 1 is token 19; memory column 5 is token 5 of the text (segment 0).
  clickHeatmapCell(heatmap, 3, 5);
  REQUIRE(qkShows(*panel, 1, 2, 19, 5));
  checkAgainstCore(*panel, coreQk(oracle, *rw.w.trace(), 1, 2, 19, 5));
  // Column 16 + 2 is the segment's own token 18.
  clickHeatmapCell(heatmap, 3, 18);
  REQUIRE(qkShows(*panel, 1, 2, 19, 18));
  checkAgainstCore(*panel, coreQk(oracle, *rw.w.trace(), 1, 2, 19, 18));
}
