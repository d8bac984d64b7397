// Opening a model off the UI thread with progress and Cancel (ui/main_window/run_controller.h over
// core/model/load_monitor.h), and the status bar's note on a run close to the memory limit.
#include <QLabel>
#include <QSignalSpy>
#include <QToolButton>
#include <cstdlib>
#include <string>

#include "core/formats/input_file.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

TEST_CASE("a model load reports its progress and can be cancelled, keeping the open model", "[ui][runner][load]") {
  ensureApp();
  RunController rc;
  QSignalSpy loaded(&rc, &RunController::modelLoaded);
  QSignalSpy progress(&rc, &RunController::loadProgress);
  rc.loadModel("preset:tiny-decoder");
  REQUIRE(loaded.wait(30000));
  // One "Checking weights" report per parameter tensor, in order, within [0, 1].
  int checks = 0;
  double last = 0;
  bool ordered = true;
  for (const QList<QVariant>& p : progress) {
    const double f = p.at(0).toDouble();
    ordered = ordered && f >= last && f <= 1.0;
    last = f;
    checks += p.at(1).toString() == "Checking weights";
  }
  CHECK(ordered);
  CHECK(checks == static_cast<int>(rc.model()->params().size()));
  const auto first = rc.model();

  // vanilla-big initialises ~200M weights: cancelled long before it could finish.
  QSignalSpy cancelled(&rc, &RunController::modelLoadCancelled);
  QSignalSpy failed(&rc, &RunController::modelLoadFailed);
  loaded.clear();
  rc.loadModel("preset:vanilla-big");
  CHECK(rc.isLoading());
  rc.cancel();
  REQUIRE(uitest::waitUntil([&] { return !rc.isBusy(); }, 60000));
  QTest::qWait(50);  // the finished signal is queued
  REQUIRE(cancelled.size() == 1);
  CHECK(cancelled.first().at(0).toString() == "preset:vanilla-big");
  CHECK(loaded.isEmpty());
  CHECK(failed.isEmpty());
  CHECK(rc.model() == first);  // the open model stays

  // A load after a cancelled one is not cancelled by the old flag.
  rc.loadModel("preset:tiny-encoder");
  REQUIRE(loaded.wait(30000));
  CHECK(rc.model()->config().name == "tiny-encoder");
}

TEST_CASE("the window's Cancel stops a model load and says which model is still open", "[ui][window][load]") {
  ensureApp();
  MainWindow w;
  w.resize(1000, 700);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("abcabc");
  w.loadModel("preset:tiny-decoder");
  REQUIRE(shown.wait(30000));
  auto* status = w.findChild<QLabel*>("runStatus");
  auto* cancel = w.findChild<QToolButton*>("cancelButton");
  REQUIRE(status);
  REQUIRE(cancel);
  w.loadModel("preset:vanilla-big");
  cancel->click();
  REQUIRE(uitest::waitUntil([&] { return status->text().contains("cancelled"); }, 60000));
  CHECK(status->text() == "Opening preset:vanilla-big cancelled; tiny-decoder is still open");
  CHECK(w.modelSpec() == "preset:tiny-decoder");
}

TEST_CASE("a run that needs more than half the available memory is flagged in the status bar",
          "[ui][window][memory]") {
  ensureApp();
  // What the run will hold, as the forward reports it before its first layer, on an input long
  // enough that the run needs more than the weights (the budget below must admit both: the
  // loaders refuse weights above 90% of it, core/model/memory_budget.h).
  double needed = 0, weights = 0;
  std::string text = "abcabcabcabc";
  {
    RunController rc;
    QSignalSpy loaded(&rc, &RunController::modelLoaded);
    rc.loadModel("preset:tiny-decoder");
    REQUIRE(loaded.wait(30000));
    for (const auto& [name, t] : rc.model()->params()) weights += 4.0 * double(t.numel());
    while (true) {
      QSignalSpy memory(&rc, &RunController::runMemory);
      QSignalSpy finished(&rc, &RunController::runFinished);
      rc.runNow(QString::fromStdString(text), "");
      REQUIRE(finished.wait(60000));
      REQUIRE(memory.size() == 1);
      needed = memory.first().at(0).toDouble();
      CHECK(memory.first().at(1).toDouble() > 0);
      if (needed > weights || text.size() >= 512) break;
      text += text;
    }
  }
  REQUIRE(needed > weights);

  MainWindow w;
  w.resize(1000, 700);
  w.show();
  auto* note = w.findChild<QLabel*>("memoryNote");
  REQUIRE(note);
  // By value: 6 of 10 GB is flagged with its share, 4 of 10 is not.
  uitest::runStatus(w)->showMemory(6e9, 10e9);
  CHECK(note->isVisibleTo(&w));
  CHECK(note->text() == "Memory: this run needs " + QString::fromStdString(format_bytes(6000000000ull)) + " of " +
                            QString::fromStdString(format_bytes(10000000000ull)) + " available (60%)");
  uitest::runStatus(w)->showMemory(4e9, 10e9);
  CHECK_FALSE(note->isVisibleTo(&w));

  // End to end: a budget of 1.6x what the run needs (the guard refuses only above 90%).
  const std::string budget = std::to_string(static_cast<uint64_t>(1.6 * needed));
  setenv("ATLAS_MEMORY_BUDGET", budget.c_str(), 1);
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText(QString::fromStdString(text));
  w.loadModel("preset:tiny-decoder");
  const bool ok = shown.wait(60000);
  unsetenv("ATLAS_MEMORY_BUDGET");
  REQUIRE(ok);
  CHECK(note->isVisibleTo(&w));
  // The window may trace a little more than the controller's defaults: above half, below 90%.
  const QString shown_text = note->text();
  const int open = shown_text.lastIndexOf('('),
            percent = shown_text.mid(open + 1, shown_text.size() - open - 3).toInt();
  CHECK(percent >= 60);
  CHECK(percent <= 90);
}
