// Every view shows this run or nothing: one window goes through every preset (shrunk, saved as
// model folders) and every trained demo in turn, each a model switch from the one before, on
// an input whose labels repeat. After each run every view and panel must hold the window's
// current trace (by identity) and the heatmap must equal the trace's map by value; after a
// failed run (an image model given text, an input longer than the model takes) every view must
// be empty and the window must say why. A view still holding the previous model's run fails.
#include <catch2/catch.hpp>

#include <QSignalSpy>
#include <QTest>
#include <filesystem>

#include "core/formats/model_io.h"
#include "core/model/demos.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/core/preset_test_util.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/tools/compare_panel.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/views/model_view.h"
#include "ui/views/pattern_view.h"
#include "ui/main_window/run_controller.h"
#include "ui/views/positional_view.h"
#include "ui/tools/score_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"
#include "ui/views/token_chips.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"
#include "ui/panels/panel_registry.h"
#include "ui/views/attention_heatmap.h"

namespace fs = std::filesystem;
using namespace atlas;
using namespace atlas::ui;

namespace {

// Waits for the run the load or edit started (and any re-run a panel asks for) to end.
void settle(MainWindow& w, QSignalSpy& shown, QSignalSpy& failed, QSignalSpy& loadFailed) {
  const int before = shown.count() + failed.count() + loadFailed.count();
  for (int waited = 0; shown.count() + failed.count() + loadFailed.count() == before && waited < 60000; waited += 20)
    QTest::qWait(20);
  while (shown.wait(300)) {
  }
  (void)w;
}

void checkViewsShow(const MainWindow& w, const std::string& what) {
  INFO(what);
  const std::shared_ptr<const Trace> t = w.trace();
  for (const PanelProvider& p : variantProviders()) {
    INFO("panel " << p.id.toStdString());
    CHECK(uitest::variantPanel(w, p.id)->trace() == t);
  }
  CHECK(uitest::modelView(w)->trace() == t);
  CHECK(uitest::positionalView(w)->trace() == t);
  CHECK(uitest::patternView(w)->trace() == t);
  CHECK(uitest::scorePanel(w)->trace() == t);
  CHECK(uitest::sweepPanel(w)->runTrace() == t);
  CHECK(uitest::comparePanel(w)->traceA() == t);
  CHECK(uitest::searchPanel(w)->trace() == t);
  if (!t) {  // a failed run: nothing on screen, and the reason
    CHECK_FALSE(w.lastError().isEmpty());
    CHECK(uitest::sourceChips(w)->tokenCount() == 0);
    CHECK(uitest::heatmapView(w)->data().empty());
    return;
  }
  CHECK(uitest::sourceChips(w)->tokenCount() == static_cast<int>(t->source_tokens.size()));
  CHECK(uitest::targetChips(w)->tokenCount() == static_cast<int>(t->target_tokens.size()));
  const auto families = attentionFamilies(*t);
  if (families.empty()) {
    CHECK(uitest::heatmapView(w)->data().empty());
    return;
  }
  const HeatmapData want = attentionHeatmap(*t, w.selection());
  const HeatmapData& shown = uitest::heatmapView(w)->data();
  CHECK(shown.rows == want.rows);
  CHECK(shown.cols == want.cols);
  CHECK(shown.values == want.values);
  CHECK(shown.rowLabels == want.rowLabels);
}

}  // namespace

TEST_CASE("every view shows the current run or nothing, through every preset and demo", "[ui][matrix]") {
  uitest::ensureApp();
  const fs::path root = fs::temp_directory_path() / ("atlas-view-matrix-" + std::to_string(::getpid()));
  fs::remove_all(root);
  std::vector<std::pair<std::string, QString>> models;  // what, spec
  for (const PresetInfo& info : list_presets()) {
    const ModelConfig c = preset_test::small_preset_config(info.name);
    const fs::path dir = root / info.name;
    save_model(Model(c, init_params(c, 3)), dir.string());
    models.push_back({"preset " + info.name, QString::fromStdString(dir.string())});
  }
  for (const DemoInfo& d : list_demos()) models.push_back({"demo " + d.name, QString::fromStdString("demo:" + d.name)});

  MainWindow w;
  w.resize(1100, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown), failed(&w, &MainWindow::runError);
  QSignalSpy loadFailed(uitest::runController(w), &RunController::modelLoadFailed);
  w.setSourceText("abab abab");
  int runs = 0, failures = 0;
  for (const auto& [what, spec] : models) {
    w.loadModel(spec);
    settle(w, shown, failed, loadFailed);
    checkViewsShow(w, what);
    runs += w.trace() != nullptr;
    failures += w.trace() == nullptr;
  }
  CHECK(runs > 30);
  // A run that fails after a good one (an input longer than the model's positions) clears it.
  w.setSourceText("abab abab");
  w.loadModel(models.front().second);
  settle(w, shown, failed, loadFailed);
  INFO(w.lastError().toStdString() << " / " << w.modelSpec().toStdString() << " / " << uitest::sourceText(w).toStdString());
  REQUIRE(w.trace());
  const int64_t max_positions = load_model(models.front().second.toStdString()).config().max_positions;
  w.setSourceText(QString(int(max_positions) + 10, 'a'));
  settle(w, shown, failed, loadFailed);
  CHECK_FALSE(w.trace());
  checkViewsShow(w, "after an over-long input");
  CHECK((w.lastError().contains("positions") || w.lastError().contains("tokens")));
  // And the next good run fills every view again.
  w.setSourceText("abab");
  settle(w, shown, failed, loadFailed);
  INFO(w.lastError().toStdString() << " / shown " << shown.count() << " failed " << failed.count());
  REQUIRE(w.trace());
  checkViewsShow(w, "after the input is short again");
  fs::remove_all(root);
}
