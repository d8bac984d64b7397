// The heatmap of maps computed on request (core/model/attention_on_demand.h): small ones exactly
// as stored maps; one too large to hold as an overview of block maxima that the widget swaps
// for exact windows as it zooms in and pans, the cells by value and by position (repeated
// token labels) against the stored map of the same run.
#include <catch2/catch.hpp>

#include <QComboBox>

#include <QSignalSpy>
#include <QTest>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/map_overview.h"
#include "ui/views/heatmap_view.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

RunResult runWith(const Model& model, size_t length, MapStorage maps) {
  std::string text;
  while (text.size() < length) text += "to be or not to be, ";
  RunOptions o;
  o.trace.maps = maps;
  return model.run(text.substr(0, length), "", o);
}

Model tinyDecoder() {
  ModelConfig c = preset_config("tiny-decoder");
  c.max_positions = 4096;
  return Model(c, init_params(c, 5));
}

// The cells of `shown` (a window of the full matrix) against the full heatmap `full`.
int64_t cellsDiffering(const HeatmapData& shown, const HeatmapData& full) {
  int64_t wrong = 0;
  for (int r = 0; r < shown.rows; ++r)
    for (int c = 0; c < shown.cols; ++c) {
      const int i = shown.rowOrigin + r, j = shown.colOrigin + c;
      wrong += shown.at(r, c) != full.at(i, j) || shown.masked(r, c) != full.masked(i, j);
    }
  for (int r = 0; r < shown.rows; ++r) wrong += shown.rowLabels[r] != full.rowLabels[shown.rowOrigin + r];
  for (int c = 0; c < shown.cols; ++c) wrong += shown.colLabels[c] != full.colLabels[shown.colOrigin + c];
  return wrong;
}

// Windows are computed on a worker thread: the overview stands in until one is ready.
void waitForWindow(HeatmapView& view) {
  if (!view.data().pooled()) return;
  REQUIRE(view.detailPending());
  QSignalSpy ready(&view, &HeatmapView::detailReady);
  REQUIRE(ready.wait(30000));
}

}  // namespace

TEST_CASE("heatmap of a small on-demand map equals the stored map's", "[ui][on-demand]") {
  const Model model = tinyDecoder();
  const RunResult stored = runWith(model, 180, MapStorage::Stored);
  const RunResult computed = runWith(model, 180, MapStorage::OnDemand);
  for (int head : {0, 3, int(HeadMean), int(HeadMax)}) {
    INFO(head);
    const AttentionSelection sel{"decoder", "self_attn", 1, head, 0};
    const HeatmapData a = attentionHeatmap(stored.trace, sel), b = attentionHeatmap(computed.trace, sel);
    CHECK_FALSE(b.pooled());
    CHECK(b.detail == nullptr);
    REQUIRE(a.rows == b.rows);
    CHECK(a.values == b.values);
    CHECK(a.mask == b.mask);
    CHECK(a.rowLabels == b.rowLabels);
  }
}

TEST_CASE("a large on-demand map: overview of block maxima, exact windows as the view zooms and pans",
          "[ui][on-demand]") {
  ensureApp();
  const Model model = tinyDecoder();
  constexpr int L = 2100;  // 2100^2 cells > kExactHeatmapCells: an overview of 3 x 3 blocks
  const RunResult stored = runWith(model, L, MapStorage::Stored);
  const RunResult computed = runWith(model, L, MapStorage::OnDemand);
  const AttentionSelection sel{"decoder", "self_attn", 0, 2, 0};
  const HeatmapData full = attentionHeatmap(stored.trace, sel);
  const HeatmapData overview = attentionHeatmap(computed.trace, sel);
  REQUIRE(overview.pooled());
  REQUIRE(overview.detail);
  CHECK(overview.rowStep == 3);
  CHECK(overview.rows == 700);
  CHECK(overview.totalRows() == L);
  CHECK(overview.rowLabels[5] == "15\u201317");
  // Every overview cell is the largest allowed weight of its 3 x 3 block; a block above the
  // causal diagonal is masked.
  int64_t wrong = 0;
  for (int r = 0; r < overview.rows; ++r)
    for (int c = 0; c < overview.cols; ++c) {
      float mx = 0;
      bool any = false;
      for (int i = 3 * r; i < std::min(L, 3 * r + 3); ++i)
        for (int j = 3 * c; j < std::min(L, 3 * c + 3); ++j)
          if (!full.masked(i, j)) any = true, mx = std::max(mx, full.at(i, j));
      wrong += overview.masked(r, c) != !any || (any && overview.at(r, c) != mx);
    }
  CHECK(wrong == 0);

  HeatmapView view;
  view.resize(800, 700);
  view.setData(overview);
  view.show();
  CHECK(view.data().pooled());
  // Zoomed in to 300 x 300 tokens around (1500, 1200): an exact window around them.
  view.setMatrixWindow(QRectF(1200, 1500, 300, 300));
  view.setViewWindow(view.viewWindow());
  CHECK(view.data().pooled());  // at once: the overview, zoomed
  waitForWindow(view);
  REQUIRE_FALSE(view.data().pooled());
  CHECK(view.data().rowOrigin <= 1500);
  CHECK(view.data().rowOrigin + view.data().rows >= 1800);
  CHECK(view.matrixWindow().top() == Approx(1500));
  CHECK(cellsDiffering(view.data(), full) == 0);
  CHECK(view.data().valueMax == overview.valueMax);  // the overview's colour scale
  // Pinned rows are the full matrix's.
  view.setPinnedRow(1650);
  CHECK(view.pinnedRow() == 1650);
  // Panning far away fetches another window.
  view.setMatrixWindow(QRectF(10, 40, 200, 200));
  view.setViewWindow(view.viewWindow());
  waitForWindow(view);
  REQUIRE_FALSE(view.data().pooled());
  CHECK(view.data().rowOrigin <= 40);
  CHECK(cellsDiffering(view.data(), full) == 0);
  CHECK(view.describeCell(5, 7).contains(QString("query %1").arg(view.data().rowOrigin + 5)));
  // Zooming out past the detail size returns to the overview.
  view.zoomBy(0.1, QPointF(400, 350));
  CHECK(view.data().pooled());
  view.resetZoom();
  CHECK(view.matrixWindow() == QRectF(0, 0, L, L));
  CHECK(view.pinnedRow() == 1650);
}

TEST_CASE("a window still computing when the view gets other data is dropped", "[ui][on-demand]") {
  ensureApp();
  const Model model = tinyDecoder();
  const RunResult computed = runWith(model, 2100, MapStorage::OnDemand);
  const HeatmapData overview = attentionHeatmap(computed.trace, {"decoder", "self_attn", 1, 0, 0});
  REQUIRE(overview.detail);
  HeatmapView view;
  view.resize(700, 600);
  view.setData(overview);
  view.setMatrixWindow(QRectF(900, 1000, 200, 200));
  view.setViewWindow(view.viewWindow());
  REQUIRE(view.detailPending());
  // Another model's small map arrives before the window: the window must not replace it.
  HeatmapData small;
  small.rows = small.cols = 3;
  small.values = {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f};
  small.rowLabels = small.colLabels = QStringList{"a", "a", "b"};
  view.setData(small);
  QSignalSpy ready(&view, &HeatmapView::detailReady);
  for (int i = 0; i < 200 && view.detailPending(); ++i) QTest::qWait(10);
  CHECK_FALSE(view.detailPending());
  CHECK(ready.isEmpty());
  CHECK(view.data().rows == 3);
  CHECK(view.data().values == small.values);
  CHECK(view.matrixWindow() == QRectF(0, 0, 3, 3));
}

TEST_CASE("the grid's one-pass overviews equal each column's own overview", "[ui][on-demand]") {
  const Model model = tinyDecoder();
  const RunResult computed = runWith(model, 2100, MapStorage::OnDemand);
  const std::vector<HeatmapData> all = onDemandOverviews(computed.trace, {"decoder", "self_attn", 1, 0, 0});
  REQUIRE(all.size() == 4 + 2);
  for (int head : {0, 1, 2, 3, int(HeadMean), int(HeadMax)}) {
    INFO(head);
    const HeatmapData one = attentionHeatmap(computed.trace, {"decoder", "self_attn", 1, head, 0});
    const HeatmapData& mine = all[size_t(head >= 0 ? head : head == HeadMean ? 4 : 5)];
    CHECK(mine.values == one.values);
    CHECK(mine.mask == one.mask);
    CHECK(mine.sink == one.sink);
    CHECK(mine.title == one.title);
  }
  // Both sides above run OnDemandMap::pooled: against the stored run, by loops over its dense
  // maps, each overview cell is its 3 x 3 block's largest weight (heads, their mean summed in
  // head order then divided, their max) and the sink the mean weight on key 0.
  const RunResult stored = runWith(model, 2100, MapStorage::Stored);
  const Tensor& dense = stored.trace.find(stored.trace.attention_maps.back().array)->tensor;
  const int L = 2100, H = 4;
  auto weight = [&](int which, int i, int j) {
    if (which < H) return dense.data[(size_t(which) * L + i) * L + j];
    float sum = 0, most = 0;
    for (int h = 0; h < H; ++h) {
      sum += dense.data[(size_t(h) * L + i) * L + j];
      most = std::max(most, dense.data[(size_t(h) * L + i) * L + j]);
    }
    return which == H ? sum / float(H) : most;
  };
  for (int which = 0; which < H + 2; ++which) {
    INFO("overview " << which);
    const HeatmapData& o = all[size_t(which)];
    int64_t wrong = 0;
    for (int r = 0; r < o.rows; ++r)
      for (int c = 0; c < o.cols; ++c) {
        float mx = 0;
        for (int i = 3 * r; i < std::min(L, 3 * r + 3); ++i)
          for (int j = 3 * c; j < std::min({L, 3 * c + 3, i + 1}); ++j) mx = std::max(mx, weight(which, i, j));
        wrong += o.at(r, c) != mx;
      }
    CHECK(wrong == 0);
    double sink = 0;
    for (int i = 0; i < L; ++i) sink += weight(which, i, 0);
    CHECK(o.sink == Approx(sink / L).epsilon(1e-9));
  }
  // A map small enough to show whole has no overviews.
  const RunResult small = runWith(model, 300, MapStorage::OnDemand);
  CHECK(onDemandOverviews(small.trace, {"decoder", "self_attn", 1, 0, 0}).empty());
}

TEST_CASE("View > Attention maps switches the app between stored and on-demand maps", "[ui][on-demand]") {
  uitest::RunWindow rw("preset:tiny-decoder", "abcabcabc the cat");
  auto rerunWith = [&](MapStorage storage) {
    rw.shown.clear();
    const char* name = storage == MapStorage::OnDemand ? "mapsOnDemand" : storage == MapStorage::Stored ? "mapsStored" : "mapsAutomatic";
    uitest::action(rw.w, name)->trigger();
    REQUIRE(rw.shown.wait(60000));
    rw.settle();
  };
  rerunWith(MapStorage::OnDemand);
  REQUIRE(rw.w.trace());
  for (const AttentionMap& m : rw.w.trace()->attention_maps) CHECK(m.on_demand);
  const HeatmapData onDemand = uitest::heatmapView(rw.w)->data();
  REQUIRE_FALSE(onDemand.empty());
  rerunWith(MapStorage::Stored);
  for (const AttentionMap& m : rw.w.trace()->attention_maps) CHECK((m.dense && !m.on_demand));
  CHECK(uitest::heatmapView(rw.w)->data().values == onDemand.values);  // the same weights, bit for bit
  CHECK(uitest::heatmapView(rw.w)->data().mask == onDemand.mask);
  rerunWith(MapStorage::Auto);  // the setting persists: leave the default for other tests
  CHECK(uitest::action(rw.w, "mapsAutomatic")->isChecked());
}

TEST_CASE("the app's kept overviews belong to the run on screen", "[ui][on-demand]") {
  const QString a = QString(2100, 'a'), b = QString("ab").repeated(1050);
  uitest::RunWindow rw("preset:tiny-rope", a);
  auto waitRun = [&](auto&& start) {
    rw.shown.clear();
    start();
    REQUIRE(rw.shown.wait(60000));
    rw.settle();
  };
  waitRun([&] { uitest::action(rw.w, "mapsOnDemand")->trigger(); });
  const HeatmapData first = uitest::heatmapView(rw.w)->data();
  REQUIRE(first.pooled());
  const AttentionMap m = rw.w.trace()->attention_maps.front();  // a copy: the trace goes with the run
  const AttentionSelection sel{QString::fromStdString(m.stack), QString::fromStdString(m.sublayer), 0, 0, 0};
  CHECK(first.values == attentionHeatmap(*rw.w.trace(), sel).values);
  // Another head's first overview is computed off the GUI thread: the view says so at once,
  // then shows it; going back to a head seen before is immediate.
  auto* heads = uitest::part<QComboBox>(rw.w, "headCombo");  // the head selector, as a user picks
  heads->setCurrentIndex(heads->findData(1));
  CHECK(uitest::overviewPending(rw.w));
  CHECK(uitest::heatmapView(rw.w)->data().empty());
  CHECK(uitest::heatmapView(rw.w)->data().emptyText.startsWith("computing an overview of 2100"));
  REQUIRE(rw.overviews.wait(60000));
  AttentionSelection head1 = sel;
  head1.head = 1;
  CHECK(uitest::heatmapView(rw.w)->data().values == attentionHeatmap(*rw.w.trace(), head1).values);
  heads->setCurrentIndex(heads->findData(0));
  CHECK_FALSE(uitest::overviewPending(rw.w));
  CHECK(uitest::heatmapView(rw.w)->data().values == first.values);
  waitRun([&] { rw.w.setSourceText(b); });
  const HeatmapData second = uitest::heatmapView(rw.w)->data();
  REQUIRE(second.pooled());
  CHECK(second.values != first.values);  // another text: not the last run's overview
  CHECK(second.values == attentionHeatmap(*rw.w.trace(), sel).values);
  waitRun([&] { uitest::action(rw.w, "mapsAutomatic")->trigger(); });
}

TEST_CASE("an overview made from a shared trace reads its queries and keys in place and keeps it alive",
          "[ui][on-demand]") {
  const Model model = tinyDecoder();
  auto trace = std::make_shared<const Trace>(runWith(model, 2100, MapStorage::OnDemand).trace);
  const std::weak_ptr<const Trace> watch = trace;
  const AttentionSelection sel{"decoder", "self_attn", 1, 2, 0};
  HeatmapData shared = attentionHeatmap(trace, sel);
  const HeatmapData copied = attentionHeatmap(*trace, sel);  // its own copy of q and k
  REQUIRE(shared.pooled());
  REQUIRE(shared.detail);
  CHECK(shared.values == copied.values);
  trace.reset();
  CHECK_FALSE(watch.expired());  // the overview holds the run's trace
  const HeatmapData a = shared.detail->window(1000, 1040, 990, 1030), b = copied.detail->window(1000, 1040, 990, 1030);
  CHECK(a.values == b.values);
  CHECK(a.mask == b.mask);
  CHECK(a.rowLabels == b.rowLabels);
  shared = HeatmapData{};
  CHECK(watch.expired());  // and lets it go with the overview
}
