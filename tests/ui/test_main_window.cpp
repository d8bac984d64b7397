// The desktop window end to end on the real engine: load a preset, type, wait for the run,
// switch layer and head with the keyboard, and compare the heatmap's matrix with the Trace
// array read directly.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <algorithm>
#include <cmath>

#include "core/model/params.h"
#include "core/model/presets.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/views/model_view.h"
#include "ui/main_window/run_controller.h"
#include "ui/views/token_chips.h"
#include "ui/views/token_view.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

// Independent read of [heads, Lq, Lk] at (h, i, j).
float traced(const Trace& t, const std::string& name, int h, int i, int j) {
  const TracedArray* a = t.find(name);
  REQUIRE(a != nullptr);
  const int64_t lq = a->tensor.shape[1], lk = a->tensor.shape[2];
  return a->tensor.data[static_cast<size_t>((h * lq + i) * lk + j)];
}

void requireShows(const MainWindow& w, const std::string& name, int head) {
  const Trace& t = *w.trace();
  const HeatmapData& d = uitest::heatmapView(w)->data();
  const TracedArray* a = t.find(name);
  REQUIRE(a != nullptr);
  REQUIRE(d.rows == a->tensor.shape[1]);
  REQUIRE(d.cols == a->tensor.shape[2]);
  int mismatches = 0;
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < d.cols; ++j) {
      float expected;
      if (head >= 0) {
        expected = traced(t, name, head, i, j);
      } else {  // mean over heads, summed here
        double s = 0;
        for (int h = 0; h < a->tensor.shape[0]; ++h) s += traced(t, name, h, i, j);
        expected = static_cast<float>(s / a->tensor.shape[0]);
      }
      if (std::abs(d.at(i, j) - expected) > 1e-6f) ++mismatches;
    }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("the window runs a preset as the user types and shows the chosen head", "[ui][window]") {
  ensureApp();
  MainWindow w;
  w.resize(1100, 750);
  w.show();
  QApplication::setActiveWindow(&w);
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("the cat sat");
  w.loadModel("preset:tiny-encoder");
  REQUIRE(shown.wait(30000));
  REQUIRE(w.trace());
  CHECK(w.lastError().isEmpty());
  const int n0 = static_cast<int>(w.trace()->source_tokens.size());
  CHECK(n0 > 0);
  CHECK(uitest::sourceChips(w)->tokenCount() == n0);
  CHECK(w.selection().stack == "encoder");
  requireShows(w, "encoder.layer0.attn", 0);

  // Typing re-runs (debounced, off the UI thread).
  auto* edit = w.findChild<QPlainTextEdit*>("sourceEdit");
  REQUIRE(edit);
  edit->setFocus();
  edit->moveCursor(QTextCursor::End);
  shown.clear();
  QTest::keyClicks(edit, " on the mat");
  REQUIRE(shown.wait(30000));
  while (shown.wait(500)) {
  }  // let any trailing run land
  CHECK(uitest::sourceText(w) == "the cat sat on the mat");
  const int n1 = static_cast<int>(w.trace()->source_tokens.size());
  CHECK(n1 > n0);
  CHECK(uitest::heatmapView(w)->data().rows == n1);
  CHECK(uitest::sourceChips(w)->tokenCount() == n1);

  // Keyboard: ] next layer, . next head (shortcuts act when the heatmap has focus).
  uitest::heatmapView(w)->setFocus();
  QTest::keyClick(uitest::heatmapView(w), Qt::Key_BracketRight);
  QTest::keyClick(uitest::heatmapView(w), Qt::Key_Period);
  CHECK(w.selection().layer == 1);
  CHECK(w.selection().head == 1);
  requireShows(w, "encoder.layer1.attn", 1);
  QTest::keyClick(uitest::heatmapView(w), Qt::Key_BracketLeft);
  QTest::keyClick(uitest::heatmapView(w), Qt::Key_Comma);
  CHECK(w.selection().layer == 0);
  CHECK(w.selection().head == 0);
  // Typing "," and "." in the text box types them; it does not switch heads.
  edit->setFocus();
  shown.clear();
  QTest::keyClicks(edit, ".");
  CHECK(w.selection().head == 0);
  REQUIRE(shown.wait(30000));
  CHECK(uitest::sourceText(w).endsWith('.'));

  // Aggregates through the same selector path.
  AttentionSelection s = w.selection();
  s.head = HeadMean;
  w.setSelection(s);
  requireShows(w, "encoder.layer0.attn", HeadMean);

  // The model view opens a head when clicked.
  QSignalSpy clicked(uitest::modelView(w), &ModelView::headClicked);
  emit uitest::modelView(w)->headClicked(1, 2);
  CHECK(w.selection().layer == 1);
  CHECK(w.selection().head == 2);
  requireShows(w, "encoder.layer1.attn", 2);

  // Linked selection: pinning a heatmap row selects that token chip.
  uitest::heatmapView(w)->setPinnedRow(2);
  CHECK(uitest::sourceChips(w)->selected() == 2);
}

TEST_CASE("an encoder-decoder preset gets a target box and cross-attention", "[ui][window]") {
  ensureApp();
  MainWindow w;
  w.resize(1000, 700);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("hello world");
  w.setTargetText("bonjour");
  w.loadModel("preset:tiny-encoder-decoder");
  REQUIRE(shown.wait(30000));
  const Trace& t = *w.trace();
  REQUIRE_FALSE(t.target_tokens.empty());
  AttentionSelection s{"decoder", "cross_attn", 0, 0};
  w.setSelection(s);
  CHECK(w.selection().kind == "cross_attn");
  const HeatmapData& d = uitest::heatmapView(w)->data();
  CHECK(d.rows == static_cast<int>(t.target_tokens.size()));
  CHECK(d.cols == static_cast<int>(t.source_tokens.size()));
  requireShows(w, "decoder.layer0.cross_attn", 0);
}

TEST_CASE("Transformer-XL segments and Universal Transformer steps are in the main views", "[ui][window][catalogue]") {
  ensureApp();
  MainWindow w;
  w.resize(1100, 750);
  w.show();
  QApplication::setActiveWindow(&w);
  QSignalSpy shown(&w, &MainWindow::traceShown);
  auto settle = [&] {
    while (shown.wait(300)) {
    }  // the XL panel opening asks for scores: one more run
  };
  // 36 bytes: tiny-xl's segments of 16 are 16, 16 and 4 tokens; segment 1's keys are 16
  // memory tokens (segment 0) then its own 16.
  w.setSourceText("abababababababababababababababababab");
  w.loadModel("preset:tiny-xl");
  REQUIRE(shown.wait(60000));
  settle();
  INFO(w.lastError().toStdString());
  REQUIRE(w.lastError().isEmpty());
  auto* segmentSpin = w.findChild<QSpinBox*>("segmentSpin");
  auto* layerSpin = w.findChild<QSpinBox*>("layerSpin");
  REQUIRE(segmentSpin);
  REQUIRE(layerSpin);
  auto* modelDock = w.findChild<QDockWidget*>("modelDock");
  REQUIRE(modelDock);
  modelDock->show();
  modelDock->raise();

  w.setSelection({"decoder", "self_attn", 0, 0, 1});
  CHECK(w.selection().segment == 1);
  CHECK(segmentSpin->isVisible());
  CHECK(segmentSpin->value() == 1);
  CHECK(layerSpin->prefix() == "layer ");
  requireShows(w, "decoder.seg1.layer0.self_attn", 0);
  const HeatmapData& d = uitest::heatmapView(w)->data();
  REQUIRE(d.cols == 32);
  CHECK(d.colLabels[0].startsWith(QString::fromUtf8("\u21BA ")));   // memory key
  CHECK_FALSE(d.colLabels[16].startsWith(QString::fromUtf8("\u21BA ")));  // the segment's own
  CHECK(d.title.contains("segment 1"));
  CHECK_FALSE(uitest::tokenView(w)->data().heads.empty());
  // The grid shows segment 1's maps (built on a worker).
  REQUIRE(uitest::waitUntil([&] { return uitest::modelView(w)->gridData().segment == 1 &&
                                         !uitest::modelView(w)->gridData().thumbnails.empty(); }, 30000));
  CHECK(uitest::modelView(w)->gridData().at(0, 0).cols == 32);
  // Keyboard: ] moves to layer 1 of the same segment.
  uitest::heatmapView(w)->setFocus();
  QTest::keyClick(uitest::heatmapView(w), Qt::Key_BracketRight);
  CHECK(w.selection().layer == 1);
  CHECK(w.selection().segment == 1);
  requireShows(w, "decoder.seg1.layer1.self_attn", 0);
  // Moving the segment spin selects segment 2 (4 queries over 16 memory + 4 keys).
  segmentSpin->setValue(2);
  CHECK(w.selection().segment == 2);
  requireShows(w, "decoder.seg2.layer1.self_attn", 0);

  // Another model: a Universal Transformer's steps, no segments.
  QSignalSpy ready(&w, &MainWindow::modelReady);
  shown.clear();
  w.loadModel("preset:tiny-ut-act");
  REQUIRE(ready.wait(60000));
  REQUIRE(uitest::waitUntil([&] { return !shown.isEmpty(); }, 60000));
  settle();
  REQUIRE(w.lastError().isEmpty());
  const AttentionSelection u = w.selection();
  CHECK(u.stack == "decoder");
  CHECK(u.kind == "self_attn");
  CHECK(u.segment == 0);
  CHECK_FALSE(segmentSpin->isVisible());
  CHECK(layerSpin->prefix() == "step ");
  const HeatmapData& step = uitest::heatmapView(w)->data();
  REQUIRE_FALSE(step.empty());
  CHECK(step.title.contains(QString("step %1").arg(u.layer + 1)));
  requireShows(w, "decoder.step" + std::to_string(u.layer + 1) + ".self_attn", u.head);
  int steps = 0;
  while (w.trace()->find("decoder.step" + std::to_string(steps + 1) + ".self_attn")) ++steps;
  REQUIRE(steps >= 1);
  CHECK(layerSpin->minimum() == 1);
  CHECK(layerSpin->maximum() == steps);
  if (steps > 1) {  // ] is the next step
    w.setSelection({"decoder", "self_attn", 0, u.head});
    CHECK(layerSpin->value() == 1);
    uitest::heatmapView(w)->setFocus();
    QTest::keyClick(uitest::heatmapView(w), Qt::Key_BracketRight);
    CHECK(w.selection().layer == 1);
    CHECK(layerSpin->value() == 2);
    requireShows(w, "decoder.step2.self_attn", u.head);
  }
}

TEST_CASE("a bad model spec or input shows the core's message", "[ui][window]") {
  ensureApp();
  MainWindow w;
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  QSignalSpy failed(&w, &MainWindow::runError);
  w.setSourceText("abc");
  w.loadModel("preset:tiny-encoder");
  REQUIRE(shown.wait(30000));
  w.setSourceText("");
  REQUIRE(failed.wait(30000));
  CHECK_FALSE(w.lastError().isEmpty());
  CHECK(w.lastError() == failed.takeFirst().at(0).toString());
}

TEST_CASE("the run controller cancels stale runs and delivers only the newest", "[ui][runner]") {
  ensureApp();
  RunController rc;
  QSignalSpy loaded(&rc, &RunController::modelLoaded);
  rc.loadModel("preset:tiny-encoder");
  REQUIRE(loaded.wait(30000));
  QSignalSpy finished(&rc, &RunController::runFinished);
  for (const char* text : {"a", "ab", "abc", "abcd", "abcde"}) rc.requestRun(text, "");
  REQUIRE(finished.wait(30000));
  while (finished.wait(300)) {
  }
  REQUIRE(finished.size() >= 1);
  const auto result = finished.last().at(0).value<std::shared_ptr<const RunResult>>();
  REQUIRE(result);
  std::string joined;
  for (const auto& tok : result->trace.source_tokens) joined += tok.label;
  CHECK(joined.find("abcde") != std::string::npos);
  CHECK_FALSE(rc.isBusy());
}

TEST_CASE("the status bar says when weights are random (a preset) and not for a trained demo",
          "[ui][window][status]") {
  ensureApp();
  MainWindow w;
  w.resize(1100, 750);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  auto* status = w.findChild<QLabel*>("runStatus");
  REQUIRE(status);
  w.setSourceText("abcabc");
  w.loadModel("preset:tiny-decoder");
  REQUIRE(shown.wait(30000));
  CHECK(w.modelSpec() == "preset:tiny-decoder");
  CHECK(status->text().contains("random weights"));
  w.loadModel("demo:induction");  // a model switch: the previous run's note must go
  REQUIRE(uitest::waitUntil([&] { return w.modelSpec() == "demo:induction" && w.trace(); }, 60000));
  REQUIRE(uitest::waitUntil([&] { return status->text().startsWith("demo:induction"); }, 60000));
  CHECK_FALSE(status->text().contains("random weights"));
}

TEST_CASE("the run controller reuses the previous keystroke's keys, also with a post-run forward",
          "[ui][runner][prefix_cache]") {
  ensureApp();
  RunController rc;
  QSignalSpy loaded(&rc, &RunController::modelLoaded);
  rc.loadModel("demo:induction");
  REQUIRE(loaded.wait(30000));
  // A post-run step that runs another forward, as the ablation panel does: it must not take
  // the cache over.
  rc.setPostRun([](const Model& model, RunResult&, const RunOptions& options) {
    RunOptions other = options;
    other.trace = TraceOptions::none();
    model.run("zzzz", "", other);
  });
  QSignalSpy finished(&rc, &RunController::runFinished);
  rc.runNow("atlasofheads", "");
  REQUIRE(finished.wait(30000));
  CHECK(rc.lastReusedTokens() == 0);
  rc.runNow("atlasofheadsa", "");
  REQUIRE(finished.wait(30000));
  CHECK(rc.lastReusedTokens() == 12);
  const auto result = finished.last().at(0).value<std::shared_ptr<const RunResult>>();
  REQUIRE(result);
  // The cached rows are the full forward's.
  const RunResult full = rc.model()->run("atlasofheadsa", "", RunOptions{});
  const auto& got = result->trace.find("decoder.layer1.self_attn")->tensor.data;
  const auto& want = full.trace.find("decoder.layer1.self_attn")->tensor.data;
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
  CHECK(worst < 1e-5);
}

TEST_CASE("the model grid says it is building until its first grid of a trace is on screen", "[ui][grid]") {
  ensureApp();
  const ModelConfig c = preset_config("tiny-decoder");
  const Model model(c, init_params(c, 3));
  auto r = std::make_shared<RunResult>(model.run("abcabcabc", "", RunOptions{}));
  const std::shared_ptr<const Trace> trace(r, &r->trace);
  ModelView view;
  view.resize(400, 400);
  view.show();
  QSignalSpy built(&view, &ModelView::built);
  const std::vector<AttentionFamily> families = attentionFamilies(*trace);
  REQUIRE_FALSE(families.empty());
  view.setTrace(trace, families.front());
  CHECK(view.building());
  CHECK(view.gridData().thumbnails.empty());
  REQUIRE(built.wait(30000));
  CHECK_FALSE(view.building());
  CHECK(view.gridData().layers() == 2);
}
