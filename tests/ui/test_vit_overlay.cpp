// The ViT overlay of the "Input image" dock (ui/views/image_input_view.cpp, ui/views/image_patch_overlay.cpp)
// on preset:tiny-vit (32 x 32 image, 8 x 8 patches: a 4 x 4 grid + [CLS] = 17 tokens, 2 layers,
// 4 heads). The oracle reads the run's attention arrays directly and computes the rollout with
// plain loops here, never through attention_rollout() or the overlay code.
#include <catch2/catch.hpp>

#include <QFile>
#include <QImage>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "ui/views/colormap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_view.h"
#include "ui/views/image_input_view.h"
#include "ui/main_window/main_window.h"
#include "core/formats/npy.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

constexpr int kGrid = 4, kTokens = 17, kHeads = 4;

// 40 x 48 pixels with colours varying across and down, so every patch differs.
QImage testImage() {
  QImage img(48, 40, QImage::Format_RGB888);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 48; ++x) img.setPixel(x, y, qRgb(5 * x, 6 * y, (x * y) % 256));
  return img;
}

// The window on tiny-vit with the test image as input. A patch model cannot run text, so the
// model is loaded first (its text run fails, which is fine) and then the image is set.
struct VitWindow {
  bool appReady = uitest::ensureApp() != nullptr;
  MainWindow w;
  QSignalSpy shown{&w, &MainWindow::traceShown};

  VitWindow() {
    w.resize(1100, 800);
    w.show();
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.loadModel("preset:tiny-vit");
    REQUIRE(ready.wait(60000));
    shown.clear();
    REQUIRE(w.setImage(testImage(), "colours"));
    REQUIRE(shown.wait(60000));
    while (shown.wait(300)) {
    }
    INFO(w.lastError().toStdString());
    REQUIRE(w.lastError().isEmpty());
    REQUIRE(w.trace()->source_tokens.size() == size_t(kTokens));
  }
  const Tensor& attention(int layer) {  // [heads, L, L]
    const TracedArray* a = w.trace()->find("encoder.layer" + std::to_string(layer) + ".attn");
    REQUIRE(a);
    REQUIRE(a->tensor.shape == Shape{kHeads, kTokens, kTokens});
    return a->tensor;
  }
  float attn(int layer, int head, int query, int key) {
    return attention(layer).data[size_t((head * kTokens + query) * kTokens + key)];
  }
};

// Rollout up to `last` with plain loops: R = prod_l rownorm(0.5 * (mean_h A_l + I)), last first.
std::vector<double> naiveRollout(VitWindow& win, int last) {
  const int n = kTokens;
  std::vector<double> r(size_t(n * n), 0.0);
  for (int i = 0; i < n; ++i) r[size_t(i * n + i)] = 1.0;
  for (int l = 0; l <= last; ++l) {
    std::vector<double> a(size_t(n * n), 0.0);
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        double mean = 0;
        for (int h = 0; h < kHeads; ++h) mean += win.attn(l, h, i, j) / kHeads;
        a[size_t(i * n + j)] = 0.5 * (mean + (i == j ? 1.0 : 0.0));
        sum += a[size_t(i * n + j)];
      }
      for (int j = 0; j < n; ++j) a[size_t(i * n + j)] /= sum;
    }
    std::vector<double> next(size_t(n * n), 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < n; ++k) next[size_t(i * n + j)] += a[size_t(i * n + k)] * r[size_t(k * n + j)];
    r = next;
  }
  return r;
}

// The overlay's patches against `expected(key)` for keys 1..16 (patch r, c is key 1 + 4 r + c).
template <class F>
int mismatches(const PatchOverlay& o, F expected) {
  int bad = 0;
  for (int r = 0; r < kGrid; ++r)
    for (int c = 0; c < kGrid; ++c)
      if (std::abs(o.at(r, c) - expected(1 + r * kGrid + c)) > 1e-5) ++bad;
  return bad;
}

// The centre of the widget area whose points the view maps to `token` (scanned, not computed
// from the view's layout), or (-1, -1).
QPointF centreOf(const ImageInputView& view, int token) {
  double sx = 0, sy = 0;
  int n = 0;
  for (int y = 0; y < view.height(); ++y)
    for (int x = 0; x < view.width(); ++x)
      if (view.tokenAt(QPointF(x + 0.5, y + 0.5)) == token) {
        sx += x + 0.5;
        sy += y + 0.5;
        ++n;
      }
  return n ? QPointF(sx / n, sy / n) : QPointF(-1, -1);
}

}  // namespace

TEST_CASE("a ViT takes an image as patches; the dock overlays the query's attention", "[ui][image][vit]") {
  VitWindow win;
  CHECK(uitest::imageMode(win.w));
  const QString hint = win.w.findChild<QPlainTextEdit*>("sourceEdit")->placeholderText();
  CHECK(hint.contains("48 x 40 pixels resized to 32 x 32, 16 patches of 8 + [CLS]"));
  CHECK(win.w.trace()->source_tokens[0].label == "[CLS]");
  ImageInputView* view = uitest::imageView(win.w);
  REQUIRE(view);
  CHECK(view->patchMode());
  CHECK(view->image().size() == QSize(32, 32));

  SECTION("default: [CLS]'s row in the selected layer and head") {
    REQUIRE(win.w.selection().head == 0);
    const int layer = win.w.selection().layer;
    const PatchOverlay& o = view->overlay();
    REQUIRE(o.values.size() == size_t(kGrid * kGrid));
    CHECK(o.query == 0);
    CHECK(mismatches(o, [&](int key) { return win.attn(layer, 0, 0, key); }) == 0);
    CHECK(o.clsValue == Approx(win.attn(layer, 0, 0, 0)).margin(1e-6));
    CHECK(view->overlayStatus().startsWith("[CLS] column: "));
  }

  SECTION("follows the layer and head selectors, aggregates included") {
    win.w.setSelection({"encoder", "attn", 1, 2});
    CHECK(mismatches(view->overlay(), [&](int key) { return win.attn(1, 2, 0, key); }) == 0);
    win.w.setSelection({"encoder", "attn", 0, HeadMean});
    CHECK(mismatches(view->overlay(), [&](int key) {
            float mean = 0;
            for (int h = 0; h < kHeads; ++h) mean += win.attn(0, h, 0, key) / kHeads;
            return mean;
          }) == 0);
  }

  SECTION("rollout mode: the naive rollout's row up to the selected layer") {
    view->setOverlayMode(PatchOverlayMode::Rollout);
    for (int layer : {1, 0}) {
      win.w.setSelection({"encoder", "attn", layer, 1});
      const std::vector<double> r = naiveRollout(win, layer);
      const PatchOverlay& o = view->overlay();
      REQUIRE(o.mode == PatchOverlayMode::Rollout);
      INFO("layer " << layer);
      CHECK(mismatches(o, [&](int key) { return float(r[size_t(key)]); }) == 0);  // row 0: [CLS]
      CHECK(o.clsValue == Approx(r[0]).margin(1e-5));
    }
    // The selected query's row, here patch (2, 1) = token 10.
    win.w.selectQuery(10);
    const std::vector<double> r = naiveRollout(win, 0);
    CHECK(view->overlay().query == 10);
    CHECK(mismatches(view->overlay(), [&](int key) { return float(r[size_t(10 * kTokens + key)]); }) == 0);
  }

  SECTION("clicking a patch selects its token; [CLS] comes back with its button") {
    view->resize(360, 320);
    const QPointF first = centreOf(*view, 1), last = centreOf(*view, kTokens - 1);
    REQUIRE(first.x() >= 0);
    // Patch (r, c) sits c cells right and r cells down of patch (0, 0), square cells.
    const double cell = (last.x() - first.x()) / (kGrid - 1);
    CHECK(cell > 10);
    CHECK((last.y() - first.y()) / (kGrid - 1) == Approx(cell).margin(1.0));
    for (int r = 0; r < kGrid; ++r)
      for (int c = 0; c < kGrid; ++c) {
        const QPointF at(first.x() + c * cell, first.y() + r * cell);
        INFO("patch " << r << "," << c);
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at.toPoint());
        CHECK(uitest::heatmapView(win.w)->pinnedRow() == 1 + r * kGrid + c);
        CHECK(view->selectedPixel() == r * kGrid + c);
        CHECK(view->overlay().query == 1 + r * kGrid + c);
      }
    win.w.setSelection({"encoder", "attn", 1, 3});
    CHECK(mismatches(view->overlay(), [&](int key) { return win.attn(1, 3, kTokens - 1, key); }) == 0);
    auto* cls = view->findChild<QPushButton*>("selectCls");
    REQUIRE(cls);
    cls->click();
    CHECK(uitest::heatmapView(win.w)->pinnedRow() == 0);
    CHECK(view->selectedPixel() == -1);  // [CLS] has no cell
    CHECK(view->overlay().query == 0);
  }

  SECTION("exports: the figure holds the overlay, the data are [grid, grid]") {
    const PatchOverlay o = view->overlay();
    REQUIRE_FALSE(o.empty());
    QTemporaryDir dir;
    for (const char* name : {"vit.svg", "vit.pdf", "vit.npy", "vit.csv"}) view->exportTo(dir.filePath(name));
    view->exportTo(dir.filePath("vit.png"), 72);
    QFile svg(dir.filePath("vit.svg"));
    REQUIRE(svg.open(QIODevice::ReadOnly));
    const QByteArray text = svg.readAll();
    CHECK(text.contains("<svg"));
    // The largest patch value is drawn in the top colour of the scale, see-through.
    CHECK(text.contains(ColorLut(Colormap::Viridis).color(1.0f).name().toLatin1()));
    CHECK(text.contains("fill-opacity"));
    CHECK(text.contains("Attention of [CLS]"));
    const Tensor values = read_npy(dir.filePath("vit.npy").toStdString());
    REQUIRE(values.shape == Shape{kGrid, kGrid});
    CHECK(values.data == o.values);
    QFile csv(dir.filePath("vit.csv"));
    REQUIRE(csv.open(QIODevice::ReadOnly | QIODevice::Text));
    const QList<QByteArray> lines = csv.readAll().trimmed().split('\n');
    REQUIRE(lines.size() == 1 + kGrid * kGrid);
    CHECK(lines[0] == "row,col,token,value");
    CHECK(lines[6].startsWith("1,1,6,"));
    QFile pdf(dir.filePath("vit.pdf"));
    REQUIRE(pdf.open(QIODevice::ReadOnly));
    CHECK(pdf.read(5) == "%PDF-");
    CHECK_FALSE(QImage(dir.filePath("vit.png")).isNull());
  }
}

TEST_CASE("the image carries over from a pixel model to a ViT as patches", "[ui][image][vit]") {
  uitest::ensureApp();
  MainWindow w;
  w.resize(1100, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("abc");
  w.loadModel("preset:tiny-local2d");
  REQUIRE(shown.wait(60000));
  REQUIRE(w.setImage(testImage(), "colours"));
  REQUIRE(shown.wait(60000));
  REQUIRE_FALSE(uitest::imageView(w)->patchMode());
  shown.clear();
  w.loadModel("preset:tiny-vit");
  REQUIRE(shown.wait(60000));
  while (shown.wait(300)) {
  }
  INFO(w.lastError().toStdString());
  CHECK(w.lastError().isEmpty());
  CHECK(uitest::imageMode(w));
  REQUIRE(w.trace()->source_tokens.size() == size_t(kTokens));
  CHECK(w.trace()->source_tokens[16].label == "3,3");
  CHECK(uitest::imageView(w)->patchMode());
  CHECK(uitest::imageView(w)->overlay().values.size() == size_t(kGrid * kGrid));
}

TEST_CASE("a text model refuses an image, pointing to ViT models", "[ui][image][vit]") {
  uitest::ensureApp();
  MainWindow w;
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("the cat");
  w.loadModel("preset:tiny-encoder");
  REQUIRE(shown.wait(60000));
  CHECK_FALSE(w.setImage(testImage(), "colours"));
  CHECK(w.lastError().contains("takes text, not images"));
  CHECK(w.lastError().contains("ViT"));
  CHECK(w.lastError().contains("preset:tiny-vit"));
  CHECK_FALSE(uitest::imageMode(w));
}

TEST_CASE("a ViT loaded without an image starts on the built-in test card", "[ui][vit]") {
  REQUIRE(uitest::ensureApp());
  MainWindow w;
  w.resize(1100, 800);
  w.show();
  QSignalSpy ready(&w, &MainWindow::modelReady);
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.loadModel("preset:tiny-vit");
  REQUIRE(ready.wait(60000));
  REQUIRE((shown.count() > 0 || shown.wait(60000)));
  INFO(w.lastError().toStdString());
  CHECK(w.lastError().isEmpty());
  CHECK(uitest::imageMode(w));
  REQUIRE(w.trace());
  CHECK(w.trace()->source_tokens.size() == size_t(kTokens));
  CHECK(w.trace()->source_tokens[0].label == "[CLS]");
  CHECK(w.findChild<QPlainTextEdit*>()->placeholderText().contains("built-in test card"));
  // Typing returns to text, which a ViT refuses with a message saying what to do.
  w.findChild<QPlainTextEdit*>()->setPlainText("a cat");
  CHECK(uitest::waitUntil([&] { return !uitest::imageMode(w); }, 60000));
}
