// The desktop window end to end on the real engine: load a preset, type, wait for the run,
// switch layer and head with the keyboard, and compare the heatmap's matrix with the Trace
// array read directly.
#include <catch2/catch.hpp>

#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>

#include "heatmap_view.h"
#include "main_window.h"
#include "model_view.h"
#include "run_controller.h"
#include "token_chips.h"
#include "ui_test_support.h"

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
  const HeatmapData& d = w.heatmapView()->data();
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
  CHECK(w.sourceChips()->tokenCount() == n0);
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
  CHECK(w.sourceText() == "the cat sat on the mat");
  const int n1 = static_cast<int>(w.trace()->source_tokens.size());
  CHECK(n1 > n0);
  CHECK(w.heatmapView()->data().rows == n1);
  CHECK(w.sourceChips()->tokenCount() == n1);

  // Keyboard: ] next layer, . next head (shortcuts act when the heatmap has focus).
  w.heatmapView()->setFocus();
  QTest::keyClick(w.heatmapView(), Qt::Key_BracketRight);
  QTest::keyClick(w.heatmapView(), Qt::Key_Period);
  CHECK(w.selection().layer == 1);
  CHECK(w.selection().head == 1);
  requireShows(w, "encoder.layer1.attn", 1);
  QTest::keyClick(w.heatmapView(), Qt::Key_BracketLeft);
  QTest::keyClick(w.heatmapView(), Qt::Key_Comma);
  CHECK(w.selection().layer == 0);
  CHECK(w.selection().head == 0);
  // Typing "," and "." in the text box types them; it does not switch heads.
  edit->setFocus();
  shown.clear();
  QTest::keyClicks(edit, ".");
  CHECK(w.selection().head == 0);
  REQUIRE(shown.wait(30000));
  CHECK(w.sourceText().endsWith('.'));

  // Aggregates through the same selector path.
  AttentionSelection s = w.selection();
  s.head = HeadMean;
  w.setSelection(s);
  requireShows(w, "encoder.layer0.attn", HeadMean);

  // The model view opens a head when clicked.
  QSignalSpy clicked(w.modelView(), &ModelView::headClicked);
  emit w.modelView()->headClicked(1, 2);
  CHECK(w.selection().layer == 1);
  CHECK(w.selection().head == 2);
  requireShows(w, "encoder.layer1.attn", 2);

  // Linked selection: pinning a heatmap row selects that token chip.
  w.heatmapView()->setPinnedRow(2);
  CHECK(w.sourceChips()->selected() == 2);
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
  const HeatmapData& d = w.heatmapView()->data();
  CHECK(d.rows == static_cast<int>(t.target_tokens.size()));
  CHECK(d.cols == static_cast<int>(t.source_tokens.size()));
  requireShows(w, "decoder.layer0.cross_attn", 0);
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
