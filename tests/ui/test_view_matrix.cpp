// Every view shows this run or nothing: one window goes through every preset (shrunk, saved as
// model folders) and every trained demo in turn, each a model switch from the one before, on
// an input whose labels repeat. After each run every view, every variant and analysis panel
// (ui/panels/panel_registry.h) and every tool panel (ui/tools/tool_panels.h) must hold the
// window's current trace and model (by identity), the heatmap and token lines must equal the
// trace's map by value, and the Predictions bars must name the logits' top tokens in the
// vocabulary of the model that made them; after a failed run (an image model given text, an
// input longer than the model takes) every view must be empty and the window must say why. A
// second window switches between model kinds (ViT -> text decoder -> encoder-decoder ->
// Transformer-XL -> a GGUF Llama) with every tool holding a result of the model before: when
// the next model's run is shown, no tool may still hold one.
#include <catch2/catch.hpp>

#include <QImage>
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "core/formats/model_io.h"
#include "core/model/demos.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/model/model_arrays.h"
#include "tests/core/gguf_model_writer.h"
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
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/tools/qk_decomposition_panel.h"
#include "ui/tools/tool_panels.h"
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

// The Predictions bars' labels: the top ids of the traced logits at the plotted position, ranked
// by a plain sort (ties: lower id), named by `vocabulary`'s tokenizer.
void checkPredictionLabels(const MainWindow& w, const Model& vocabulary) {
  VariantPanel* panel = uitest::variantPanel(w, "predictions");
  if (!panel->available()) return;
  panel->ensureBuilt();
  QStringList notes;  // a plot that could not be made says why
  for (const QLabel* l : panel->findChildren<QLabel*>()) notes << l->text();
  INFO("the panel says: " << notes.join(" / ").toStdString());
  REQUIRE_FALSE(panel->plots().empty());
  const PanelPlot& bars = panel->plots().front();
  const QRegularExpressionMatch m = QRegularExpression("^top-(\\d+) at position (\\d+)").match(bars.name);
  REQUIRE(m.hasMatch());
  const Tensor& logits = w.trace()->find(model_arrays::kLogits)->tensor;
  const int64_t V = logits.shape[1];
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  const float* row = logits.data.data() + m.captured(2).toLongLong() * V;
  std::stable_sort(ids.begin(), ids.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
  QStringList want;
  // As `atlas run` names them: an id past the tokenizer's vocabulary (an encoder-decoder's BOS) as "<id>".
  const auto name = [&vocabulary](int32_t id) {
    return id < vocabulary.tokenizer().vocab_size() ? vocabulary.tokenizer().label(id) : "<" + std::to_string(id) + ">";
  };
  for (int i = 0; i < m.captured(1).toInt(); ++i) want << displayLabel(name(ids[size_t(i)]));
  CHECK(bars.matrix.rowLabels.join(" | ").toStdString() == want.join(" | ").toStdString());
}

// `oracle`: an independent load of the window's model, whose vocabulary names the predictions
// (null: the window's own model's).
void checkViewsShow(const MainWindow& w, const std::string& what, const Model* oracle = nullptr) {
  INFO(what);
  const std::shared_ptr<const Trace> t = w.trace();
  for (const PanelProvider& p : variantProviders()) {
    INFO("panel " << p.id.toStdString());
    CHECK(uitest::variantPanel(w, p.id)->trace() == t);
  }
  for (const ToolPanelEntry& tool : toolPanels()) {
    INFO("tool panel " << tool.id.toStdString());
    const QWidget* panel = uitest::part<QWidget>(w, tool.panelName);
    if (tool.trace) CHECK(tool.trace(panel) == t);
    if (tool.model) CHECK(tool.model(panel) == w.model());
  }
  CHECK(uitest::modelView(w)->trace() == t);
  CHECK(uitest::positionalView(w)->trace() == t);
  CHECK(uitest::patternView(w)->trace() == t);
  if (!t) {  // a failed run: nothing on screen, and the reason
    CHECK_FALSE(w.lastError().isEmpty());
    CHECK(uitest::sourceChips(w)->tokenCount() == 0);
    CHECK(uitest::heatmapView(w)->data().empty());
    CHECK(uitest::tokenView(w)->data().heads.empty());
    return;
  }
  REQUIRE(w.model());
  checkPredictionLabels(w, oracle ? *oracle : *w.model());
  CHECK(uitest::sourceChips(w)->tokenCount() == static_cast<int>(t->source_tokens.size()));
  CHECK(uitest::targetChips(w)->tokenCount() == static_cast<int>(t->target_tokens.size()));
  const auto families = attentionFamilies(*t);
  if (families.empty()) {
    CHECK(uitest::heatmapView(w)->data().empty());
    CHECK(uitest::tokenView(w)->data().heads.empty());
    return;
  }
  const HeatmapData want = attentionHeatmap(*t, w.selection());
  const HeatmapData& shown = uitest::heatmapView(w)->data();
  CHECK(shown.rows == want.rows);
  CHECK(shown.cols == want.cols);
  CHECK(shown.values == want.values);
  CHECK(shown.rowLabels == want.rowLabels);
  // The token lines draw the same map's tokens.
  const TokenLinesData& lines = uitest::tokenView(w)->data();
  REQUIRE_FALSE(lines.heads.empty());
  CHECK(lines.heads.front().rowLabels == want.rowLabels);
  CHECK(lines.heads.front().colLabels == want.colLabels);
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

namespace {

// What each tool holds of a run: a result computed from it (B's run for Compare).
struct ToolResults {
  bool sweep = false, patching = false, dla = false, qk = false, compareB = false, corpus = false;
};

ToolResults toolResults(const MainWindow& w) {
  ToolResults r;
  r.sweep = uitest::sweepPanel(w)->result().has_value();
  r.patching = uitest::part<PatchingPanel>(w, "patchingPanel")->result().has_value();
  r.dla = uitest::part<DlaPanel>(w, "dlaPanel")->result().has_value();
  r.qk = uitest::part<QkDecompositionPanel>(w, "qkDecompositionPanel")->result().has_value();
  r.compareB = uitest::comparePanel(w)->traceB() != nullptr;
  r.corpus = uitest::corpusPanel(w)->index().has_value();
  return r;
}

// Starts every tool that takes this run (a refusal, such as patching an encoder-decoder model,
// leaves that tool empty) and waits for them; returns what they hold. The corpus panel runs the
// model over `corpus` into the new folder `out`.
ToolResults fillTools(MainWindow& w, const fs::path& corpus, const fs::path& out) {
  auto* sweep = uitest::sweepPanel(w);
  auto* patching = uitest::part<PatchingPanel>(w, "patchingPanel");
  auto* dla = uitest::part<DlaPanel>(w, "dlaPanel");
  auto* qk = uitest::part<QkDecompositionPanel>(w, "qkDecompositionPanel");
  auto* compare = uitest::comparePanel(w);
  auto* corpusPanel = uitest::corpusPanel(w);
  QSignalSpy corpusDone(corpusPanel, &CorpusPanel::finished);
  corpusPanel->setPaths(QString::fromStdString(corpus.string()), QString::fromStdString(out.string()));
  corpusPanel->setQuery({}, {}, false);
  QSignalSpy swept(sweep, &SweepPanel::sweepFinished), patched(patching, &PatchingPanel::patchingFinished);
  QSignalSpy attributed(dla, &DlaPanel::attributionFinished);
  QSignalSpy decomposed(qk, &QkDecompositionPanel::decompositionFinished), compared(compare, &ComparePanel::compared);
  // Each tool that starts says when it ends (a result or a reason), after its worker is done.
  std::vector<QSignalSpy*> started;
  if (corpusPanel->start()) started.push_back(&corpusDone);
  if (sweep->startSweep()) started.push_back(&swept);
  patching->setLongRunSeconds(1e9);  // no second press
  patching->setCellLimit(2);         // two cells are a result too
  patching->setChoice(PatchSite::Resid, PatchDirection::Denoise, PatchMetric::KL);  // no tokens to name
  patching->setCorruptedText("abab abba");  // as many tokens as the clean "abab abab"
  if (patching->startPatching()) started.push_back(&patched);
  if (dla->startAttribution()) started.push_back(&attributed);
  if (qk->refresh()) started.push_back(&decomposed);
  compare->setB({}, "baba baba");  // B: A's model on another input
  if (compare->compare()) started.push_back(&compared);
  REQUIRE(uitest::waitUntil([&] {
    return std::all_of(started.begin(), started.end(), [](QSignalSpy* s) { return s->count() > 0; });
  }, 120000));
  const ToolResults r = toolResults(w);
  UNSCOPED_INFO("sweep " << r.sweep << " patching " << r.patching << " (" << patching->status().toStdString() << ") dla "
                         << r.dla << " (" << dla->status().toStdString() << ") qk " << r.qk << " compare " << r.compareB
                         << " (" << compare->status().toStdString() << ") corpus " << r.corpus);
  return r;
}

}  // namespace

TEST_CASE("every panel follows the run on screen across model kinds: ViT, text, seq2seq, XL, GGUF Llama",
          "[ui][matrix][switch]") {
  uitest::ensureApp();
  gguf_test::Arch llama;
  llama.vocab = 259;  // the byte-level vocabulary's 256 bytes, "12", "123" and BOS
  gguf_test::File file = gguf_test::make_file(llama);
  gguf_test::add_byte_level_tokenizer(file);
  const std::string gguf = gguf_test::write(file, "ui-view-matrix").string();
  const fs::path root = fs::temp_directory_path() / ("atlas-kind-matrix-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path corpus = root / "corpus.txt";
  {
    std::ofstream f(corpus);
    f << "abab abab\nbaba abab\nab ab ab\n";
  }
  struct Step {
    std::string what, spec;
    bool image;
  };
  const std::vector<Step> steps = {{"ViT", "preset:tiny-vit", true},
                                   {"text decoder", "preset:tiny-decoder", false},
                                   {"encoder-decoder", "preset:tiny-encoder-decoder", false},
                                   {"Transformer-XL", "preset:tiny-xl", false},
                                   {"GGUF Llama", gguf, false}};

  MainWindow w;
  w.resize(1100, 800);
  w.show();
  uitest::variantDock(w, "predictions")->show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  QSignalSpy ready(&w, &MainWindow::modelReady);
  // The first run of each new model, as it is shown: what the tools held then.
  bool armed = false;
  ToolResults atSwitch;
  std::shared_ptr<const Model> modelAtSwitch, previous;
  QObject::connect(&w, &MainWindow::traceShown, &w, [&] {
    if (!armed || !w.trace() || w.model() == previous) return;  // the model before, on the new text
    armed = false;
    atSwitch = toolResults(w);
    modelAtSwitch = w.model();
  });
  w.setTargetText("ab ab");  // the encoder-decoder's target; the other kinds ignore it
  ToolResults seen;  // every tool must have held a result before some switch
  for (const Step& step : steps) {
    INFO(step.what);
    atSwitch = {};
    armed = true;
    ready.clear();
    if (step.image) {  // the text on screen is refused; then the image runs
      w.loadModel(QString::fromStdString(step.spec));
      REQUIRE(ready.wait(60000));
      shown.clear();
      REQUIRE(w.setImage(uitest::colourTestImage(), "colours"));
      REQUIRE(shown.wait(60000));
      while (shown.wait(300)) {
      }
    } else {
      shown.clear();
      w.setSourceText("abab abab");
      w.loadModel(QString::fromStdString(step.spec));
      // Until the new model's run (and any re-run a panel asks for) is on screen.
      REQUIRE(uitest::waitUntil([&] {
        return w.model() != previous && !uitest::runController(w)->isBusy() && shown.count() > 0;
      }, 60000));
      while (shown.wait(300)) {
      }
    }
    INFO(w.lastError().toStdString());
    REQUIRE(w.trace());
    REQUIRE(w.model() != previous);
    CHECK(modelAtSwitch == w.model());
    CHECK_FALSE(atSwitch.sweep);
    CHECK_FALSE(atSwitch.patching);
    CHECK_FALSE(atSwitch.dla);
    CHECK_FALSE(atSwitch.qk);
    CHECK_FALSE(atSwitch.compareB);
    CHECK_FALSE(atSwitch.corpus);
    const Model oracle = load_model(step.spec);
    checkViewsShow(w, step.what + ", first run", &oracle);
    const ToolResults held = fillTools(w, corpus, root / ("index-" + std::to_string(&step - steps.data())));
    if (&step != &steps.back()) {
      seen.sweep |= held.sweep;
      seen.patching |= held.patching;
      seen.dla |= held.dla;
      seen.qk |= held.qk;
      seen.compareB |= held.compareB;
      seen.corpus |= held.corpus;
    }
    checkViewsShow(w, step.what + ", with the tools' results", &oracle);
    previous = w.model();
  }
  // The checks at each switch are only as good as the results they saw cleared.
  CHECK(seen.sweep);
  CHECK(seen.patching);
  CHECK(seen.dla);
  CHECK(seen.qk);
  CHECK(seen.compareB);
  CHECK(seen.corpus);
  fs::remove_all(root);
}
