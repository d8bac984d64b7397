// The Compare panel and views (ui/tools/compare_panel.h, ui/tools/compare_view.h): A - B equals the two
// runs' traced maps subtracted here, by position, with labels that show where the inputs differ
// ("a|e", on inputs whose labels repeat); side by side keeps A left and B right of a masked
// separator; the per-head grid equals the core's table; the views follow the main window's
// selection; B is re-run when A changes and never shown against an older A; inputs of other
// lengths get the reason, not a wrong picture.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "core/analysis/attention_compare.h"
#include "core/formats/model_io.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/compare_view.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/panels/variant_panel.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::runOn;

namespace {

const HeatmapData& shownPlot(VariantPanel* panel, const QString& name) {
  panel->ensureBuilt();
  for (int i = 0; i < static_cast<int>(panel->plots().size()); ++i)
    if (panel->plots()[size_t(i)].name == name) {
      panel->setCurrentPlot(i);
      return panel->matrixView()->data();
    }
  FAIL("no plot named " << name.toStdString());
  static HeatmapData none;
  return none;
}

}  // namespace

TEST_CASE("compare views: difference, side by side and per-head grid by value and position", "[ui][compare]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 8));
  const auto a = runOn(model, "abab");
  const auto b = runOn(model, "abeb");
  AttentionSelection sel;
  sel.stack = "decoder";
  sel.kind = "self_attn";
  sel.layer = 1;
  sel.head = 2;
  const HeatmapData d = compareDifference(*a, *b, sel);
  const Tensor& ta = a->find("decoder.layer1.self_attn")->tensor;
  const Tensor& tb = b->find("decoder.layer1.self_attn")->tensor;
  REQUIRE(d.rows == 4);
  REQUIRE(d.cols == 4);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      CHECK(d.at(i, j) == Approx(ta.data[size_t((2 * 4 + i) * 4 + j)] - tb.data[size_t((2 * 4 + i) * 4 + j)]));
  CHECK(d.rowLabels == QStringList{"a", "b", "a|e", "b"});
  CHECK(d.masked(0, 1));  // causal: masked in both runs
  const HeatmapData s = compareSideBySide(*a, *b, sel);
  REQUIRE(s.cols == 9);
  for (int i = 0; i < 4; ++i) {
    CHECK(s.masked(i, 4));  // the separator
    for (int j = 0; j <= i; ++j) {
      CHECK(s.at(i, j) == Approx(ta.data[size_t((2 * 4 + i) * 4 + j)]));
      CHECK(s.at(i, 5 + j) == Approx(tb.data[size_t((2 * 4 + i) * 4 + j)]));
    }
  }
  CHECK(s.colLabels.first() == "A a");
  CHECK(s.colLabels.at(5) == "B a");
  const HeatmapData g = compareHeadGrid(*a, *b, sel);
  const auto table = head_difference_tables(compare_attention(*a, *b)).front();
  REQUIRE(g.rows == 2);
  REQUIRE(g.cols == 4);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) CHECK(g.at(l, h) == Approx(table.values[size_t(l * 4 + h)]));
  const auto longer = runOn(model, "ababa");
  CHECK_THROWS_WITH(compareDifference(*a, *longer, sel), Catch::Contains("same number of tokens"));
}

TEST_CASE("compare panel: B follows A, the selection is linked, other lengths are explained", "[ui][compare]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  auto model = std::make_shared<const Model>(c, init_params(c, 8));
  ComparePanel panel;
  panel.resize(700, 600);
  panel.show();
  AttentionSelection sel;
  sel.stack = "decoder";
  sel.kind = "self_attn";
  panel.setSelection(sel);
  auto a = runOn(*model, "abab");
  panel.setRun(model, a);
  CHECK_FALSE(panel.compare());  // B would be A
  CHECK(panel.status().contains("B would be A"));
  panel.setB("", "abeb");
  QSignalSpy done(&panel, &ComparePanel::compared);
  REQUIRE(panel.compare());
  REQUIRE(done.wait(30000));
  INFO(panel.status().toStdString());
  REQUIRE(panel.traceB());
  const auto b = runOn(*model, "abeb");
  CHECK(shownPlot(panel.plotPanel(), "A \u2212 B").values == compareDifference(*a, *b, sel).values);
  // The main window's selection moves: the plot follows.
  sel.layer = 1;
  sel.head = 3;
  panel.setSelection(sel);
  CHECK(shownPlot(panel.plotPanel(), "A \u2212 B").values == compareDifference(*a, *b, sel).values);
  CHECK(shownPlot(panel.plotPanel(), "A \u2212 B").title.contains("layer 1, head 3"));
  // A click on the per-head grid's cell (1, 2) selects layer 1 and head 2.
  shownPlot(panel.plotPanel(), "per head: mean TV distance");
  QSignalSpy layers(&panel, &ComparePanel::layerPicked), heads(&panel, &ComparePanel::headPicked);
  HeatmapView* view = panel.plotPanel()->matrixView();
  const HeatmapLayout L = layoutHeatmap(view, QRectF(view->rect()), view->data(), view->heatmapStyle(), view->viewWindow());
  QTest::mouseClick(view, Qt::LeftButton, {}, L.cellRect(1, 2).center().toPoint());
  REQUIRE(layers.count() == 1);
  CHECK(layers.at(0).at(0).toInt() == 1);
  REQUIRE(heads.count() == 1);
  CHECK(heads.at(0).at(0).toInt() == 2);
  // Exports of every view.
  QTemporaryDir dir;
  for (int i = 0; i < static_cast<int>(panel.plotPanel()->plots().size()); ++i) {
    panel.plotPanel()->setCurrentPlot(i);
    for (const char* ext : {"svg", "pdf", "png", "npy"}) {
      const QString path = dir.filePath(QString("view%1.%2").arg(i).arg(ext));
      panel.plotPanel()->exportCurrent(path, 80);
      CHECK(QFileInfo(path).size() > 100);
    }
  }
  // A new run of A: the old B is dropped at once and B re-runs against the new A.
  auto a2 = runOn(*model, "abba");
  panel.setRun(model, a2);
  CHECK_FALSE(panel.traceB());
  REQUIRE(done.wait(30000));
  REQUIRE(panel.traceB());
  CHECK(shownPlot(panel.plotPanel(), "A \u2212 B").values == compareDifference(*a2, *b, sel).values);
  // Hidden, the panel does not run B on every new A; shown again, it runs B once.
  panel.hide();
  auto a3 = runOn(*model, "baba");
  panel.setRun(model, a3);
  CHECK_FALSE(panel.isRunning());
  CHECK_FALSE(panel.traceB());
  panel.show();
  REQUIRE(done.wait(30000));
  REQUIRE(panel.traceB());
  CHECK(shownPlot(panel.plotPanel(), "A \u2212 B").values == compareDifference(*a3, *b, sel).values);
  // B with another length: the reason instead of a picture.
  panel.setB("", "abebab");
  REQUIRE(panel.compare());
  REQUIRE(done.wait(30000));
  panel.plotPanel()->ensureBuilt();
  CHECK(panel.plotPanel()->plots().empty());
  panel.stop();
  CHECK_FALSE(panel.traceB());
}

TEST_CASE("compare panel: two models of the same shape on one input, from the main window", "[ui][compare]") {
  uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
  ComparePanel* panel = uitest::comparePanel(rw.w);
  REQUIRE(panel);
  uitest::dock(rw.w, "compareDock")->show();
  panel->setB("preset:tiny-decoder", "");
  QSignalSpy done(panel, &ComparePanel::compared);
  REQUIRE(panel->compare());
  REQUIRE(done.wait(60000));
  INFO(panel->status().toStdString());
  REQUIRE(panel->traceB());
  // B ran A's very tokens through the other model.
  CHECK(panel->traceB()->source_tokens.size() == rw.w.trace()->source_tokens.size());
  const Model other = load_model("preset:tiny-decoder");
  const RunResult want = other.forward(rw.w.trace()->source_tokens, {}, RunOptions{});
  CHECK(panel->traceB()->find("decoder.layer0.self_attn")->tensor.data ==
        want.trace.find("decoder.layer0.self_attn")->tensor.data);
}
