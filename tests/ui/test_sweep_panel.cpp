// The ablation sweep panel (ui/tools/sweep_panel.h): the heatmap shows the core sweep's effects at
// [layer, head] (checked by value and position on an input whose labels repeat), a click on a
// cell selects that layer and head, the figure exports and renders, and a result never
// outlives its input or model: other tokens or a model switch clear it, also mid-sweep.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QImage>
#include <QJsonArray>
#include <QJsonObject>
#include <QProgressBar>
#include <QPainter>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QTest>

#include "core/analysis/ablation_sweep.h"
#include "core/formats/model_io.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/tools/tool_run.h"
#include "ui/tools/sweep_figure.h"
#include "ui/tools/sweep_panel.h"
#include "ui/panels/variant_panel.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::runOn;

namespace {

int distinctColours(const QImage& img) {
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
  return colours.size();
}

}  // namespace

TEST_CASE("ablation sweep panel: effects at [layer, head], click selects, exports", "[ui][sweep]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  auto model = std::make_shared<const Model>(c, init_params(c, 21));
  const std::string text = "abab abab";  // repeated labels
  auto trace = runOn(*model, text);
  SweepPanel panel;
  panel.resize(700, 600);
  panel.show();
  panel.setRun(model, trace);
  panel.setChoice(SweepUnit::Heads, AblationMode::Mean, SweepMetric::Loss);
  QSignalSpy done(&panel, &SweepPanel::sweepFinished);
  REQUIRE(panel.startSweep());
  REQUIRE(done.wait(60000));
  INFO(panel.status().toStdString());
  REQUIRE(panel.result().has_value());

  SweepSpec spec;
  spec.mode = AblationMode::Mean;
  spec.metric = SweepMetric::Loss;
  const SweepResult want = ablation_sweep(*model, trace->source_tokens, {}, spec, RunOptions{});
  VariantPanel* plots = panel.plotPanel();
  plots->ensureBuilt();
  REQUIRE(plots->plots().size() == 1);
  plots->setCurrentPlot(0);
  const HeatmapData& shown = plots->matrixView()->data();
  REQUIRE(shown.rows == 2);
  REQUIRE(shown.cols == 4);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) CHECK(shown.at(l, h) == Approx(want.effect(l, h)).epsilon(1e-6).margin(1e-9));
  CHECK(shown.rowLabels == QStringList{"L0", "L1"});
  CHECK(shown.colLabels == QStringList{"H0", "H1", "H2", "H3"});
  CHECK(shown.valueName.contains("loss"));

  // A click on the cell of layer 1, head 3 picks both.
  QSignalSpy layers(&panel, &SweepPanel::layerPicked), heads(&panel, &SweepPanel::headPicked);
  HeatmapView* view = plots->matrixView();
  const HeatmapLayout L = layoutHeatmap(view, QRectF(view->rect()), view->data(), view->heatmapStyle(), view->viewWindow());
  QTest::mouseClick(view, Qt::LeftButton, {}, L.cellRect(1, 3).center().toPoint());
  REQUIRE(layers.count() == 1);
  REQUIRE(heads.count() == 1);
  CHECK(layers.at(0).at(0).toInt() == 1);
  CHECK(heads.at(0).at(0).toInt() == 3);

  // Exports: the PNG and the rendered SVG and PDF-free vector path both draw a figure.
  QTemporaryDir dir;
  plots->exportCurrent(dir.filePath("sweep.png"), 100);
  const QImage png(dir.filePath("sweep.png"));
  CHECK(png.width() > 300);
  CHECK(distinctColours(png) > 8);
  plots->exportCurrent(dir.filePath("sweep.svg"));
  QSvgRenderer svg(dir.filePath("sweep.svg"));
  REQUIRE(svg.isValid());
  QImage rendered(png.size(), QImage::Format_ARGB32);
  rendered.fill(Qt::white);
  QPainter painter(&rendered);
  svg.render(&painter);
  painter.end();
  CHECK(distinctColours(rendered) > 8);
  plots->exportCurrent(dir.filePath("sweep.npy"));
  plots->exportCurrent(dir.filePath("sweep.pdf"));
  CHECK(QFileInfo(dir.filePath("sweep.pdf")).size() > 1000);

  // The same tokens again (a re-run for another panel): the result stays.
  panel.setRun(model, runOn(*model, text));
  CHECK(panel.result().has_value());
  // Other tokens: cleared, and the panel says why.
  panel.setRun(model, runOn(*model, text + "b"));
  CHECK_FALSE(panel.result().has_value());
  plots->ensureBuilt();
  CHECK(plots->plots().empty());
  CHECK(panel.status().contains("changed"));
}

TEST_CASE("ablation sweep panel: a model switch mid-sweep drops the old model's result", "[ui][sweep]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  auto first = std::make_shared<const Model>(c, init_params(c, 1));
  auto second = std::make_shared<const Model>(c, init_params(c, 2));
  SweepPanel panel;
  panel.setRun(first, runOn(*first, "switch models while sweeping"));
  QSignalSpy done(&panel, &SweepPanel::sweepFinished);
  REQUIRE(panel.startSweep());
  panel.setRun(second, runOn(*second, "switch models while sweeping"));
  REQUIRE(done.wait(60000));
  CHECK_FALSE(panel.result().has_value());
  CHECK(panel.status().contains("changed"));
  // Refused sweeps say why: logit difference without tokens.
  panel.setChoice(SweepUnit::Heads, AblationMode::Zero, SweepMetric::LogitDiff, "", "b");
  CHECK_FALSE(panel.startSweep());
  CHECK(panel.status().contains("token A"));
}

TEST_CASE("ablation sweep panel: a long estimate is shown first and the sweep starts on the second press",
          "[ui][sweep]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  auto model = std::make_shared<const Model>(c, init_params(c, 5));
  SweepPanel panel;
  panel.setRun(model, runOn(*model, "abab abab"));
  panel.setChoice(SweepUnit::Heads, AblationMode::Zero, SweepMetric::KL);
  QSignalSpy done(&panel, &SweepPanel::sweepFinished);
  // Every estimate is "long" at a 0 s limit: the first press measures one forward and waits.
  panel.setLongRunSeconds(0);
  REQUIRE(panel.startSweep());
  REQUIRE(done.wait(60000));
  CHECK_FALSE(panel.result().has_value());
  CHECK(panel.forwardSeconds() >= 0);
  const int64_t forwards = c.n_layers * c.n_heads + 1;  // every head and the clean run
  INFO(panel.status().toStdString());
  CHECK(panel.status().contains(QString("%1 forwards at about").arg(forwards)));
  CHECK(panel.status().contains("Press Sweep again"));
  // The second press sweeps, with the measure already known (no second measure).
  REQUIRE(panel.startSweep());
  REQUIRE(done.wait(60000));
  REQUIRE(panel.result().has_value());
  CHECK(panel.result()->values.size() == size_t(c.n_layers * c.n_heads));
  // A third press asks again: a confirmation is good for one sweep.
  CHECK_FALSE(panel.startSweep());
  CHECK(panel.status().contains("Press Sweep again"));
  // Another input forgets the measure; a generous limit then sweeps on the first press.
  panel.setRun(model, runOn(*model, "baba baba"));
  CHECK(panel.forwardSeconds() < 0);
  panel.setLongRunSeconds(1e9);
  REQUIRE(panel.startSweep());
  REQUIRE(done.wait(60000));
  CHECK(panel.result().has_value());
  CHECK(panel.forwardSeconds() >= 0);
}

TEST_CASE("ablation sweep panel: Cancel keeps the finished cells, each equal to the whole sweep's", "[ui][sweep]") {
  ensureApp();
  ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  c.n_layers = 12;  // 48 cells of a 256-token input: far more than the cancel takes to land
  auto model = std::make_shared<const Model>(c, init_params(c, 4));
  const std::string text(256, 'r');
  SweepPanel panel;
  panel.setRun(model, runOn(*model, text));
  QSignalSpy done(&panel, &SweepPanel::sweepFinished);
  auto* bar = panel.findChild<QProgressBar*>();
  REQUIRE(bar);
  QObject::connect(bar, &QProgressBar::valueChanged, &panel, [&panel](int v) {
    if (v >= 3) panel.cancelSweep();  // the clean run and two cells are done
  });
  REQUIRE(panel.startSweep());
  REQUIRE(done.wait(120000));
  REQUIRE(panel.result().has_value());
  const SweepResult& kept = *panel.result();
  CHECK_FALSE(kept.complete);
  const SweepResult whole = ablation_sweep(*model, model->tokenize(text, "").first, {}, SweepSpec{}, RunOptions{});
  int finished = 0;
  for (size_t k = 0; k < kept.values.size(); ++k)
    if (std::isfinite(kept.values[k])) {
      CHECK(kept.values[k] == whole.values[k]);
      ++finished;
    }
  CHECK(finished >= 2);
  CHECK(finished < 48);
  CHECK(panel.status().startsWith(QString("cancelled after %1 of 48 cells: ").arg(finished)));
  // The figure hatches the unfinished cells.
  const HeatmapData d = sweepHeatmap(kept);
  CHECK(d.masked(11, 3));
  CHECK_FALSE(d.masked(0, 0));
}

TEST_CASE("ablation sweep panel: settings and cells round-trip through the workspace state, for its tokens only",
          "[ui][sweep][workspace]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  auto model = std::make_shared<const Model>(c, init_params(c, 6));
  const auto trace = runOn(*model, "save the sweep");
  SweepPanel first;
  first.setRun(model, trace);
  first.setChoice(SweepUnit::Heads, AblationMode::Mean, SweepMetric::LogitDiff, "a", "b");
  QSignalSpy done(&first, &SweepPanel::sweepFinished);
  REQUIRE(first.startSweep());
  REQUIRE(done.wait(60000));
  REQUIRE(first.result().has_value());
  const QJsonObject state = first.saveState();

  SweepPanel other;  // a run of other tokens: the result waits, never shown for them
  other.setRun(model, runOn(*model, "other tokens!!"));
  other.restoreState(state);
  CHECK_FALSE(other.result().has_value());
  CHECK(other.spec().mode == AblationMode::Mean);
  CHECK(other.spec().metric == SweepMetric::LogitDiff);
  other.setRun(model, runOn(*model, "save the sweep"));  // its tokens: shown
  REQUIRE(other.result().has_value());
  CHECK(other.result()->values == first.result()->values);
  CHECK(other.result()->clean == first.result()->clean);
  CHECK(other.result()->row_labels == first.result()->row_labels);
  CHECK(other.result()->spec.token_a == first.result()->spec.token_a);
  CHECK(other.status().contains("Restored"));

  // A cancelled sweep's NaN cells come back NaN; damaged states are refused naming the key.
  QJsonObject partial = state;
  QJsonObject g = partial["result"].toObject();
  QJsonArray values = g["values"].toArray();
  values[5] = QJsonValue::Null;
  g["values"] = values;
  g["complete"] = false;
  partial["result"] = g;
  SweepPanel third;
  third.setRun(model, trace);
  third.restoreState(partial);
  REQUIRE(third.result().has_value());
  CHECK(std::isnan(third.result()->values[5]));
  CHECK_FALSE(third.result()->complete);
  g["values"] = QJsonArray{1.0, 2.0};
  partial["result"] = g;
  SweepPanel fourth;
  fourth.setRun(model, trace);
  fourth.restoreState(partial);
  CHECK_FALSE(fourth.result().has_value());
  CHECK(fourth.status().contains("\"values\" must hold layers x heads = 8 values"));
  partial["metric"] = "entropy";
  fourth.restoreState(partial);
  CHECK(fourth.status().contains("unknown choice \"entropy\""));
}

TEST_CASE("durations read as a person says them", "[ui][sweep]") {
  CHECK(durationText(0.4) == "less than 1 s");
  CHECK(durationText(12.4) == "12 s");
  CHECK(durationText(200) == "3 min 20 s");
  CHECK(durationText(180) == "3 min");
  CHECK(durationText(3900) == "1 h 5 min");
  CHECK(durationText(7200) == "2 h");
  CHECK(durationText(-1) == "an unknown time");
}

TEST_CASE("the main window offers the ablation sweep on the current run", "[ui][sweep]") {
  uitest::RunWindow rw("preset:tiny-encoder-decoder", "one two one two");
  SweepPanel* panel = uitest::sweepPanel(rw.w);
  REQUIRE(panel);
  uitest::dock(rw.w, "sweepDock")->show();
  panel->setChoice(SweepUnit::Heads, AblationMode::Zero, SweepMetric::KL);
  QSignalSpy done(panel, &SweepPanel::sweepFinished);
  REQUIRE(panel->startSweep());
  REQUIRE(done.wait(60000));
  REQUIRE(panel->result().has_value());
  CHECK(panel->result()->layers == 4);  // 2 encoder + 2 decoder layers, numbered over both stacks
  panel->plotPanel()->ensureBuilt();
  panel->plotPanel()->setCurrentPlot(0);
  CHECK(panel->plotPanel()->matrixView()->data().rowLabels == QStringList{"E0", "E1", "D0", "D1"});
  // Row 3 is decoder layer 1: picking it selects the decoder's self-attention, layer 1.
  emit panel->layerPicked(3);
  CHECK(rw.w.selection().stack == "decoder");
  CHECK(rw.w.selection().layer == 1);
  emit panel->headPicked(2);
  CHECK(rw.w.selection().head == 2);
}
