// The Transformer-XL panel (ui/panels/transformer_xl/xl_panel.cpp) shows the main view's
// segment, layer and head: moving the main selection (the segment spin included) changes the
// panel's matrix to that segment's attention in the Trace, read here element by element. The
// panel has no segment choice of its own; without a chosen segment (the CLI) it lists them all.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QSpinBox>

#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"
#include "ui/panels/variant_panel.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_view.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

// The XL panel's attention plot as drawn, checked against head `head` of `array` in the trace
// (head -1: the mean over heads, summed here in double).
void requireXlPanelShows(uitest::RunWindow& rw, const std::string& array, int segment, int layer, int head) {
  VariantPanel* panel = uitest::variantPanel(rw.w, "xl");
  panel->ensureBuilt();
  REQUIRE_FALSE(panel->plots().empty());
  // One segment: its attention and its score terms, nothing of the other segments.
  for (const PanelPlot& p : panel->plots())
    CHECK(p.name.startsWith(head < 0 ? QString("segment %1, layer %2, mean over heads: ").arg(segment).arg(layer)
                                     : QString("segment %1, layer %2, head %3: ").arg(segment).arg(layer).arg(head)));
  panel->setCurrentPlot(0);
  const HeatmapData& d = panel->matrixView()->data();
  const Tensor& t = rw.array(array);  // [heads, Lq, Lk]
  const int heads = static_cast<int>(t.shape[0]), lq = static_cast<int>(t.shape[1]), lk = static_cast<int>(t.shape[2]);
  REQUIRE(d.rows == lq);
  REQUIRE(d.cols == lk);
  for (int i = 0; i < lq; ++i)
    for (int j = 0; j < lk; ++j) {
      INFO(array << " head " << head << " [" << i << ", " << j << "]");
      if (head >= 0) {
        CHECK(d.at(i, j) == t.data[(static_cast<size_t>(head) * lq + i) * lk + j]);
      } else {
        double sum = 0;
        for (int h = 0; h < heads; ++h) sum += t.data[(static_cast<size_t>(h) * lq + i) * lk + j];
        CHECK(d.at(i, j) == Approx(sum / heads).margin(1e-6));
      }
    }
}

}  // namespace

TEST_CASE("the Transformer-XL panel follows the main view's segment, layer and head", "[ui][xl]") {
  // 36 bytes: segments of 16, 16 and 4 tokens; segments 1 and 2 attend over 16 memory keys.
  uitest::RunWindow rw("preset:tiny-xl", "abababababababababababababababababab");
  QDockWidget* dock = uitest::variantDock(rw.w, "xl");
  dock->show();
  dock->raise();
  rw.settle();  // the panel asks for the score terms: one more run

  rw.w.setSelection({"decoder", "self_attn", 1, 2, 1});
  REQUIRE(rw.w.selection().segment == 1);
  requireXlPanelShows(rw, "decoder.seg1.layer1.self_attn", 1, 1, 2);
  CHECK(uitest::variantPanel(rw.w, "xl")->plots().size() == 2);  // attention, score terms

  auto* segmentSpin = rw.w.findChild<QSpinBox*>("segmentSpin");
  REQUIRE(segmentSpin);
  segmentSpin->setValue(2);
  REQUIRE(rw.w.selection().segment == 2);
  requireXlPanelShows(rw, "decoder.seg2.layer1.self_attn", 2, 1, 2);
  CHECK(uitest::variantPanel(rw.w, "xl")->matrixView()->data().rows == 4);

  rw.w.setSelection({"decoder", "self_attn", 0, 3, 0});
  requireXlPanelShows(rw, "decoder.seg0.layer0.self_attn", 0, 0, 3);

  // An aggregate head in the main view (mean, max): the panel shows the mean over heads, named so,
  // never head 0 under another name.
  for (int aggregate : {int(HeadMean), int(HeadMax)}) {
    rw.w.setSelection({"decoder", "self_attn", 1, aggregate, 1});
    REQUIRE(rw.w.selection().head == aggregate);
    requireXlPanelShows(rw, "decoder.seg1.layer1.self_attn", 1, 1, -1);
  }

  // No segment chosen (the CLI's panel export): every segment, in order.
  VariantPanel* panel = uitest::variantPanel(rw.w, "xl");
  PanelContext none;
  none.layer = 1;
  const std::vector<PanelPlot> all = panel->provider().plots(*rw.w.trace(), none);
  REQUIRE(all.size() == 6);
  CHECK(all[0].name.startsWith("segment 0, layer 1"));
  CHECK(all[2].name.startsWith("segment 1, layer 1"));
  CHECK(all[4].name.startsWith("segment 2, layer 1"));
}
