// Path patching's figure (ui/tools/patching_figure.h, what `atlas patch --site path --figure`
// draws): each cell is the core result's normalised value at [sender, receiver], by position;
// a sender at or after the receivers' layer has no path and is masked, never drawn as an effect.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/path_patching.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"
#include "ui/tools/patching_figure.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("path patching figure: sender cells by value and position, no-path senders masked", "[ui][patching][path]") {
  ModelConfig c = preset_test::small_preset_config("tiny-llama");
  c.n_layers = 3;
  const Model model(c, init_params(c, 8));
  const auto clean = model.tokenize("abcabcab", "").first, corrupted = model.tokenize("abcabdab", "").first;
  PathPatchSpec spec;
  spec.patch.metric = PatchMetric::KL;
  spec.input = ReceiverInput::Q;

  SECTION("fixed receivers: layers x heads") {
    spec.receivers = {{2, 1}, {1, 0}};  // the later receiver decides which senders have a path
    const PathPatchResult r = path_patching(model, clean, corrupted, spec, RunOptions{});
    const PanelPlot p = pathPatchingPlot(r);
    const HeatmapData& d = p.matrix;
    REQUIRE(d.rows == c.n_layers);
    REQUIRE(d.cols == c.n_heads);
    for (int l = 0; l < d.rows; ++l)
      for (int h = 0; h < d.cols; ++h) {
        INFO("L" << l << "H" << h);
        const double want = r.normalised[size_t(l * c.n_heads + h)];
        if (l < 2) {
          CHECK_FALSE(d.masked(l, h));
          CHECK(d.at(l, h) == Approx(want));
        } else {
          CHECK(d.masked(l, h));
        }
      }
    CHECK(d.rowLabels.value(2) == "L2");
    CHECK(d.colLabels.value(1) == "H1");
    CHECK(d.title.contains("into 2.1, 1.0 (their q)"));
  }
  SECTION("every head a receiver: senders x receivers") {
    const PathPatchResult r = path_patching(model, clean, corrupted, spec, RunOptions{});
    REQUIRE(r.shape.size() == 4);
    const PanelPlot p = pathPatchingPlot(r);
    const HeatmapData& d = p.matrix;
    const int n = int(c.n_layers * c.n_heads);
    REQUIRE(d.rows == n);
    REQUIRE(d.cols == n);
    for (int s = 0; s < n; ++s)
      for (int k = 0; k < n; ++k) {
        const bool path = s / c.n_heads < k / c.n_heads;
        INFO("sender " << s << " receiver " << k);
        CHECK(d.masked(s, k) == !path);
        if (path) CHECK(d.at(s, k) == Approx(r.normalised[size_t(s) * n + k]));
      }
    CHECK(d.rowLabels.value(n - 1) == QString("L%1H%2").arg(c.n_layers - 1).arg(c.n_heads - 1));
    CHECK(d.colLabels.value(c.n_heads) == "L1H0");
    CHECK(d.title.contains("into every head"));
  }
}
