// The variant panels on real preset runs in the window: each panel appears when the loaded
// model records its arrays, and its plots show those arrays (read directly from the Trace).
#include <catch2/catch.hpp>

#include <QChart>
#include <QDockWidget>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <QPushButton>
#include <QTableWidget>

#include "ui/panels/ablation_controls.h"
#include "core/analysis/performer_study.h"
#include "core/model/generate.h"
#include "core/model/presets.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/panels/panel_chart.h"
#include "ui/main_window/run_controller.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/panels/variant_panel.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::plotIndex;

namespace {

// The window on a preset run, with its variant panels.
struct PresetWindow : uitest::RunWindow {
  using RunWindow::RunWindow;
  VariantPanel& panel(const QString& id) {
    VariantPanel* p = uitest::variantPanel(w, id);
    REQUIRE(p);
    REQUIRE(p->available());
    REQUIRE(uitest::variantDock(w, id)->isVisible());
    p->ensureBuilt();
    REQUIRE_FALSE(p->plots().empty());
    return *p;
  }
};

// [rows, cols] of the widget's matrix against `t` from flat element `offset`.
void requireMatrixEquals(const HeatmapData& d, const Tensor& t, size_t offset, int rows, int cols) {
  REQUIRE(d.rows == rows);
  REQUIRE(d.cols == cols);
  int mismatches = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (d.at(r, c) != t.data[offset + static_cast<size_t>(r) * cols + c]) ++mismatches;
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("tiny-span: span bars and mask curves equal the traced arrays", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-span", "the quick brown fox jumps");
  VariantPanel& p = win.panel("span");
  CHECK_FALSE(uitest::variantPanel(win.w, "act")->available());
  const Tensor& z = win.array("span.z");  // [layers, heads]
  p.setCurrentPlot(plotIndex(p, "span z"));
  REQUIRE(p.chart());
  const auto series = chartSeriesValues(p.chart());
  REQUIRE(series.size() == z.shape[1]);
  for (int h = 0; h < z.shape[1]; ++h)
    for (int l = 0; l < z.shape[0]; ++l) CHECK(series[h][l] == Approx(z.data[static_cast<size_t>(l * z.shape[1] + h)]));
  const Tensor& curve = win.array("span.mask_curve");
  p.setCurrentPlot(plotIndex(p, "mask curve"));
  const auto curves = chartSeriesValues(p.chart());
  REQUIRE(curves.size() == curve.shape[1]);
  for (int x = 0; x < curve.shape[2]; ++x) CHECK(curves[1][x] == Approx(curve.data[static_cast<size_t>(curve.shape[2] + x)]));
}

TEST_CASE("tiny-span-dynamic: the dynamic span per position", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-span-dynamic", "hello there");
  VariantPanel& p = win.panel("span");
  const Trace& t = *win.w.trace();
  std::string name;
  for (const auto& a : t.arrays)
    if (a.name.find(".span.dynamic_z") != std::string::npos) { name = a.name; break; }
  REQUIRE_FALSE(name.empty());
  const Tensor& dz = win.array(name);
  p.setCurrentPlot(plotIndex(p, "dynamic span"));
  requireMatrixEquals(p.matrixView()->data(), dz, 0, static_cast<int>(dz.shape[0]), static_cast<int>(dz.shape[1]));
}

TEST_CASE("tiny-ut-act: ponder bars, halting heatmap and step attention", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-ut-act", "the cat sat on the mat");
  VariantPanel& p = win.panel("act");
  const Tensor& steps = win.array("act.steps");
  p.setCurrentPlot(plotIndex(p, "ponder steps"));
  const auto bars = chartSeriesValues(p.chart());
  REQUIRE(bars.size() == 3);
  for (int i = 0; i < steps.shape[0]; ++i) CHECK(bars[0][i] == steps.data[static_cast<size_t>(i)]);
  const Tensor& h = win.array("act.halting");
  p.setCurrentPlot(plotIndex(p, "halting probability"));
  requireMatrixEquals(p.matrixView()->data(), h, 0, static_cast<int>(h.shape[0]), static_cast<int>(h.shape[1]));
  const Tensor& a = win.array("decoder.step1.self_attn");
  const int L = static_cast<int>(a.shape[1]);
  p.setContext({0, 1, -1});
  p.setCurrentPlot(plotIndex(p, "attention at step 1"));
  requireMatrixEquals(p.matrixView()->data(), a, static_cast<size_t>(L) * L, L, L);
}

TEST_CASE("tiny-reformer: bucket grid per round", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-reformer", "a reformer hashes similar tokens together");
  VariantPanel& p = win.panel("lsh");
  const Trace& t = *win.w.trace();
  std::string first;
  for (const auto& a : t.arrays)
    if (a.name.size() > 15 && a.name.compare(a.name.size() - 15, 15, ".round0.buckets") == 0) { first = a.name; break; }
  REQUIRE_FALSE(first.empty());
  const std::string base = first.substr(0, first.size() - 15);
  const Tensor& b0 = win.array(first);
  const Tensor& b1 = win.array(base + ".round1.buckets");
  const int L = static_cast<int>(b0.shape[1]);
  p.setContext({0, 2, -1});
  p.setCurrentPlot(plotIndex(p, "buckets per round, " + QString::fromStdString(base)));
  const HeatmapData& d = p.matrixView()->data();
  REQUIRE(d.rows == 2);
  REQUIRE(d.cols == L);
  for (int i = 0; i < L; ++i) {
    CHECK(d.at(0, i) == b0.data[static_cast<size_t>(2 * L + i)]);
    CHECK(d.at(1, i) == b1.data[static_cast<size_t>(2 * L + i)]);
  }
}

TEST_CASE("tiny-xl: memory columns, and the score terms once the panel asks for scores", "[ui][panels][presets]") {
  ensureApp();
  // 40 bytes: segments of 16, 16 and 8 tokens.
  PresetWindow win("preset:tiny-xl", "transformer-xl reads a text segment-wise");
  VariantPanel& p = win.panel("xl");
  // The open XL panel turned scores on and re-ran: the terms are in the trace.
  CHECK(uitest::runController(win.w)->runOptions().trace.scores);
  REQUIRE(win.w.trace()->find("xl.seg1.layer0.terms.a"));
  win.w.setSelection({"decoder", "self_attn", 0, 0, 1});  // the panel shows the main view's segment
  p.ensureBuilt();
  const Tensor& a = win.array("decoder.seg1.layer0.self_attn");  // [heads, 16, 32]
  p.setCurrentPlot(plotIndex(p, "segment 1, layer 0, head 0: attention"));
  const HeatmapData& d = p.matrixView()->data();
  requireMatrixEquals(d, a, 0, static_cast<int>(a.shape[1]), static_cast<int>(a.shape[2]));
  const Tensor& seg = win.array("xl.seg1.key_segment");
  for (int j = 0; j < d.cols; ++j) CHECK(d.colLabels[j].startsWith("[mem s0]") == (seg.data[static_cast<size_t>(j)] < 1));
  const Tensor& tb = win.array("xl.seg1.layer0.terms.b");
  p.setCurrentPlot(plotIndex(p, "segment 1, layer 0, head 0: score terms"));
  const HeatmapData& terms = p.matrixView()->data();
  const int lq = static_cast<int>(tb.shape[1]), lk = static_cast<int>(tb.shape[2]);
  REQUIRE(terms.cols == 4 * lk);
  int mismatches = 0;
  for (int i = 0; i < lq; ++i)
    for (int j = 0; j < lk; ++j)
      if (terms.at(i, lk + j) != tb.data[static_cast<size_t>(i) * lk + j]) ++mismatches;
  CHECK(mismatches == 0);
  // Closing the panel stops tracing scores for later runs.
  uitest::variantDock(win.w, "xl")->hide();
  CHECK_FALSE(uitest::runController(win.w)->runOptions().trace.scores);
}

TEST_CASE("tiny-decoder: opening the lens panel computes per-layer predictions", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-decoder", "the cat sat");
  QDockWidget* dock = uitest::variantDock(win.w, "lens");
  REQUIRE(dock);
  CHECK_FALSE(dock->isVisible());  // a tool panel waits to be opened
  CHECK_FALSE(win.w.trace()->find("decoder.logit_lens.ids"));
  win.shown.clear();
  dock->show();
  REQUIRE(win.shown.wait(30000));
  const Tensor& ids = win.array("decoder.logit_lens.ids");
  const Tensor& probs = win.array("decoder.logit_lens.probs");
  VariantPanel& p = win.panel("lens");
  p.setCurrentPlot(0);
  QTableWidget* table = p.table();
  const int L = static_cast<int>(ids.shape[1]), K = static_cast<int>(ids.shape[2]);
  REQUIRE(table->rowCount() == ids.shape[0]);
  REQUIRE(table->columnCount() == L);
  // Layer 1, position 2: the first line is the most probable token's probability.
  const size_t base = (static_cast<size_t>(1) * L + 2) * K;
  const QString first = table->item(1, 2)->text().split('\n').front();
  CHECK(first.endsWith(QString::number(static_cast<double>(probs.data[base]), 'f', 3)));
  CHECK(table->item(1, 2)->text().split('\n').size() == K);
}

TEST_CASE("tiny-decoder: the predictions panel agrees with core's top-k on the same logits",
          "[ui][panels][presets][predictions]") {
  ensureApp();
  PresetWindow win("preset:tiny-decoder", "the cat sat");
  QDockWidget* dock = uitest::variantDock(win.w, "predictions");
  REQUIRE(dock);
  dock->show();
  VariantPanel& p = win.panel("predictions");
  const Tensor& logits = win.array("logits");
  const int64_t last = logits.shape[0] - 1;
  const std::vector<Prediction> want = top_k(*uitest::runController(win.w)->model(), logits, last, 10);
  const PanelPlot& bars = p.plots()[0];
  REQUIRE(bars.matrix.rows == static_cast<int>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(bars.matrix.rowLabels[static_cast<int>(i)] == displayLabel(want[i].label));
    CHECK(bars.matrix.values[i] == Approx(want[i].probability).epsilon(1e-5));
  }
}

TEST_CASE("tiny-decoder: the ablation panel runs the ablated model on the worker", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-decoder", "the cat sat on the mat");
  uitest::variantDock(win.w, "ablation")->show();
  auto* controls = win.w.findChild<AblationControls*>("ablationControls");
  REQUIRE(controls);
  controls->setInput("7", "");
  auto* compare = [&] {
    for (auto* b : controls->findChildren<QPushButton*>())
      if (b->text() == "Compare") return b;
    return static_cast<QPushButton*>(nullptr);
  }();
  REQUIRE(compare);
  compare->click();
  CHECK(controls->message().contains("7"));  // no such layer: the core's message, no run
  controls->setInput("1", "0:1");
  win.shown.clear();
  compare->click();
  REQUIRE(win.shown.wait(30000));
  const Tensor& kl = win.array("ablation.kl");
  VariantPanel& p = win.panel("ablation");
  p.setCurrentPlot(0);
  REQUIRE(p.chart());
  const auto series = chartSeriesValues(p.chart());
  REQUIRE(series.size() == 1);
  REQUIRE(series[0].size() == kl.shape[0]);
  double sum = 0;
  for (int i = 0; i < kl.shape[0]; ++i) {
    CHECK(series[0][i] == Approx(kl.data[static_cast<size_t>(i)]));
    sum += kl.data[static_cast<size_t>(i)];
  }
  CHECK(sum > 0.0);  // dropping a layer changes the prediction
  CHECK(win.w.trace()->find("ablation.layers")->tensor.data == std::vector<float>{1.0f});
}

TEST_CASE("tiny-performer: the error panel's figures match a naive recount", "[ui][panels][presets]") {
  ensureApp();
  PresetWindow win("preset:tiny-performer", "performer attention approximates softmax");
  QDockWidget* dock = uitest::variantDock(win.w, "performer");
  CHECK_FALSE(dock->isVisible());
  win.shown.clear();
  dock->show();
  REQUIRE(win.shown.wait(30000));
  const Tensor& imp = win.array("performer.study.implicit");
  const Tensor& ex = win.array("performer.study.exact");
  const Tensor& ms = win.array("performer.study.features");
  const int64_t L = imp.shape[0];
  CHECK(L == static_cast<int64_t>(win.w.trace()->source_tokens.size()));
  // Naive error of the model's m (64 for tiny-performer), rows of both matrices sum to 1.
  double meanAbs = 0, maxTv = 0;
  for (int64_t i = 0; i < L; ++i) {
    double tv = 0, si = 0, se = 0;
    for (int64_t j = 0; j < L; ++j) {
      const double a = imp.data[static_cast<size_t>(i * L + j)], b = ex.data[static_cast<size_t>(i * L + j)];
      meanAbs += std::abs(a - b);
      tv += 0.5 * std::abs(a - b);
      si += a;
      se += b;
    }
    CHECK(si == Approx(1.0).epsilon(1e-4));
    CHECK(se == Approx(1.0).epsilon(1e-4));
    maxTv = std::max(maxTv, tv);
  }
  meanAbs /= double(L * L);
  VariantPanel& p = win.panel("performer");
  p.setCurrentPlot(0);
  REQUIRE(p.chart());
  const auto series = chartSeriesValues(p.chart());
  REQUIRE(series.size() == 2);
  int at = -1;
  for (int i = 0; i < ms.shape[0]; ++i)
    if (ms.data[static_cast<size_t>(i)] == 64.0f) at = i;
  REQUIRE(at >= 0);
  CHECK(series[0][at] == Approx(meanAbs).epsilon(1e-3));
  CHECK(series[1][at] == Approx(maxTv).epsilon(1e-3));
  CHECK(series[0][at] > 0.0);
  // The panel's arrays are core/analysis/performer_study.h's study (the one `atlas
  // performer-error` prints), value for value: the model's d_head, Performer seed and m, the
  // run's length, N(0, 0.5^2), the decoder's causal mask.
  const ModelConfig c = preset_config("tiny-performer");
  FavorStudySpec spec;
  spec.length = L;
  spec.d = c.d_head();
  spec.features = {16, 64, 256, 1024};
  spec.sd = 0.5;
  spec.seed = c.performer()->seed;
  spec.causal = c.architecture == Architecture::Decoder;
  spec.keep_implicit = c.performer()->features;
  REQUIRE(spec.keep_implicit == 64);
  const FavorStudy study = favor_error_study(spec);
  const Tensor& tracedMeanAbs = win.array("performer.study.mean_abs");
  const Tensor& tracedMaxTv = win.array("performer.study.max_tv");
  REQUIRE(ms.numel() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(ms.data[i] == float(spec.features[i]));
    CHECK(tracedMeanAbs.data[i] == float(study.errors[i].mean_abs));
    CHECK(tracedMaxTv.data[i] == float(study.errors[i].max_tv));
  }
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) {
      CHECK(imp.data[size_t(i * L + j)] == study.implicit(i, j));
      CHECK(ex.data[size_t(i * L + j)] == study.exact(i, j));
    }
}
