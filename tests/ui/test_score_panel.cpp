// The score-function grid in the window (ui/tools/score_panel.h) on real preset runs: opening it
// traces q and k, each heatmap is that function's softmax recomputed here by naive loops from
// the traced q and k, the model's own function reproduces the model's traced attention, the
// grid follows the linked selection, and the grid exports as figure and data.
#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <cmath>

#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "core/formats/npy.h"
#include "ui/tools/score_panel.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

// The window on a preset run, with the score-function dock.
struct ScoreDockWindow : uitest::RunWindow {
  ScoreDockWindow(const QString& preset, const QString& text)
      : RunWindow(preset, text, {1200, 900}) {}
  // Opens the dock and waits for the re-run that traces q and k.
  ScorePanel& openScores() {
    REQUIRE(uitest::dock(w, "scoresDock"));
    shown.clear();
    uitest::dock(w, "scoresDock")->show();
    REQUIRE(shown.wait(60000));
    settle();
    ScorePanel* p = uitest::scorePanel(w);
    REQUIRE(p);
    p->ensureBuilt();
    return *p;
  }
};

// softmax over j of score(q_i, k_j) for one head, by loops over the traced [L, heads*dh] arrays.
std::vector<double> naiveProbs(const Tensor& q, const Tensor& k, int head, int dh, bool scaled) {
  const int lq = static_cast<int>(q.shape[0]), lk = static_cast<int>(k.shape[0]);
  const int64_t qw = q.shape[1], kw = k.shape[1];
  std::vector<double> p(static_cast<size_t>(lq) * lk);
  for (int i = 0; i < lq; ++i) {
    double mx = -1e300;
    for (int j = 0; j < lk; ++j) {
      double s = 0;
      for (int d = 0; d < dh; ++d)
        s += double(q.data[size_t(i * qw + head * dh + d)]) * double(k.data[size_t(j * kw + head * dh + d)]);
      if (scaled) s /= std::sqrt(double(dh));
      p[size_t(i * lk + j)] = s;
      mx = std::max(mx, s);
    }
    double z = 0;
    for (int j = 0; j < lk; ++j) z += (p[size_t(i * lk + j)] = std::exp(p[size_t(i * lk + j)] - mx));
    for (int j = 0; j < lk; ++j) p[size_t(i * lk + j)] /= z;
  }
  return p;
}

int maxMismatches(const HeatmapData& d, const std::vector<double>& expected, double tol) {
  int bad = 0;
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < d.cols; ++j)
      if (std::abs(double(d.at(i, j)) - expected[size_t(i * d.cols + j)]) > tol) ++bad;
  return bad;
}

std::vector<double> headOf(const Tensor& attn, int head) {  // [heads, Lq, Lk] -> one head
  const int64_t n = attn.shape[1] * attn.shape[2];
  return std::vector<double>(attn.data.begin() + head * n, attn.data.begin() + (head + 1) * n);
}

int indexOf(ScoreFunction f) {
  const auto& all = all_score_functions();
  return static_cast<int>(std::find(all.begin(), all.end(), f) - all.begin());
}

}  // namespace

TEST_CASE("score panel: six functions on the selected head's traced q and k", "[ui][scores]") {
  ensureApp();
  ScoreDockWindow win("preset:tiny-encoder", "the cat sat on the mat");
  ScorePanel& p = win.openScores();
  REQUIRE(p.comparison());
  const ScoreComparison& c = *p.comparison();
  CHECK(c.attention == "encoder.layer0.attn");
  CHECK(c.head == 0);
  REQUIRE(p.functionCount() == 6);

  const Tensor& q = win.array("encoder.layer0.attn.q");
  const Tensor& k = win.array("encoder.layer0.attn.k");
  const int heads = static_cast<int>(win.array("encoder.layer0.attn").shape[0]);
  const int dh = static_cast<int>(q.shape[1]) / heads;
  const int L = static_cast<int>(q.shape[0]);
  const int sd = indexOf(ScoreFunction::ScaledDot), dot = indexOf(ScoreFunction::Dot);
  CHECK(maxMismatches(p.view(sd)->data(), naiveProbs(q, k, 0, dh, true), 1e-5) == 0);
  CHECK(maxMismatches(p.view(dot)->data(), naiveProbs(q, k, 0, dh, false), 1e-5) == 0);
  // The model uses scaled dot-product: that grid cell is the model's own attention.
  CHECK(c.entries[size_t(sd)].models_own);
  CHECK(maxMismatches(p.view(sd)->data(), headOf(win.array("encoder.layer0.attn"), 0), 1e-5) == 0);
  // Every applicable function is a distribution over the keys of each query.
  for (int f = 0; f < p.functionCount(); ++f) {
    if (!c.entries[size_t(f)].applicable) continue;
    const HeatmapData& d = p.view(f)->data();
    REQUIRE(d.rows == L);
    for (int i = 0; i < d.rows; ++i) {
      double s = 0;
      for (int j = 0; j < d.cols; ++j) s += d.at(i, j);
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
  }

  // The grid follows the linked selection: layer 1, head 1.
  AttentionSelection s = win.w.selection();
  s.layer = 1;
  s.head = 1;
  win.w.setSelection(s);
  REQUIRE(p.comparison());
  CHECK(p.comparison()->attention == "encoder.layer1.attn");
  CHECK(p.comparison()->head == 1);
  CHECK(maxMismatches(p.view(sd)->data(), naiveProbs(win.array("encoder.layer1.attn.q"),
                                                     win.array("encoder.layer1.attn.k"), 1, dh, true),
                      1e-5) == 0);

  // One query pinned in one function is pinned in all of them.
  p.view(dot)->setPinnedRow(2);
  for (int f = 0; f < p.functionCount(); ++f) CHECK(p.view(f)->pinnedRow() == 2);

  // Export: the grid as figures, its data as [functions, Lq, Lk] and CSV.
  QTemporaryDir dir;
  p.exportTo(dir.filePath("scores.svg"));
  p.exportTo(dir.filePath("scores.pdf"));
  p.exportTo(dir.filePath("scores.png"), 72);
  p.exportTo(dir.filePath("scores.npy"));
  p.exportTo(dir.filePath("scores.csv"));
  QFile svg(dir.filePath("scores.svg"));
  REQUIRE(svg.open(QIODevice::ReadOnly));
  const QByteArray svgText = svg.readAll();
  CHECK(svgText.contains("<svg"));
  CHECK(svgText.contains("additive"));
  QFile pdf(dir.filePath("scores.pdf"));
  REQUIRE(pdf.open(QIODevice::ReadOnly));
  CHECK(pdf.read(5) == "%PDF-");
  const QImage png(dir.filePath("scores.png"));
  REQUIRE_FALSE(png.isNull());
  const QSizeF inches = p.figure().sizeInches;
  CHECK(png.width() == std::lround(inches.width() * 72));
  CHECK(png.height() == std::lround(inches.height() * 72));
  const Tensor data = read_npy(dir.filePath("scores.npy").toStdString());
  REQUIRE(data.shape == Shape{6, L, L});
  const HeatmapData& d = p.view(dot)->data();
  int bad = 0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (data.data[size_t((dot * L + i) * L + j)] != d.at(i, j)) ++bad;
  CHECK(bad == 0);
  QFile csv(dir.filePath("scores.csv"));
  REQUIRE(csv.open(QIODevice::ReadOnly | QIODevice::Text));
  int applicable = 0;
  for (const auto& e : p.comparison()->entries) applicable += e.applicable;
  CHECK(csv.readAll().count('\n') == 1 + applicable * L * L);
}

TEST_CASE("score panel: a model with additive scores reproduces its own attention", "[ui][scores]") {
  ensureApp();
  ScoreDockWindow win("preset:tiny-score-additive", "attention is all");
  ScorePanel& p = win.openScores();
  REQUIRE(p.comparison());
  const int add = indexOf(ScoreFunction::Additive);
  const auto& e = p.comparison()->entries[size_t(add)];
  CHECK(e.models_own);
  CHECK(p.caption(add).contains("the model's own"));
  const std::string name = p.comparison()->attention;
  CHECK(maxMismatches(p.view(add)->data(), headOf(win.array(name), 0), 1e-5) == 0);
}

TEST_CASE("score panel: Transformer-XL (a score with relative terms of its own) says why and exports nothing",
          "[ui][scores]") {
  ensureApp();
  ScoreDockWindow win("preset:tiny-xl", "the cat sat");
  ScorePanel& p = win.openScores();
  CHECK_FALSE(p.comparison());
  CHECK(p.message().contains("xl layers run their own attention"));
  QTemporaryDir dir;
  CHECK_THROWS_WITH(p.exportTo(dir.filePath("scores.svg")), Catch::Contains("no score comparison"));
}
