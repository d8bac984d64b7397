// The SNAIL explorer (ui/panels/snail/snail_panel.h): the receptive-field heatmap is checked against an
// enumeration of every subset of the dilations written here (an output step i reads input j
// through the convolutions iff i - j is a sum of distinct dense blocks' dilations); the
// attention heatmap is causal with rows summing to one; controls re-run; exports are valid.
#include <catch2/catch.hpp>

#include <QFile>
#include <QImage>
#include <QMenuBar>
#include <QTemporaryDir>
#include <set>

#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "core/formats/npy.h"
#include "ui/panels/snail/snail_panel.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

// Offsets reachable by a subset of `blocks` copies of the dilations 1, 2, 4, ... (or 2, 4, ...)
// with ceil(log2 L) dense blocks per TC block, by brute-force enumeration of subsets.
std::set<int> reachableOffsets(int L, int blocks, bool paper) {
  int n = 0;
  while ((1 << n) < L) ++n;
  std::vector<int> dil;
  for (int b = 0; b < blocks; ++b)
    for (int k = 0; k < n; ++k) dil.push_back(paper ? 2 << k : 1 << k);
  std::set<int> out;
  for (uint64_t mask = 0; mask < (uint64_t(1) << dil.size()); ++mask) {
    int s = 0;
    for (size_t k = 0; k < dil.size(); ++k)
      if (mask >> k & 1) s += dil[k];
    if (s < L) out.insert(s);
  }
  return out;
}

void requireFieldMatches(const SnailPanel& p, int L, int blocks, bool paper) {
  const std::set<int> reach = reachableOffsets(L, blocks, paper);
  const HeatmapData& d = p.fieldView()->data();
  REQUIRE(d.rows == L);
  REQUIRE(d.cols == L);
  int bad = 0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) {
      const float expected = j <= i && reach.count(i - j) ? 1.0f : 0.0f;
      if (d.at(i, j) != expected || d.masked(i, j) != (j > i)) ++bad;
    }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("SNAIL explorer: receptive field by subset enumeration, causal attention", "[ui][snail]") {
  ensureApp();
  SnailPanel p;
  p.setText("abcdefghijkl");  // L = 12: dense blocks with dilations 1, 2, 4, 8
  p.setTcBlocks(1);
  requireFieldMatches(p, 12, 1, false);
  p.setTcBlocks(2);
  requireFieldMatches(p, 12, 2, false);
  CHECK(p.summary().contains("dilations 1, 2, 4, 8"));
  // The paper's dilations are all even: odd distances are never reached by the convolutions.
  p.setPaperDilations(true);
  requireFieldMatches(p, 12, 2, true);
  CHECK(p.fieldView()->data().at(11, 10) == 0.0f);
  CHECK(p.summary().contains("dilations 2, 4, 8, 16"));

  // Each attention block is causal and a distribution over the earlier steps.
  for (int b = 0; b <= 2; ++b) {
    p.setAttentionBlock(b);
    const HeatmapData& a = p.attentionView()->data();
    REQUIRE(a.rows == 12);
    CHECK(a.title.contains(QString("block %1").arg(b)));
    for (int i = 0; i < a.rows; ++i) {
      double s = 0;
      for (int j = 0; j < a.cols; ++j) {
        if (j > i) CHECK(a.at(i, j) == 0.0f);
        s += a.at(i, j);
      }
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
  }
  // A different seed draws different weights.
  const std::vector<float> before = p.attentionView()->data().values;
  p.setSeed(5);
  CHECK(p.attentionView()->data().values != before);

  // Pins are shared; exports are valid files holding both matrices.
  p.attentionView()->setPinnedRow(4);
  CHECK(p.fieldView()->pinnedRow() == 4);
  QTemporaryDir dir;
  p.exportTo(dir.filePath("snail.svg"));
  p.exportTo(dir.filePath("snail.png"), 72);
  p.exportTo(dir.filePath("snail.npy"));
  p.exportTo(dir.filePath("snail.csv"));
  QFile svg(dir.filePath("snail.svg"));
  REQUIRE(svg.open(QIODevice::ReadOnly));
  CHECK(svg.readAll().contains("receptive field"));
  CHECK_FALSE(QImage(dir.filePath("snail.png")).isNull());
  const Tensor t = read_npy(dir.filePath("snail.npy").toStdString());
  REQUIRE(t.shape == Shape{2, 12, 12});
  CHECK(t.data[size_t(12 * 12 + 11 * 12 + 3)] == p.fieldView()->data().at(11, 3));
  CHECK(t.data[size_t(4 * 12 + 2)] == p.attentionView()->data().at(4, 2));
  QFile csv(dir.filePath("snail.csv"));
  REQUIRE(csv.open(QIODevice::ReadOnly | QIODevice::Text));
  CHECK(csv.readAll().count('\n') == 1 + 144);

  // Empty input: a message, nothing to export.
  p.setText("");
  CHECK_FALSE(p.error().isEmpty());
  CHECK(p.attentionView()->data().empty());
  CHECK_THROWS(p.exportTo(dir.filePath("empty.svg")));
}

TEST_CASE("SNAIL explorer opens from the View menu on the window's input", "[ui][snail]") {
  ensureApp();
  MainWindow w;
  w.setSourceText("hello snail");
  QAction* action = nullptr;
  for (QAction* a : w.menuBar()->actions())
    if (a->menu())
      for (QAction* b : a->menu()->actions())
        if (b->text().remove('&').startsWith("SNAIL explorer")) action = b;
  REQUIRE(action);
  action->trigger();
  auto* panel = w.findChild<SnailPanel*>();
  REQUIRE(panel);
  CHECK(panel->trace().source_tokens.size() == 11);
  CHECK(panel->fieldView()->data().rows == 11);
}
