// A panel labels each run with the vocabulary of the model that made it, across model switches
// between kinds: an image classifier's classes never name a language model's next tokens, and a
// tokenizer's pieces never name a ViT's classes. The oracle is an independent load of each model:
// the top ids of the traced logits at the plotted position, ranked by a plain sort, through that
// model's own tokenizer.
#include <catch2/catch.hpp>

#include <QImage>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>
#include <algorithm>
#include <numeric>

#include "core/formats/model_io.h"
#include "core/model/model.h"
#include "core/model/model_arrays.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "ui/panels/variant_panel.h"
#include "ui/views/heatmap_data.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

void waitForRuns(QSignalSpy& shown) {
  REQUIRE(shown.wait(60000));
  while (shown.wait(300)) {
  }
}

// The labels the bars must show: row `at` of the logits ranked by value (ties: lower id), the
// best `n`, named by `model`'s tokenizer.
QStringList expectedLabels(const Trace& trace, const Model& model, int at, int n) {
  const Tensor& logits = trace.find(model_arrays::kLogits)->tensor;
  const int64_t V = logits.shape[1];
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  const float* row = logits.data.data() + int64_t(at) * V;
  std::stable_sort(ids.begin(), ids.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
  QStringList out;
  for (int i = 0; i < n; ++i) out << displayLabel(model.tokenizer().label(ids[size_t(i)]));
  return out;
}

// The predictions panel's bars against the oracle for the window's current run.
void checkPredictions(MainWindow& w, const std::string& spec) {
  INFO(spec);
  VariantPanel* panel = uitest::variantPanel(w, "predictions");
  REQUIRE(panel->trace() == w.trace());
  panel->ensureBuilt();
  REQUIRE_FALSE(panel->plots().empty());
  const PanelPlot& bars = panel->plots().front();
  const QRegularExpressionMatch m = QRegularExpression("^top-(\\d+) at position (\\d+)").match(bars.name);
  REQUIRE(m.hasMatch());
  const Model oracle = load_model(spec);
  const QStringList want = expectedLabels(*w.trace(), oracle, m.captured(2).toInt(), m.captured(1).toInt());
  CHECK(bars.matrix.rowLabels.join(" | ").toStdString() == want.join(" | ").toStdString());
}

}  // namespace

TEST_CASE("the Predictions panel names each run's tokens with its own model's vocabulary across switches",
          "[ui][panels][predictions][switch]") {
  uitest::ensureApp();
  MainWindow w;
  w.resize(1100, 800);
  w.show();
  uitest::variantDock(w, "predictions")->show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  QSignalSpy ready(&w, &MainWindow::modelReady);

  const auto openVit = [&] {
    ready.clear();
    w.loadModel("preset:tiny-vit");
    REQUIRE(ready.wait(60000));
    shown.clear();
    REQUIRE(w.setImage(uitest::colourTestImage(), "colours"));
    waitForRuns(shown);
    INFO(w.lastError().toStdString());
    REQUIRE(w.lastError().isEmpty());
    checkPredictions(w, "preset:tiny-vit");
  };
  const auto openText = [&](const std::string& spec, const QString& text) {
    shown.clear();
    w.setSourceText(text);
    w.loadModel(QString::fromStdString(spec));
    waitForRuns(shown);
    INFO(w.lastError().toStdString());
    REQUIRE(w.lastError().isEmpty());
    REQUIRE(w.modelSpec() == QString::fromStdString(spec));
    checkPredictions(w, spec);
  };

  openVit();
  // The labels that must not survive the switch: the classes just shown.
  const QStringList classes = uitest::variantPanel(w, "predictions")->plots().front().matrix.rowLabels;
  openText("demo:induction", "abcdabcdab");
  for (const QString& c : uitest::variantPanel(w, "predictions")->plots().front().matrix.rowLabels)
    CHECK_FALSE(classes.contains(c));
  openText("preset:tiny-decoder", "abab abab");  // text to text: another vocabulary
  openVit();                                     // and back to classes
}
