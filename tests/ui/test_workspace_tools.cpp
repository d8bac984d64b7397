// Workspaces keep the Compare panel's B (its model spec, text and whether it compares) and the
// token search's patterns (ui/tools/compare_panel.h, ui/tools/search_panel.h): a fresh window
// opened on the saved file has the same panel state and shows the same plots by value (B runs
// again against the restored A); a B model folder that is gone on reopening is said in the panel
// and in the status line; a damaged tools.compare / tools.search entry is refused naming it.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <cmath>
#include <limits>
#include <map>

#include "core/tensor/error.h"
#include "core/formats/model_io.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "ui/panels/ablation_controls.h"
#include "ui/panels/variant_panel.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/tools/qk_decomposition_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"
#include "ui/tools/tool_panels.h"
#include "ui/views/heatmap_view.h"
#include "ui/workspace.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

// Every plot of a tool panel as (name, values), as it would draw them now; a NaN cell (none to
// draw) as -inf, so that equal plots compare equal.
std::vector<std::pair<QString, std::vector<float>>> toolPlotValues(VariantPanel* panel) {
  panel->ensureBuilt();
  std::vector<std::pair<QString, std::vector<float>>> out;
  for (int i = 0; i < static_cast<int>(panel->plots().size()); ++i) {
    panel->setCurrentPlot(i);
    const HeatmapData& d = panel->matrixView()->data();
    std::vector<float> values = d.values;
    for (float& v : values)
      if (std::isnan(v)) v = -std::numeric_limits<float>::infinity();
    out.emplace_back(panel->plots()[size_t(i)].name, std::move(values));
  }
  return out;
}

// A fresh window opening `path`, once its run (and B's, when `waitForB`) is shown.
void openInFreshWindow(MainWindow& w, const QString& path, bool waitForB) {
  w.resize(1100, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  QSignalSpy compared(uitest::comparePanel(w), &ComparePanel::compared);
  REQUIRE(w.openWorkspace(path));
  REQUIRE(shown.wait(60000));
  while (shown.wait(300)) {
  }
  if (waitForB && compared.isEmpty()) REQUIRE(compared.wait(60000));
  while (uitest::comparePanel(w)->isRunning()) REQUIRE(compared.wait(60000));
}

}  // namespace

TEST_CASE("Compare's B model and text survive a workspace round trip; B runs again against A",
          "[ui][workspace][compare]") {
  QTemporaryDir dir;
  const QString bFolder = dir.filePath("checkpoint-b");
  {  // a second checkpoint of the same shape as preset:tiny-decoder
    const Model a = load_model("preset:tiny-decoder");
    save_model(Model(a.config(), init_params(a.config(), 99)), bFolder.toStdString());
  }
  const QString path = dir.filePath("compare.atlas");
  QJsonObject stateBefore;
  FloatBuffer traceBBefore;  // B's run before the save
  std::vector<std::pair<QString, std::vector<float>>> plotsBefore;
  {
    uitest::RunWindow rw("preset:tiny-decoder", "abcabc");
    uitest::dock(rw.w, "compareDock")->show();
    uitest::dock(rw.w, "compareDock")->raise();
    ComparePanel* panel = uitest::comparePanel(rw.w);
    panel->setB(bFolder, "abdabc");
    QSignalSpy done(panel, &ComparePanel::compared);
    REQUIRE(panel->compare());
    REQUIRE(done.wait(60000));
    INFO(panel->status().toStdString());
    REQUIRE(panel->traceB());
    rw.w.setSelection({"decoder", "self_attn", 1, 2, 0});
    rw.settle();
    stateBefore = panel->saveState();
    traceBBefore = panel->traceB()->find("decoder.layer1.self_attn")->tensor.data;
    plotsBefore = toolPlotValues(panel->plotPanel());
    REQUIRE(rw.w.saveWorkspace(path));
  }
  REQUIRE(plotsBefore.size() == 3);
  CHECK(stateBefore["model"].toString() == bFolder);
  CHECK(stateBefore["text"].toString() == "abdabc");
  CHECK(stateBefore["active"].toBool());
  {
    uitest::ensureApp();
    MainWindow w;
    openInFreshWindow(w, path, /*waitForB=*/true);
    ComparePanel* panel = uitest::comparePanel(w);
    INFO(panel->status().toStdString());
    CHECK(panel->saveState() == stateBefore);
    REQUIRE(panel->traceB());
    // B's own run (the saved checkpoint on B's text), not A's.
    CHECK(panel->traceB()->find("decoder.layer1.self_attn")->tensor.data == traceBBefore);
    CHECK(panel->traceB()->find("decoder.layer1.self_attn")->tensor.data !=
          w.trace()->find("decoder.layer1.self_attn")->tensor.data);
    CHECK(toolPlotValues(panel->plotPanel()) == plotsBefore);
  }
  // The checkpoint is gone: the panel and the status line say so, the rest of the study opens.
  REQUIRE(QDir(bFolder).removeRecursively());
  uitest::ensureApp();
  MainWindow w;
  openInFreshWindow(w, path, /*waitForB=*/false);
  ComparePanel* panel = uitest::comparePanel(w);
  CHECK_FALSE(panel->comparing());
  CHECK_FALSE(panel->traceB());
  CHECK(panel->status().contains("The workspace's Compare B model was not restored"));
  CHECK(panel->status().contains(bFolder + ": no such file or directory"));
  CHECK(panel->saveState()["model"].toString() == bFolder);  // kept, to be corrected
  auto* line = w.findChild<QLabel*>("runStatus");
  REQUIRE(line);
  CHECK(line->text().contains(bFolder + ": no such file or directory"));
  CHECK(w.modelSpec() == "preset:tiny-decoder");
  CHECK(w.lastError().isEmpty());
}

TEST_CASE("the token search's patterns survive a workspace round trip with the same scores", "[ui][workspace][search]") {
  QTemporaryDir dir;
  const QString path = dir.filePath("search.atlas");
  QJsonObject stateBefore;
  QString statusBefore;
  std::vector<std::pair<QString, std::vector<float>>> plotsBefore;
  {
    uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
    uitest::dock(rw.w, "searchDock")->show();
    uitest::dock(rw.w, "searchDock")->raise();
    TokenSearchPanel* panel = uitest::searchPanel(rw.w);
    panel->setPatterns("a", "t");
    stateBefore = panel->saveState();
    statusBefore = panel->status();
    plotsBefore = toolPlotValues(panel->plotPanel());
    REQUIRE(rw.w.saveWorkspace(path));
  }
  REQUIRE_FALSE(plotsBefore.empty());
  CHECK(stateBefore == QJsonObject{{"query", "a"}, {"key", "t"}});
  CHECK(statusBefore.startsWith("6 matching queries, 2 matching keys"));  // a chars model; "atlasofheads" twice
  uitest::ensureApp();
  MainWindow w;
  openInFreshWindow(w, path, /*waitForB=*/false);
  TokenSearchPanel* panel = uitest::searchPanel(w);
  CHECK(panel->saveState() == stateBefore);
  CHECK(panel->status() == statusBefore);
  CHECK(toolPlotValues(panel->plotPanel()) == plotsBefore);
}

TEST_CASE("a damaged tools.compare or tools.search entry is refused naming it, the panel keeping its state",
          "[ui][workspace][compare][search]") {
  uitest::ensureApp();
  ComparePanel compare;
  compare.setB("preset:tiny-decoder", "other text");
  const QJsonObject kept = compare.saveState();
  CHECK_FALSE(compare.restoreState(QJsonObject{{"model", 3}}));
  CHECK(compare.status() ==
        "The workspace's Compare state (tools.compare) was not restored: \"model\" must be a string");
  CHECK_FALSE(compare.restoreState(QJsonObject{{"active", "yes"}}));
  CHECK(compare.status().endsWith("\"active\" must be true or false"));
  CHECK_FALSE(compare.restoreState(QJsonObject{{"colour", 1}}));
  CHECK(compare.status().endsWith("unknown key \"colour\""));
  CHECK(compare.saveState() == kept);
  // Presets and demos are not paths: restored as they are, comparing once A runs.
  CHECK(compare.restoreState(QJsonObject{{"model", "preset:tiny-encoder"}, {"text", ""}, {"active", true}}));
  CHECK(compare.comparing());
  CHECK(compare.status() == "B runs once A's run is shown.");

  TokenSearchPanel search;
  search.setPatterns("it", "cat");
  CHECK_FALSE(search.status().contains("not restored"));
  search.restoreState(QJsonObject{{"query", QJsonArray{"a"}}});
  CHECK(search.status() ==
        "The workspace's token search (tools.search) was not restored: \"query\" must be a string");
  search.restoreState(QJsonObject{{"query", "a"}, {"terms", "b"}});
  CHECK(search.status().endsWith("unknown key \"terms\""));
  CHECK(search.saveState() == QJsonObject{{"query", "it"}, {"key", "cat"}});

  // The file itself refuses an entry that is not an object, naming it.
  const auto refused = [](const QByteArray& json) {
    try {
      workspaceFromJson(json, "w.atlas");
    } catch (const AtlasError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const QByteArray head = R"({"format": "attention-atlas-workspace", "version": 1, "model": "x", "tools": )";
  CHECK(refused(head + R"({"compare": 3}})") == "w.atlas: \"tools.compare\" must be an object");
  CHECK(refused(head + R"({"search": "a"}})") == "w.atlas: \"tools.search\" must be an object");
  CHECK(refused(head + R"({"compare": {"model": "preset:tiny-decoder"}, "search": {"query": "a"}}})") == "accepted");
}

// Every tool panel of the window's list (ui/tools/tool_panels.h), through the real window and
// file: each given inputs other than its defaults (and the QK decomposition its result), saved,
// and opened in a fresh window; each must come back equal by value. The panels with nothing of
// their own to keep are named, so that a new tool cannot join the list unsaved unnoticed.
TEST_CASE("every tool panel's workspace state comes back by value in a fresh window", "[ui][workspace][tools]") {
  QTemporaryDir dir;
  const QString path = dir.filePath("every-tool.atlas");
  std::map<QString, QJsonObject> saved;
  QStringList openBefore;
  {
    uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
    for (const ToolPanelEntry& tool : toolPanels()) uitest::dock(rw.w, tool.dockName)->show();
    auto* qk = uitest::part<QkDecompositionPanel>(rw.w, "qkDecompositionPanel");
    QSignalSpy decomposed(qk, &QkDecompositionPanel::decompositionFinished);
    uitest::sweepPanel(rw.w)->setChoice(SweepUnit::Layers, AblationMode::Mean, SweepMetric::Loss);
    auto* patching = uitest::part<PatchingPanel>(rw.w, "patchingPanel");
    patching->setChoice(PatchSite::Attn, PatchDirection::Noise, PatchMetric::KL, {}, {}, 3);
    patching->setCorruptedText("atlasofheadsatlasofheadx");
    uitest::part<DlaPanel>(rw.w, "dlaPanel")->setChoice("a", "t", 5);
    uitest::comparePanel(rw.w)->setB({}, "headsofatlasheadsofatlas");
    uitest::searchPanel(rw.w)->setPatterns("a", "t");
    uitest::corpusPanel(rw.w)->setPaths(dir.filePath("corpus.txt"), dir.filePath("corpus-run"));
    uitest::corpusPanel(rw.w)->setQuery("a", "t", false);
    qk->setCell(20, 9);
    REQUIRE(uitest::waitUntil([&] { return qk->result().has_value() && !qk->isRunning(); }, 60000));
    rw.settle();
    for (const ToolPanelEntry& tool : toolPanels()) {
      if (!tool.save) continue;
      saved[tool.id] = tool.save(uitest::part<QWidget>(rw.w, tool.panelName));
      INFO(tool.id.toStdString());
      CHECK_FALSE(saved[tool.id].isEmpty());
    }
    CHECK(saved["qk"].contains("result"));
    openBefore = rw.w.workspace().openPanels;
    REQUIRE(rw.w.saveWorkspace(path));
  }
  uitest::ensureApp();
  MainWindow w;
  openInFreshWindow(w, path, /*waitForB=*/false);
  auto* qk = uitest::part<QkDecompositionPanel>(w, "qkDecompositionPanel");
  REQUIRE(uitest::waitUntil([&] { return !qk->isRunning(); }, 60000));
  QStringList nothingToKeep;
  for (const ToolPanelEntry& tool : toolPanels()) {
    INFO(tool.id.toStdString());
    CHECK(openBefore.contains(tool.dockName));
    CHECK(w.workspace().openPanels.contains(tool.dockName));
    if (!tool.save) {
      nothingToKeep << tool.id;
      continue;
    }
    const auto text = [](const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString(); };
    CHECK(text(tool.save(uitest::part<QWidget>(w, tool.panelName))) == text(saved[tool.id]));
  }
  // The score functions show the selected head of the run on screen (the selection is the
  // window's).
  CHECK(nothingToKeep == QStringList{"scores"});
  CHECK(saved["corpus"]["file"].toString() == dir.filePath("corpus.txt"));
  CHECK(saved["corpus"]["selected_only"].toBool() == false);
}

// The defect this pins: restoring a result into the panels of a window that shows another model's
// run of the same tokens adopted it at once (another model's sweep shown as this one's) and then
// dropped it when the workspace's own run arrived (a model switch clears results).
TEST_CASE("a workspace's sweep waits for its own model's run, not another model's run of the same tokens",
          "[ui][workspace][sweep]") {
  QTemporaryDir dir;
  const ModelConfig c = preset_config("tiny-decoder");
  const QString modelX = dir.filePath("x"), modelY = dir.filePath("y");  // one tokenizer, other weights
  save_model(Model(c, init_params(c, 3)), modelX.toStdString());
  save_model(Model(c, init_params(c, 5)), modelY.toStdString());
  const QString path = dir.filePath("sweep.atlas");
  std::vector<double> savedValues;
  {
    uitest::RunWindow rw(modelX, "abab abab");
    uitest::dock(rw.w, "sweepDock")->show();
    SweepPanel* sweep = uitest::sweepPanel(rw.w);
    QSignalSpy done(sweep, &SweepPanel::sweepFinished);
    REQUIRE(sweep->startSweep());
    REQUIRE(done.wait(60000));
    REQUIRE(sweep->result().has_value());
    savedValues = sweep->result()->values;
    REQUIRE(rw.w.saveWorkspace(path));
  }
  uitest::RunWindow rw(modelY, "abab abab");
  SweepPanel* sweep = uitest::sweepPanel(rw.w);
  REQUIRE(sweep->model() == rw.w.model());
  REQUIRE(rw.w.openWorkspace(path));
  CHECK_FALSE(sweep->result().has_value());  // not on Y's run, though its tokens are the same
  REQUIRE(uitest::waitUntil([&] { return rw.w.modelSpec() == modelX && rw.w.trace() && sweep->model() == rw.w.model(); },
                            60000));
  rw.settle();
  REQUIRE(sweep->result().has_value());
  CHECK(sweep->result()->values == savedValues);
  CHECK(sweep->runTrace() == rw.w.trace());

  // The workspace's model gone: its sweep is not shown on the next model that opens either.
  QDir(modelX).removeRecursively();
  QSignalSpy loadFailed(uitest::runController(rw.w), &RunController::modelLoadFailed);
  QTimer dismiss;  // the "Cannot open model" box is modal: answered as a user would
  QObject::connect(&dismiss, &QTimer::timeout, &dismiss, [] {
    if (QWidget* box = QApplication::activeModalWidget()) box->close();
  });
  dismiss.start(50);
  REQUIRE(rw.w.openWorkspace(path));
  REQUIRE(loadFailed.wait(60000));
  dismiss.stop();
  rw.w.loadModel(modelY);
  REQUIRE(uitest::waitUntil([&] { return rw.w.modelSpec() == modelY && rw.w.trace() && sweep->model() == rw.w.model(); },
                            60000));
  rw.settle();
  CHECK(uitest::sourceText(rw.w) == "abab abab");  // the saved text, so the tokens are the saved ones
  CHECK_FALSE(sweep->result().has_value());
}

// The ablation panel (a variant panel with inputs of its own): what was typed, and whether it was
// compared, come back; a compared ablation is run again, giving the same per-position KL.
TEST_CASE("the ablation panel's inputs and its comparison survive a workspace round trip", "[ui][workspace][ablation]") {
  QTemporaryDir dir;
  const QString path = dir.filePath("ablation.atlas");
  FloatBuffer kl;
  {
    uitest::RunWindow rw("preset:tiny-decoder", "the cat sat on the mat");
    uitest::variantDock(rw.w, "ablation")->show();
    auto* controls = uitest::part<AblationControls>(rw.w, "ablationControls");
    controls->setInput("1", "0:1", 0.0);
    rw.shown.clear();
    controls->apply();
    REQUIRE(rw.shown.wait(30000));
    rw.settle();
    kl = rw.array("ablation.kl").data;
    REQUIRE(rw.w.saveWorkspace(path));
  }
  const Workspace saved = loadWorkspaceFile(path);
  REQUIRE(saved.tools.contains("ablation"));
  CHECK(saved.tools["ablation"].toObject()["compared"].toBool());
  {
    uitest::ensureApp();
    MainWindow w;
    openInFreshWindow(w, path, /*waitForB=*/false);
    auto* controls = uitest::part<AblationControls>(w, "ablationControls");
    CHECK(controls->inputs() ==
          QJsonObject({{"drop_layers", "1"}, {"drop_heads", "0:1"}, {"layerdrop_rate", 0.0}}));
    REQUIRE(w.trace());
    const TracedArray* again = w.trace()->find("ablation.kl");
    REQUIRE(again);
    REQUIRE(again->tensor.data.size() == kl.size());
    for (size_t i = 0; i < kl.size(); ++i) CHECK(again->tensor.data[i] == Approx(kl[i]).epsilon(1e-5));  // threads may reorder sums
  }
  // Typed but not compared: the text comes back, no ablated run.
  QByteArray json = uitest::readAll(path);
  json.replace("\"compared\": true", "\"compared\": false");
  const QString typed = dir.filePath("typed.atlas");
  uitest::writeAll(typed, json);
  {
    MainWindow w;
    openInFreshWindow(w, typed, /*waitForB=*/false);
    CHECK(uitest::part<AblationControls>(w, "ablationControls")->inputs()["drop_heads"].toString() == "0:1");
    REQUIRE(w.trace());
    CHECK_FALSE(w.trace()->find("ablation.kl"));
  }
  // A damaged entry is refused, naming it, and the rest of the workspace opens.
  json.replace("\"layerdrop_rate\": 0", "\"layerdrop_rate\": \"half\"");
  const QString damaged = dir.filePath("damaged.atlas");
  uitest::writeAll(damaged, json);
  MainWindow w;
  openInFreshWindow(w, damaged, /*waitForB=*/false);
  REQUIRE(w.trace());
  CHECK(uitest::part<AblationControls>(w, "ablationControls")->message() ==
        "The workspace's ablation panel (tools.ablation) was not restored: \"layerdrop_rate\" must be a number from 0 to 1");
}
