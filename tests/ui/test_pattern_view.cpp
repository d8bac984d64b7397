// The pattern view: its density statistics and tiles against naive counts written here from
// the pattern equations (Sparse Transformer strided, causal) and from the traced masks, and
// the image overlay of a local 2D model against the traced attention row.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/views/pattern_view.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

// The pattern dock opened and built on a run.
struct PatternDockWindow : uitest::RunWindow {
  PatternDockWindow(const QString& preset, const QString& text) : RunWindow(preset, text) {
    uitest::dock(w, "patternDock")->show();
    uitest::dock(w, "patternDock")->raise();
    uitest::patternView(w)->ensureBuilt();
  }
};

// Strided, causal, stride l (tiny-sparse-strided, per_head): head 0 uses A1 = {max(0, i-l) <= j <= i},
// head 1 uses A2 = {j <= i : (i - j) mod l = 0}.
bool strided(int head, int64_t i, int64_t j, int64_t l) {
  if (j > i) return false;
  return head % 2 == 0 ? j >= std::max<int64_t>(0, i - l) : (i - j) % l == 0;
}

}  // namespace

TEST_CASE("pattern view: strided statistics and tiles equal a naive count", "[ui][pattern]") {
  ensureApp();
  PatternDockWindow win("preset:tiny-sparse-strided", "the cat sat on the mat");
  PatternView* v = uitest::patternView(win.w);
  const int64_t L = 300, l = 16;
  for (int head : {0, 1}) {
    AttentionSelection s = win.w.selection();
    s.head = head;
    win.w.setSelection(s);
    v->setWindow(L, 0, 0, 1);
    v->ensureBuilt();
    int64_t nnz = 0, mn = L, mx = 0;
    for (int64_t i = 0; i < L; ++i) {
      int64_t n = 0;
      for (int64_t j = 0; j < L; ++j) n += strided(head, i, j, l);
      nnz += n;
      mn = std::min(mn, n);
      mx = std::max(mx, n);
    }
    const PatternSummary& st = v->pattern().stats;
    CHECK(st.length == L);
    CHECK(st.nnz == nnz);
    CHECK(st.minRow == mn);
    CHECK(st.maxRow == mx);
    CHECK(st.density == Approx(double(nnz) / (L * L)));
    CHECK(st.meanRow == Approx(double(nnz) / L));
    // Zoom 1: the tile is the mask itself.
    const HeatmapData& d = v->matrixView()->data();
    REQUIRE(d.rows == L);
    int wrong = 0;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) wrong += (d.at(int(i), int(j)) > 0.5f) != strided(head, i, j, l);
    CHECK(wrong == 0);
  }
  // A long pattern as a zoomed tile: 5000 positions, 10 cells per pixel, window from row 2000.
  v->setWindow(5000, 2000, 1000, 10);
  v->ensureBuilt();
  const HeatmapData& d = v->matrixView()->data();
  CHECK(d.rows <= 512);
  CHECK(d.rowLabels.front() == "2000");
  for (auto [y, x] : {std::pair<int, int>{0, 0}, {5, 3}, {40, 140}, {100, 299}}) {
    int64_t n = 0;
    for (int64_t i = (200 + y) * 10; i < (201 + y) * 10; ++i)
      for (int64_t j = (100 + x) * 10; j < (101 + x) * 10; ++j) n += strided(1, i, j, l);
    CHECK(d.at(y, x) == Approx(n / 100.0));
  }
  QTemporaryDir dir;
  v->exportCurrent(dir.filePath("pattern.png"), 72);
  CHECK_FALSE(QImage(dir.filePath("pattern.png")).isNull());
}

TEST_CASE("pattern view: causal and full masks from the trace", "[ui][pattern]") {
  ensureApp();
  {
    PatternDockWindow win("preset:tiny-decoder", "a causal decoder");
    const auto& st = uitest::patternView(win.w)->pattern().stats;
    const int64_t L = static_cast<int64_t>(win.w.trace()->source_tokens.size());
    CHECK(st.length == L);
    CHECK(st.nnz == L * (L + 1) / 2);
    CHECK(st.minRow == 1);
    CHECK(st.maxRow == L);
    CHECK(uitest::patternView(win.w)->statsText().contains("nonzeros"));
  }
  {
    PatternDockWindow win("preset:tiny-encoder", "full attention");
    const auto& st = uitest::patternView(win.w)->pattern().stats;
    const int64_t L = static_cast<int64_t>(win.w.trace()->source_tokens.size());
    CHECK(st.nnz == L * L);
    CHECK(st.density == Approx(1.0));
  }
}

TEST_CASE("pattern view: image overlay of a local 2D model", "[ui][pattern]") {
  ensureApp();
  // 96 bytes = 3 rows of the 32-pixel-wide image.
  PatternDockWindow win("preset:tiny-local2d", QString(96, 'x'));
  PatternView* v = uitest::patternView(win.w);
  REQUIRE(v->isImageModel());
  const int q = 70;  // row 2, column 6
  v->setQueryPixel(q);
  v->ensureBuilt();
  const HeatmapData& img = v->imageView()->data();
  REQUIRE(img.cols == 32);
  REQUIRE(img.rows == 3);
  const Tensor& a = win.w.trace()->find("decoder.layer0.self_attn")->tensor;  // [heads, L, L]
  const TracedArray* mask = win.w.trace()->find("decoder.layer0.self_attn.mask");
  const int64_t L = a.shape[1];
  int wrong = 0, allowed = 0;
  for (int64_t j = 0; j < L; ++j) {
    const float expected = a.data[static_cast<size_t>(q * L + j)];
    if (std::abs(img.at(int(j / 32), int(j % 32)) - expected) > 1e-7f) ++wrong;
    if (mask) wrong += (!img.masked(int(j / 32), int(j % 32))) != (mask->tensor.data[static_cast<size_t>(q * L + j)] != 0.0f);
    allowed += !img.masked(int(j / 32), int(j % 32));
    if (img.masked(int(j / 32), int(j % 32))) CHECK(expected == 0.0f);  // no weight outside the pattern
  }
  CHECK(wrong == 0);
  CHECK(allowed > 1);
  CHECK(allowed < q + 1);  // local: fewer keys than the causal prefix
}

TEST_CASE("pattern view: after an image model, a dense model's run shows its own mask", "[ui][pattern]") {
  ensureApp();
  PatternDockWindow win("preset:tiny-local2d", QString(96, 'x'));
  REQUIRE(uitest::patternView(win.w)->isImageModel());
  win.w.setSourceText("a causal decoder");
  win.w.loadModel("preset:tiny-decoder");  // no sparse pattern: no image, the causal mask
  REQUIRE(win.shown.wait(60000));
  win.settle();
  REQUIRE(win.w.lastError().isEmpty());
  PatternView* v = uitest::patternView(win.w);
  v->ensureBuilt();
  CHECK_FALSE(v->isImageModel());
  const auto& st = v->pattern().stats;
  const int64_t L = static_cast<int64_t>(win.w.trace()->source_tokens.size());
  CHECK(L == 16);  // the new text's bytes, not the 96 pixels
  CHECK(st.length == L);
  CHECK(st.nnz == L * (L + 1) / 2);
}
