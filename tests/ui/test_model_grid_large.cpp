// The layers x heads grid on long inputs: thumbnails of maps over 256 cells a side are
// max-pooled (checked against a block maximum computed here from the full map), the sink
// column is computed from the full maps (checked against the traced weights on the first key),
// and the rollout column, layers x L^3 work, is left out when that is too much.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/ui/ui_test_support.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/model_view.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

Model presetModel(const std::string& name, int64_t max_positions) {
  ModelConfig c = preset_config(name);
  c.max_positions = max_positions;
  return Model(c, init_params(c, 2));
}

std::string text(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i) s += "abcab cabca bcabc "[i % 18];
  return s;
}

}  // namespace

TEST_CASE("grid thumbnails of long maps are block maxima; the sink reads the full maps", "[ui][grid]") {
  uitest::ensureApp();
  const Model model = presetModel("tiny-decoder", 1024);
  const RunResult r = model.run(text(600), "", RunOptions{});
  const auto families = attentionFamilies(r.trace);
  REQUIRE(families.size() == 1);
  const ModelGridData d = modelGridData(r.trace, families[0], true);
  REQUIRE(std::find(d.columns.begin(), d.columns.end(), int(HeadRollout)) != d.columns.end());
  for (int l = 0; l < d.layers(); ++l)
    for (int h = 0; h < d.family.heads; ++h) {
      INFO("layer " << l << " head " << h);
      const HeatmapData full = attentionHeatmap(r.trace, {families[0].stack, families[0].kind, l, h, 0});
      REQUIRE(full.rows == 600);
      const HeatmapData& t = d.at(l, h);
      // ceil(600 / 256) = 3: 200 x 200 blocks of 3 x 3.
      REQUIRE(t.rows == 200);
      REQUIRE(t.cols == 200);
      int wrong = 0, wrongMask = 0;
      for (int i = 0; i < 200; ++i)
        for (int j = 0; j < 200; ++j) {
          float best = 0;
          bool any = false;
          for (int a = 3 * i; a < 3 * i + 3; ++a)
            for (int b = 3 * j; b < 3 * j + 3; ++b) {
              const size_t at = size_t(a) * 600 + b;
              if (!full.mask.empty() && !full.mask[at]) continue;
              best = any ? std::max(best, full.values[at]) : full.values[at];
              any = true;
            }
          const size_t at = size_t(i) * 200 + j;
          if (any && t.values[at] != best) ++wrong;
          if (!t.mask.empty() && bool(t.mask[at]) != any) ++wrongMask;
        }
      CHECK(wrong == 0);
      CHECK(wrongMask == 0);
      // The sink: the mean over query rows of the weight on key 0, from the trace itself.
      const Tensor& a = r.trace.find("decoder.layer" + std::to_string(l) + ".self_attn")->tensor;
      double sum = 0;
      for (int i = 0; i < 600; ++i) sum += a.data[size_t((h * 600 + i) * 600)];
      CHECK(d.sinkAt(l, h) == Approx(sum / 600).epsilon(1e-5));
    }
}

TEST_CASE("the grid leaves out rollout when layers x L^3 is too much work", "[ui][grid]") {
  uitest::ensureApp();
  const Model model = presetModel("tiny-sparse-fixed", 4096);
  const RunResult r = model.run(text(2800), "", RunOptions{});  // 2 x 2800^3 = 4.4e10
  const auto families = attentionFamilies(r.trace);
  REQUIRE(families.size() == 1);
  REQUIRE(rolloutApplies(r.trace, families[0], 0));
  const ModelGridData d = modelGridData(r.trace, families[0], true);
  CHECK(std::find(d.columns.begin(), d.columns.end(), int(HeadRollout)) == d.columns.end());
  CHECK(std::find(d.columns.begin(), d.columns.end(), int(HeadMean)) != d.columns.end());
  CHECK(d.at(0, 0).rows == 255);  // blocks of ceil(2800 / 256) = 11 rows
}
