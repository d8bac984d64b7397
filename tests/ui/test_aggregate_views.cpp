// Aggregates in the views: attention flow as a head choice (equal to the core's max-flow over
// residual layers mixed here by hand from the traced maps), value-weighted attention (alpha_ij
// times the traced value norm of key j, by position), the View menu's toggle that traces the
// norms and switches the main heatmap, and both from `atlas export`'s figure code.
#include <catch2/catch.hpp>

#include <QAction>
#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QImage>
#include <QMimeData>

#include "core/analysis/attention_flow.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/views/aggregate_heatmaps.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

// The flow network's capacities written out by hand from the traced maps of `stack`'s first
// `n_layers` layers: 0.5 * mean over heads + 0.5 I, rows renormalised.
std::vector<Tensor> handMixedLayers(const Trace& trace, const std::string& prefix, int n_layers) {
  std::vector<Tensor> layers;
  for (int l = 0; l < n_layers; ++l) {
    const Tensor& a = trace.find(prefix + std::to_string(l) + (prefix == "encoder.layer" ? ".attn" : ".self_attn"))->tensor;
    const int64_t H = a.shape[0], L = a.shape[1];
    Tensor m({L, L});
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) {
        double v = 0.5 * (i == j);
        for (int64_t h = 0; h < H; ++h) v += 0.5 * a.data[size_t((h * L + i) * L + j)] / double(H);
        m.data[size_t(i * L + j)] = float(v);
        s += v;
      }
      for (int64_t j = 0; j < L; ++j) m.data[size_t(i * L + j)] = float(m.data[size_t(i * L + j)] / s);
    }
    layers.push_back(std::move(m));
  }
  return layers;
}

}  // namespace

TEST_CASE("flow heatmap: max-flow over the residual-mixed head means of the traced layers", "[ui][flow]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-encoder");
  const Model model(c, init_params(c, 5));
  const RunResult r = model.run("abab", "", RunOptions{});
  AttentionSelection sel{"encoder", "attn", 1, HeadFlow, 0};
  const HeatmapData d = flowHeatmap(r.trace, sel);
  const Tensor want = attention_flow(handMixedLayers(r.trace, "encoder.layer", 2));
  REQUIRE(d.rows == 4);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) CHECK(d.at(i, j) == Approx(want.data[size_t(i * 4 + j)]).margin(1e-5));
  CHECK(d.rowLabels == QStringList{"a", "b", "a", "b"});
  CHECK(d.title.contains("flow through layers 0-1"));
  // Long inputs: the encoder's first row only, the rest masked.
  const RunResult longer = model.run(std::string(60, 'q'), "", RunOptions{});
  const HeatmapData row = flowHeatmap(longer.trace, sel);
  CHECK_FALSE(row.masked(0, 5));
  CHECK(row.masked(1, 5));
  CHECK(row.title.contains("row 0 only"));
  // A pinned query: its row instead, equal to the max-flow of that row over the hand-mixed layers.
  sel.query = 37;
  const HeatmapData pinned = flowHeatmap(longer.trace, sel);
  const Tensor want37 = attention_flow(handMixedLayers(longer.trace, "encoder.layer", 2), {37});
  CHECK(pinned.masked(0, 5));
  for (int j : {0, 12, 37, 59}) {
    CHECK_FALSE(pinned.masked(37, j));
    CHECK(pinned.at(37, j) == Approx(want37.data[size_t(37 * 60 + j)]).margin(1e-5));
  }
  CHECK(pinned.title.contains("pinned query's row 37"));
}

TEST_CASE("the main heatmap's flow of a long input follows the pinned query", "[ui][flow]") {
  const std::string text(56, 'x');  // repeated labels: rows are told apart by position only
  uitest::RunWindow rw("preset:tiny-decoder", QString::fromStdString(text));
  AttentionSelection sel = rw.w.selection();
  sel.layer = 1;
  sel.head = HeadFlow;
  rw.w.setSelection(sel);
  const HeatmapData& last = uitest::heatmapView(rw.w)->data();
  REQUIRE(last.rows == 56);
  CHECK_FALSE(last.masked(55, 0));  // no pinned query: the decoder's last row
  CHECK(last.masked(20, 0));
  rw.w.selectQuery(20);
  const HeatmapData& pinned = uitest::heatmapView(rw.w)->data();
  const Tensor want = attention_flow(handMixedLayers(*rw.w.trace(), "decoder.layer", 2), {20});
  CHECK(pinned.masked(55, 0));
  for (int j : {0, 7, 20}) {
    CHECK_FALSE(pinned.masked(20, j));
    CHECK(pinned.at(20, j) == Approx(want.data[size_t(20 * 56 + j)]).margin(1e-5));
  }
  CHECK(pinned.title.contains("pinned query's row 20"));
  rw.w.selectQuery(-1);  // unpinned: back to the last row
  CHECK_FALSE(uitest::heatmapView(rw.w)->data().masked(55, 0));
}

TEST_CASE("value-weighted heatmap is alpha times the key's value norm, by position", "[ui][value-weighted]") {
  ensureApp();
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 5));
  RunOptions o;
  o.trace.value_norms = true;
  const RunResult r = model.run("abcab", "", o);
  const AttentionSelection sel{"decoder", "self_attn", 1, 2, 0};
  const HeatmapData d = valueWeightedHeatmap(r.trace, sel);
  const Tensor& a = r.trace.find("decoder.layer1.self_attn")->tensor;
  const Tensor& n = r.trace.find("decoder.layer1.self_attn.value_norms")->tensor;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j <= i; ++j) CHECK(d.at(i, j) == Approx(a.data[size_t((2 * 5 + i) * 5 + j)] * n.data[size_t(2 * 5 + j)]));
  CHECK(d.title.startsWith("value-weighted"));
  AttentionSelection mean = sel;
  mean.head = HeadMean;
  CHECK_THROWS_WITH(valueWeightedHeatmap(r.trace, mean), Catch::Contains("per head"));
}

TEST_CASE("the View menu's value-weighted toggle traces the norms and weights the main heatmap", "[ui][value-weighted]") {
  uitest::RunWindow rw("demo:induction", "atlasofheadsatlasofheads");
  CHECK(rw.w.trace()->find("decoder.layer0.self_attn.value_norms") == nullptr);
  uitest::action(rw.w, "valueWeighted")->setChecked(true);
  REQUIRE(rw.shown.wait(30000));
  rw.settle();
  const Tensor& n = rw.array("decoder.layer0.self_attn.value_norms");
  const Tensor& a = rw.array("decoder.layer0.self_attn");
  const HeatmapData& shown = uitest::heatmapView(rw.w)->data();
  REQUIRE(shown.rows == 24);
  const int L = 24;
  const int h = rw.w.selection().head;
  for (int i : {5, 23})
    for (int j : {0, 4}) CHECK(shown.at(i, j) == Approx(a.data[size_t((h * L + i) * L + j)] * n.data[size_t(h * L + j)]));
  // Copy (Edit menu): the figure on screen, value-weighted, as PNG and SVG.
  uitest::action(rw.w, "copyHeatmapFigure")->trigger();
  const QMimeData* copied = QGuiApplication::clipboard()->mimeData();
  REQUIRE(copied);
  CHECK_FALSE(qvariant_cast<QImage>(copied->imageData()).isNull());
  CHECK(copied->data("image/svg+xml").contains("<title>value-weighted"));
  // The head list offers the flow beside rollout.
  auto* heads = rw.w.findChild<QComboBox*>("headCombo");
  REQUIRE(heads);
  CHECK(heads->findData(static_cast<int>(HeadFlow)) >= 0);
}
