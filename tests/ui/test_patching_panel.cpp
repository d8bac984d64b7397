// The activation-patching and logit-attribution panels (ui/tools/patching_panel.h,
// ui/tools/dla_panel.h): each heatmap shows the core computation's values (the oracle is the core
// call on the same spec), a click selects that layer and head, a cancelled grid keeps its finished
// cells, a model switch or other tokens clear a result, refusals are shown in the panel, a long
// estimate waits for a second press, and the state survives a workspace round trip.
#include <catch2/catch.hpp>

#include <QImage>
#include <QJsonArray>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "core/analysis/logit_attribution.h"
#include "core/analysis/patching.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/panels/variant_panel.h"
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/views/heatmap_view.h"
#include "ui/workspace.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::runOn;

namespace {

const std::string kClean = "the cat sat";
const std::string kCorrupted = "the bat sat";

std::shared_ptr<const Model> tinyModel(const char* preset, uint64_t seed) {
  const ModelConfig c = preset_test::small_preset_config(preset);
  return std::make_shared<const Model>(c, init_params(c, seed));
}

// The core grid for the same spec, on the same tokens.
PatchResult corePatching(const Model& model, const PatchSpec& spec) {
  return activation_patching(model, model.tokenize(kClean, "").first, model.tokenize(kCorrupted, "").first, spec,
                             RunOptions{});
}

bool runPanel(PatchingPanel& panel) {
  QSignalSpy done(&panel, &PatchingPanel::patchingFinished);
  if (!panel.startPatching()) return false;
  REQUIRE(done.wait(60000));
  return true;
}

const HeatmapData& shownGrid(VariantPanel* plots) {
  plots->ensureBuilt();
  REQUIRE(!plots->plots().empty());
  plots->setCurrentPlot(0);
  return plots->matrixView()->data();
}

void clickCell(VariantPanel* plots, int row, int col) {
  HeatmapView* view = plots->matrixView();
  const HeatmapLayout L = layoutHeatmap(view, QRectF(view->rect()), view->data(), view->heatmapStyle(), view->viewWindow());
  QTest::mouseClick(view, Qt::LeftButton, {}, L.cellRect(row, col).center().toPoint());
}

}  // namespace

TEST_CASE("patching panel: the grid equals activation_patching's, a click selects, the figure exports",
          "[ui][patching]") {
  ensureApp();
  auto model = tinyModel("tiny-decoder", 21);
  auto trace = runOn(*model, kClean);
  PatchingPanel panel;
  panel.resize(800, 650);
  panel.show();
  panel.setRun(model, trace);
  panel.setCorruptedText(QString::fromStdString(kCorrupted));

  SECTION("k: each head's keys, layers x heads, as the core grid") {
    panel.setChoice(PatchSite::K, PatchDirection::Noise, PatchMetric::KL, "", "");
    REQUIRE(runPanel(panel));
    INFO(panel.status().toStdString());
    REQUIRE(panel.result().has_value());
    PatchSpec spec;
    spec.site = PatchSite::K;
    spec.direction = PatchDirection::Noise;
    spec.metric = PatchMetric::KL;
    const PatchResult want = corePatching(*model, spec);
    REQUIRE(want.shape == std::vector<int64_t>{2, 4});
    const HeatmapData& shown = shownGrid(panel.plotPanel());
    REQUIRE(shown.rows == 2);
    REQUIRE(shown.cols == 4);
    CHECK(shown.colLabels == QStringList{"H0", "H1", "H2", "H3"});
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h) {
        const double v = want.normalised[size_t(patch_cell(want, l, h))];
        CHECK(shown.at(l, h) == Approx(std::isfinite(v) ? v : want.raw[size_t(patch_cell(want, l, h))]).epsilon(1e-5).margin(1e-6));
      }
  }

  SECTION("head: layers x heads of normalised values") {
    panel.setChoice(PatchSite::Head, PatchDirection::Denoise, PatchMetric::LogitDiff, "t", "a");
    REQUIRE(runPanel(panel));
    INFO(panel.status().toStdString());
    REQUIRE(panel.result().has_value());
    CHECK(panel.result()->complete);
    PatchSpec spec;
    spec.site = PatchSite::Head;
    spec.metric = PatchMetric::LogitDiff;
    spec.token_a = 't';
    spec.token_b = 'a';
    const PatchResult want = corePatching(*model, spec);
    REQUIRE(want.clean != want.corrupted);
    const HeatmapData& shown = shownGrid(panel.plotPanel());
    REQUIRE(shown.rows == 2);
    REQUIRE(shown.cols == 4);
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h)
        CHECK(shown.at(l, h) == Approx(want.normalised[size_t(patch_cell(want, l, h))]).epsilon(1e-5).margin(1e-6));
    CHECK(shown.colLabels == QStringList{"H0", "H1", "H2", "H3"});
    CHECK(shown.mask.empty());

    QSignalSpy layers(&panel, &PatchingPanel::layerPicked), heads(&panel, &PatchingPanel::headPicked);
    clickCell(panel.plotPanel(), 1, 2);
    REQUIRE(layers.count() == 1);
    REQUIRE(heads.count() == 1);
    CHECK(layers.at(0).at(0).toInt() == 1);
    CHECK(heads.at(0).at(0).toInt() == 2);

    // The selected head's maps in both runs, side by side: clean left, corrupted right.
    panel.setSelection(AttentionSelection{"decoder", "self_attn", 1, 2});
    VariantPanel* plots = panel.plotPanel();
    plots->ensureBuilt();
    REQUIRE(plots->plots().size() == 2);
    const HeatmapData& side = plots->plots()[1].matrix;
    const int L = int(trace->source_tokens.size());
    REQUIRE(side.cols == 2 * L + 1);
    CHECK(side.title.startsWith("clean | corrupted: decoder self-attention, layer 1"));
    const auto corrupted = runOn(*model, kCorrupted);
    const TracedArray* mapB = corrupted->find("decoder.layer1.self_attn");  // [H, L, L]
    const TracedArray* mapA = trace->find("decoder.layer1.self_attn");
    REQUIRE(mapA);
    REQUIRE(mapB);
    for (int q = 0; q < L; ++q)
      for (int k = 0; k <= q; ++k) {
        const size_t at = size_t((2 * L + q) * L + k);  // head 2
        CHECK(side.at(q, k) == Approx(mapA->tensor.data[at]).margin(1e-6));
        CHECK(side.at(q, L + 1 + k) == Approx(mapB->tensor.data[at]).margin(1e-6));
      }

    QTemporaryDir dir;
    plots->setCurrentPlot(0);
    for (const char* ext : {"png", "svg", "pdf", "npy"}) {
      const QString path = dir.filePath(QString("grid.") + ext);
      plots->exportCurrent(path, 100);
      CHECK(QFileInfo(path).size() > 100);
    }
    CHECK(QSvgRenderer(dir.filePath("grid.svg")).isValid());
  }

  SECTION("resid: layers x positions, the position's token in the column label") {
    panel.setChoice(PatchSite::Resid, PatchDirection::Noise, PatchMetric::Prob, "t");
    REQUIRE(runPanel(panel));
    PatchSpec spec;
    spec.site = PatchSite::Resid;
    spec.direction = PatchDirection::Noise;
    spec.metric = PatchMetric::Prob;
    spec.token_a = 't';
    const PatchResult want = corePatching(*model, spec);
    const HeatmapData& shown = shownGrid(panel.plotPanel());
    REQUIRE(shown.rows == int(want.shape[0]));
    REQUIRE(shown.cols == int(want.shape[1]));
    for (int l = 0; l < shown.rows; ++l)
      for (int p = 0; p < shown.cols; ++p)
        CHECK(shown.at(l, p) == Approx(want.normalised[size_t(patch_cell(want, l, p))]).epsilon(1e-5).margin(1e-6));
    CHECK(shown.rowLabels.front() == "emb");
    CHECK(shown.colLabels.value(4).startsWith("4 "));
    // A click on a position column picks that token.
    QSignalSpy tokens(&panel, &PatchingPanel::tokenPicked);
    clickCell(panel.plotPanel(), 1, 4);
    REQUIRE(tokens.count() == 1);
    CHECK(tokens.at(0).at(0).toInt() == 4);
  }

  SECTION("head-pos: the chosen position's layers x heads slice") {
    panel.setChoice(PatchSite::HeadPos, PatchDirection::Denoise, PatchMetric::KL);
    REQUIRE(runPanel(panel));
    PatchSpec spec;
    spec.site = PatchSite::HeadPos;
    spec.metric = PatchMetric::KL;
    const PatchResult want = corePatching(*model, spec);
    panel.setSlice(4);  // the differing token
    const HeatmapData& shown = shownGrid(panel.plotPanel());
    REQUIRE(shown.cols == 4);
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h)
        CHECK(shown.at(l, h) == Approx(want.normalised[size_t(patch_cell(want, l, h, 4))]).epsilon(1e-5).margin(1e-6));
    CHECK(shown.title.contains("position 4"));
  }
}

TEST_CASE("patching panel: a cancel keeps the finished cells and masks the rest", "[ui][patching]") {
  ensureApp();
  auto model = tinyModel("tiny-decoder", 22);
  PatchingPanel panel;
  panel.setRun(model, runOn(*model, kClean));
  panel.setCorruptedText(QString::fromStdString(kCorrupted));
  panel.setChoice(PatchSite::HeadPos, PatchDirection::Denoise, PatchMetric::KL);
  panel.setCellLimit(5);  // cancelled before the sixth cell
  REQUIRE(runPanel(panel));
  INFO(panel.status().toStdString());
  REQUIRE(panel.result().has_value());
  const PatchResult& got = *panel.result();
  CHECK_FALSE(got.complete);
  CHECK(panel.status().contains("Cancelled: 5 of 88 cells"));
  PatchSpec spec;
  spec.site = PatchSite::HeadPos;
  spec.metric = PatchMetric::KL;
  const PatchResult want = corePatching(*model, spec);
  REQUIRE(got.raw.size() == want.raw.size());
  for (size_t i = 0; i < got.raw.size(); ++i) {
    CAPTURE(i);
    if (i < 5) CHECK(got.raw[i] == Approx(want.raw[i]).epsilon(1e-6).margin(1e-9));
    else CHECK(std::isnan(got.raw[i]));
  }
  // Shown: cells 0..4 are layer 0, head 0, positions 0..4; the slice at position 5 is all masked
  // but for nothing, the slice at position 2 has its layer-0 head-0 cell.
  panel.setSlice(2);
  const HeatmapData& at2 = shownGrid(panel.plotPanel());
  REQUIRE(at2.mask.size() == 8);
  CHECK(at2.mask[0] == 1);
  for (size_t i = 1; i < 8; ++i) CHECK(at2.mask[i] == 0);
  CHECK(at2.title.contains("cancelled"));

  // The Cancel button's path: a new run cancelled at once ends without a crash, saying so.
  panel.setCellLimit(0);
  QSignalSpy done(&panel, &PatchingPanel::patchingFinished);
  REQUIRE(panel.startPatching());
  panel.cancelPatching();
  REQUIRE(done.wait(60000));
  CHECK(panel.status().contains("ancel"));
}

TEST_CASE("patching panel: refusals are shown, a long estimate waits for a second press, a model switch clears",
          "[ui][patching]") {
  ensureApp();
  auto first = tinyModel("tiny-decoder", 1);
  auto second = tinyModel("tiny-decoder", 2);
  PatchingPanel panel;
  panel.setRun(first, runOn(*first, kClean));
  panel.setChoice(PatchSite::Head, PatchDirection::Denoise, PatchMetric::KL);

  // Unequal token counts: the engine's message, no run.
  panel.setCorruptedText("the cats sat");
  CHECK_FALSE(panel.startPatching());
  CHECK(panel.status().contains("the clean input is 11 tokens and the corrupted input 12"));
  CHECK_FALSE(panel.isRunning());
  // A logit difference without its tokens.
  panel.setCorruptedText(QString::fromStdString(kCorrupted));
  panel.setChoice(PatchSite::Head, PatchDirection::Denoise, PatchMetric::LogitDiff, "", "a");
  CHECK_FALSE(panel.startPatching());
  CHECK(panel.status().contains("token A"));

  // Every estimate is "long" at a 0 s limit: the first press measures and waits.
  panel.setChoice(PatchSite::Head, PatchDirection::Denoise, PatchMetric::KL);
  panel.setLongRunSeconds(0);
  REQUIRE(runPanel(panel));
  CHECK_FALSE(panel.result().has_value());
  CHECK(panel.forwardSeconds() >= 0);
  CHECK(panel.status().contains("10 forwards"));  // 2 x 4 heads + the two recording runs
  CHECK(panel.status().contains("Press Run again"));
  REQUIRE(runPanel(panel));
  REQUIRE(panel.result().has_value());

  // The same tokens again keep the result; a model switch clears it.
  panel.setRun(first, runOn(*first, kClean));
  CHECK(panel.result().has_value());
  panel.setRun(second, runOn(*second, kClean));
  CHECK_FALSE(panel.result().has_value());
  CHECK(panel.status().contains("changed"));
  panel.plotPanel()->ensureBuilt();
  CHECK(panel.plotPanel()->plots().empty());

  // A switch mid-run drops the old model's grid.
  panel.setLongRunSeconds(1e9);
  QSignalSpy done(&panel, &PatchingPanel::patchingFinished);
  REQUIRE(panel.startPatching());
  panel.setRun(first, runOn(*first, kClean));
  REQUIRE(done.wait(60000));
  CHECK_FALSE(panel.result().has_value());
  CHECK(panel.status().contains("changed"));
}

TEST_CASE("patching and attribution state survive a workspace round trip, for their own tokens only",
          "[ui][patching][workspace]") {
  ensureApp();
  auto model = tinyModel("tiny-decoder", 23);
  auto trace = runOn(*model, kClean);
  PatchingPanel panel;
  panel.setRun(model, trace);
  panel.setCorruptedText(QString::fromStdString(kCorrupted));
  panel.setChoice(PatchSite::HeadPos, PatchDirection::Noise, PatchMetric::Loss, "t");
  panel.setCellLimit(7);  // a partial grid: its NaN cells go through JSON as null
  REQUIRE(runPanel(panel));
  REQUIRE(panel.result().has_value());
  DlaPanel dla;
  dla.setRun(model, trace);
  dla.setChoice("t", "a", 3);
  QSignalSpy attributed(&dla, &DlaPanel::attributionFinished);
  REQUIRE(dla.startAttribution());
  REQUIRE(attributed.wait(60000));
  REQUIRE(dla.result().has_value());

  Workspace w;
  w.model = "preset:tiny-decoder";
  w.tools["patching"] = panel.saveState();
  w.tools["dla"] = dla.saveState();
  const Workspace back = workspaceFromJson(workspaceToJson(w), "test.atlas");

  PatchingPanel restored;
  restored.restoreState(back.tools["patching"].toObject());
  CHECK(restored.corruptedText() == QString::fromStdString(kCorrupted));
  CHECK_FALSE(restored.result().has_value());  // no run yet
  restored.setRun(model, runOn(*model, "the cat sag"));  // other tokens: not shown
  CHECK_FALSE(restored.result().has_value());
  PatchingPanel again;
  again.restoreState(back.tools["patching"].toObject());
  QSignalSpy maps(&again, &PatchingPanel::patchingFinished);
  again.setRun(model, runOn(*model, kClean));
  REQUIRE(again.result().has_value());
  // The corrupted run is traced again for the clean | corrupted maps of the selected head.
  REQUIRE(maps.wait(60000));
  again.setSelection(AttentionSelection{"decoder", "self_attn", 0, 1});
  again.plotPanel()->ensureBuilt();
  CHECK(again.plotPanel()->plots().size() == 2);
  const PatchResult& a = *panel.result();
  const PatchResult& b = *again.result();
  CHECK(b.shape == a.shape);
  CHECK(b.complete == a.complete);
  CHECK(b.spec.site == PatchSite::HeadPos);
  CHECK(b.spec.direction == PatchDirection::Noise);
  REQUIRE(b.raw.size() == a.raw.size());
  for (size_t i = 0; i < a.raw.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(a.raw[i])) CHECK(std::isnan(b.raw[i]));
    else CHECK(b.raw[i] == a.raw[i]);
  }
  CHECK(again.status().contains("Restored"));

  DlaPanel dlaBack;
  dlaBack.restoreState(back.tools["dla"].toObject());
  dlaBack.setRun(model, runOn(*model, kClean));
  REQUIRE(dlaBack.result().has_value());
  CHECK(dlaBack.result()->head == dla.result()->head);
  CHECK(dlaBack.result()->logit == dla.result()->logit);

  // A damaged state is refused in the panel's status, not applied.
  QJsonObject bad = back.tools["patching"].toObject();
  QJsonObject grid = bad["result"].toObject();
  grid["raw"] = QJsonArray({1.0, 2.0});
  bad["result"] = grid;
  PatchingPanel damaged;
  damaged.restoreState(bad);
  damaged.setRun(model, runOn(*model, kClean));
  CHECK_FALSE(damaged.result().has_value());
  CHECK(damaged.status().contains("not restored"));
  // An unknown tool is refused by the file's parser, naming it.
  QByteArray json = workspaceToJson(w);
  json.replace("\"dla\"", "\"bogus\"");
  CHECK_THROWS_WITH(workspaceFromJson(json, "x.atlas"), Catch::Contains("tools.bogus"));
}

TEST_CASE("logit attribution panel: heads equal logit_attribution's, parts sum to the logit, a click selects",
          "[ui][dla]") {
  ensureApp();
  auto model = tinyModel("tiny-llama", 31);
  auto trace = runOn(*model, kClean);
  DlaPanel panel;
  panel.resize(800, 600);
  panel.show();
  panel.setRun(model, trace);
  panel.setChoice("t", "a", 5);
  QSignalSpy done(&panel, &DlaPanel::attributionFinished);
  REQUIRE(panel.startAttribution());
  REQUIRE(done.wait(60000));
  INFO(panel.status().toStdString());
  REQUIRE(panel.result().has_value());

  DlaRequest req;
  req.positions = {5};
  req.token = 't';
  req.against = 'a';
  const LogitAttribution want = logit_attribution(*model, trace->source_tokens, req);
  const HeatmapData& heads = shownGrid(panel.plotPanel());
  REQUIRE(heads.rows == int(want.layers));
  REQUIRE(heads.cols == int(want.heads));
  for (int l = 0; l < heads.rows; ++l)
    for (int h = 0; h < heads.cols; ++h) CHECK(heads.at(l, h) == Approx(want.head_part(0, l, h)).margin(1e-5));
  const std::vector<PanelPlot>& plots = panel.plotPanel()->plots();
  REQUIRE(plots.size() == 2);
  const HeatmapData& bars = plots[1].matrix;
  REQUIRE(bars.rowLabels.back() == "logit");
  REQUIRE(bars.rowLabels[bars.rows - 2] == "total");
  double sum = 0;
  for (int i = 0; i < bars.rows - 2; ++i) sum += bars.at(i, 0);
  CHECK(sum == Approx(want.logit[0]).margin(1e-3));  // the parts add up to the model's logit
  CHECK(bars.at(bars.rows - 1, 0) == Approx(want.logit[0]).margin(1e-5));

  QSignalSpy layers(&panel, &DlaPanel::layerPicked), picked(&panel, &DlaPanel::headPicked);
  clickCell(panel.plotPanel(), 1, 3);
  REQUIRE(picked.count() == 1);
  CHECK(layers.at(0).at(0).toInt() == 1);
  CHECK(picked.at(0).at(0).toInt() == 3);

  // Other tokens clear it; a contrast without a target is refused in the panel.
  panel.setRun(model, runOn(*model, kClean + "s"));
  CHECK_FALSE(panel.result().has_value());
  panel.setChoice("", "a");
  CHECK_FALSE(panel.startAttribution());
  CHECK(panel.status().contains("give the target token"));
  // A model the attribution does not cover: its refusal, in the panel.
  auto xl = tinyModel("tiny-xl", 3);
  panel.setRun(xl, runOn(*xl, "one two"));
  panel.setChoice("");
  CHECK_FALSE(panel.startAttribution());
  CHECK_FALSE(panel.status().isEmpty());
  CHECK_FALSE(panel.status().contains("Restored"));
}

TEST_CASE("the main window offers activation patching and logit attribution beside the sweep", "[ui][patching]") {
  uitest::RunWindow rw("preset:tiny-decoder", QString::fromStdString(kClean));
  auto* patching = uitest::part<PatchingPanel>(rw.w, "patchingPanel");
  auto* dla = uitest::part<DlaPanel>(rw.w, "dlaPanel");
  REQUIRE(patching);
  REQUIRE(dla);
  REQUIRE(uitest::dock(rw.w, "patchingDock"));
  REQUIRE(uitest::dock(rw.w, "dlaDock"));
  uitest::dock(rw.w, "patchingDock")->show();
  patching->setCorruptedText(QString::fromStdString(kCorrupted));
  patching->setChoice(PatchSite::Head, PatchDirection::Denoise, PatchMetric::KL);
  REQUIRE(runPanel(*patching));
  REQUIRE(patching->result().has_value());
  // A click on a grid cell selects that layer and head in the main views.
  patching->plotPanel()->ensureBuilt();
  patching->plotPanel()->setCurrentPlot(0);
  clickCell(patching->plotPanel(), 1, 3);
  CHECK(QTest::qWaitFor([&] { return rw.w.selection().layer == 1 && rw.w.selection().head == 3; }, 10000));
  // A new input clears the grid.
  rw.w.setSourceText("other text");
  CHECK(QTest::qWaitFor([&] { return !patching->result().has_value(); }, 60000));
}
