// The attention-sink column of the model grid: per layer and head, the mean weight
// the queries put on the first key. By value against the traced arrays (a hand-made trace worked
// out by hand, and every self-attention family of tiny-llama read straight from its arrays) and
// by position in the painted grid (bar heights on an absolute 0-1 scale).
#include <catch2/catch.hpp>

#include <QImage>
#include <QPainter>

#include "core/model/model.h"
#include "core/model/presets.h"
#include "tests/ui/ui_test_support.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/model_view.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("the sink column holds the mean weight on the first key, worked by hand", "[ui][data][sink]") {
  const Trace t = uitest::handTrace();
  const auto families = attentionFamilies(t);
  const AttentionFamily* self = findFamily(families, "decoder", "self_attn");
  REQUIRE(self);
  const ModelGridData grid = modelGridData(t, *self, true);
  REQUIRE(grid.columns.back() == HeadSink);
  // decoder self-attention, head 0 rows [1, 0], [0.4, 0.6]; head 1 rows [1, 0], [0.7, 0.3].
  CHECK(grid.sinkAt(0, 0) == Approx(0.7));
  CHECK(grid.sinkAt(0, 1) == Approx(0.85));
  CHECK(grid.strongestSinkHead(0) == 1);
  // The strip thumbnail carries the same values, a column per head.
  const HeatmapData& strip = grid.at(0, grid.columnCount() - 1);
  CHECK(strip.rows == 1);
  CHECK(strip.cols == 2);
  CHECK(strip.values == std::vector<float>{grid.sinkAt(0, 0), grid.sinkAt(0, 1)});
  // The figure's data stays the heads' maps: the sink is derived, like the other aggregates.
  CHECK(headShortName(HeadSink) == "sink");
}

TEST_CASE("the sink bars are drawn by position at their absolute height", "[ui][render][sink]") {
  uitest::ensureApp();
  const Trace t = uitest::handTrace();
  const auto families = attentionFamilies(t);
  const ModelGridData grid = modelGridData(t, *findFamily(families, "decoder", "self_attn"), true);
  QImage img(700, 300, QImage::Format_RGB32);
  img.fill(Qt::white);
  HeatmapStyle style;
  QPainter p(&img);
  const ModelGridLayout L = layoutModelGrid(&img, QRectF(img.rect()), grid, style);
  const auto rasters = buildGridRasters(grid, style);
  paintModelGrid(p, L, grid, style, &rasters);
  p.end();
  const QRectF cell = L.thumb(0, grid.columnCount() - 1);
  const ColorLut lut(style.mapping.colormap);
  const qreal w = cell.width() / 2;
  auto at = [&](int head, qreal fraction) {  // centre of the head's bar, `fraction` up the cell
    return img.pixelColor(QPointF(cell.left() + (head + 0.5) * w, cell.bottom() - fraction * cell.height()).toPoint());
  };
  auto near = [](QColor a, QColor b) {
    return std::abs(a.red() - b.red()) <= 2 && std::abs(a.green() - b.green()) <= 2 && std::abs(a.blue() - b.blue()) <= 2;
  };
  CHECK(near(at(0, 0.35), lut.color(0.7f)));   // inside head 0's bar (height 0.70)
  CHECK(near(at(0, 0.78), Qt::white));         // above it
  CHECK(near(at(1, 0.80), lut.color(0.85f)));  // head 1's bar reaches 0.85
  CHECK(near(at(1, 0.92), Qt::white));
}

TEST_CASE("tiny-llama's sink column matches its traced maps", "[ui][data][sink]") {
  const ModelConfig c = preset_config("tiny-llama");
  const Model model(c, init_params(c, c.seed));
  const Trace t = model.run("the sink the sink the sink", "", RunOptions{}).trace;  // repeated labels
  for (const AttentionFamily& f : attentionFamilies(t)) {
    const ModelGridData grid = modelGridData(t, f, true);
    REQUIRE(grid.columns.back() == HeadSink);
    for (int l = 0; l < f.layers; ++l) {
      const Tensor& probs = t.find(attentionArrayName(t, {f.stack, f.kind, l, 0}))->tensor;  // [H, L, L]
      const int64_t L = probs.dim(1);
      for (int h = 0; h < f.heads; ++h) {
        double sum = 0;
        for (int64_t i = 0; i < L; ++i) sum += probs.data[size_t((h * L + i) * L)];
        INFO(f.label().toStdString() << " layer " << l << " head " << h);
        CHECK(grid.sinkAt(l, h) == Approx(sum / double(L)).epsilon(1e-5));
      }
    }
  }
}
