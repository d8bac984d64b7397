#pragma once
// The main window on a real model, for the UI tests that drive whole runs: loads the model,
// types the text, and waits until the run (and any re-run it triggers) has been shown.
#include <catch2/catch.hpp>

#include <QSignalSpy>

#include "ui/main_window/main_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

namespace atlas::uitest {

// A run of `model` on `text` whose trace shares the result's lifetime, as the window hands
// traces to its panels.
inline std::shared_ptr<const Trace> runOn(const Model& model, const std::string& text) {
  auto r = std::make_shared<RunResult>(model.run(text, "", RunOptions{}));
  return std::shared_ptr<const Trace>(r, &r->trace);
}

struct RunWindow {
  bool appReady = ensureApp() != nullptr;  // the QApplication must exist before the window
  ui::MainWindow w;
  QSignalSpy shown{&w, &ui::MainWindow::traceShown};
  QSignalSpy overviews{&w, &ui::MainWindow::overviewShown};

  RunWindow(const QString& model, const QString& text, QSize size = {1100, 800}) {
    w.resize(size);
    w.show();
    w.setSourceText(text);
    w.loadModel(model);
    REQUIRE(shown.wait(60000));
    settle();
    INFO(w.lastError().toStdString());
    REQUIRE(w.lastError().isEmpty());
  }
  // Waits out any further run (a panel asking for more arrays re-runs once) and any overview
  // still being computed for the views.
  void settle() {
    for (;;) {
      if (shown.wait(300)) continue;
      if (!uitest::overviewPending(w)) return;
      REQUIRE(overviews.wait(60000));
    }
  }
  // An array of the run on screen, read directly from its Trace.
  const Tensor& array(const std::string& name) {
    const TracedArray* a = w.trace()->find(name);
    INFO(name);
    REQUIRE(a);
    return a->tensor;
  }
};

}  // namespace atlas::uitest
