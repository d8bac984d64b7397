// Legibility of the views: categorical colours for ids (LSH buckets), colour-bar ticks that
// do not overlap, the layers x heads grid on one shared colour scale, and grid headers that fit
// 12-32 heads. Oracles: values worked here by hand or read from the traced arrays in loops.
#include <catch2/catch.hpp>

#include <QImage>
#include <QPainter>
#include <cmath>
#include <set>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "ui/views/colormap.h"
#include "ui/views/heatmap_painter.h"
#include "ui/views/model_view.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

double rgbDistance(QRgb a, QRgb b) {
  const double dr = qRed(a) - qRed(b), dg = qGreen(a) - qGreen(b), db = qBlue(a) - qBlue(b);
  return std::sqrt(dr * dr + dg * dg + db * db);
}

// A model like `preset` with `heads` heads (d 64), run on a short text.
RunResult runWithHeads(int heads, const std::string& preset = "tiny-decoder") {
  ModelConfig c = preset_config(preset);
  c.n_heads = heads;
  const Model m(c, init_params(c, 3));
  return m.run("attention atlas", "", RunOptions{});
}

}  // namespace

TEST_CASE("ids get distinct categorical colours, neighbours clearly apart", "[ui][legibility]") {
  std::set<QRgb> seen;
  for (int id = 0; id < 64; ++id) {
    seen.insert(categoryColor(id));
    if (id > 0) CHECK(rgbDistance(categoryColor(id), categoryColor(id - 1)) > 60);
  }
  CHECK(seen.size() == 64);
  CHECK(categoryColor(-1) == qRgb(128, 128, 128));
}

TEST_CASE("a categorical heatmap colours each cell by its id, and its bar is a legend of ids",
          "[ui][legibility]") {
  ensureApp();
  HeatmapData d;
  d.rows = 2;
  d.cols = 3;
  d.values = {0, 1, 2, 2, 0, 1};
  d.categories = 3;
  d.valueName = "bucket";
  HeatmapRaster raster;
  raster.build(d, ColorMapping{}, Qt::gray);
  const QImage& img = raster.level(0);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) CHECK(img.pixel(c, r) == categoryColor(static_cast<int>(d.at(r, c))));
  // A masked cell keeps the mask colour.
  d.mask = {1, 1, 1, 1, 0, 1};
  raster.build(d, ColorMapping{}, QColor(168, 168, 168));
  CHECK(raster.level(0).pixel(1, 1) == QColor(168, 168, 168).rgb());

  const ValueMapper mapper(d, ColorMapping{});
  const auto ticks = mapper.colorBarTicks();
  REQUIRE(ticks.size() == 3);
  for (int id = 0; id < 3; ++id) {
    CHECK(ticks[id].text == QString::number(id));
    CHECK(ticks[id].position == Approx((id + 0.5) / 3));
  }
  CHECK(mapper.colorBarTitle() == "bucket");
  // The painted bar: block id from the bottom in the id's colour.
  QImage bar(60, 90, QImage::Format_RGB32);
  bar.fill(Qt::white);
  {
    QPainter p(&bar);
    paintColorBar(p, QRectF(5, 0, 20, 90), mapper, ColorMapping{}, HeatmapStyle::light(), QFont());
  }
  CHECK(bar.pixel(15, 75) == categoryColor(0));  // bottom third
  CHECK(bar.pixel(15, 45) == categoryColor(1));
  CHECK(bar.pixel(15, 15) == categoryColor(2));
}

TEST_CASE("colour-bar ticks that would overlap are dropped, the ends kept", "[ui][legibility]") {
  HeatmapData d;
  d.rows = 1;
  d.cols = 64;
  for (int i = 0; i < 64; ++i) d.values.push_back(float(i));
  d.categories = 64;
  const ValueMapper mapper(d, ColorMapping{});
  const auto fit = colorBarTicksThatFit(mapper, 120.0, 12.0);
  REQUIRE(fit.size() >= 2);
  CHECK(fit.front().text == "0");
  CHECK(fit.back().text == "63");
  CHECK(fit.size() <= 11);  // at most one label per line of the 120-unit bar
  for (size_t k = 1; k < fit.size(); ++k) CHECK((fit[k].position - fit[k - 1].position) * 120.0 >= 12.0 * 0.95);
  // A tall bar keeps every tick.
  CHECK(colorBarTicksThatFit(mapper, 64 * 20.0, 12.0).size() == 64);
}

TEST_CASE("the grid on one shared scale maps every tile against the largest weight of any tile",
          "[ui][legibility][grid]") {
  ensureApp();
  // An encoder: every causal map's first row is 1, so causal tiles share their maximum anyway.
  const RunResult r = runWithHeads(4, "tiny-encoder");
  const auto fams = attentionFamilies(r.trace);
  REQUIRE_FALSE(fams.empty());
  const ModelGridData g = modelGridData(r.trace, fams[0], true);
  // The oracle: the largest weight of any head map of the family, read from the arrays.
  float largest = 0;
  for (int l = 0; l < fams[0].layers; ++l) {
    const Tensor& a = r.trace.find(attentionArrayName(r.trace, {fams[0].stack, fams[0].kind, l, 0}))->tensor;
    for (float v : a.data) largest = std::max(largest, v);
  }
  CHECK(g.maxValue == Approx(largest));  // mean/max/rollout tiles do not exceed the heads' largest

  HeatmapStyle shared = HeatmapStyle::light();
  shared.mapping.sharedScale = true;
  const HeatmapStyle own = HeatmapStyle::light();
  const auto sharedRasters = buildGridRasters(g, shared);
  const auto ownRasters = buildGridRasters(g, own);
  const ColorLut lut(Colormap::Viridis);
  const int col = 1;  // head 1 of layer 1
  const HeatmapData& tile = g.at(1, col);
  float tileMax = 0;
  for (float v : tile.values) tileMax = std::max(tileMax, v);
  REQUIRE(tileMax < g.maxValue);  // else the two scales coincide for this tile
  int checked = 0;
  for (int i = 0; i < tile.rows; ++i)
    for (int j = 0; j < tile.cols; ++j) {
      if (tile.masked(i, j)) continue;
      const size_t at = static_cast<size_t>(1) * g.columnCount() + col;
      CHECK(sharedRasters[at].level(0).pixel(j, i) == lut.rgb(tile.at(i, j) / g.maxValue));
      CHECK(ownRasters[at].level(0).pixel(j, i) == lut.rgb(tile.at(i, j) / tileMax));
      ++checked;
    }
  CHECK(checked > 10);
  // With row normalisation there is no shared scale.
  shared.mapping.normalization = Normalization::Row;
  CHECK(tileMapping(g, shared.mapping).fixedMax == 0.0f);
}

TEST_CASE("grid headers stand upright when 16 or 32 heads do not fit side by side, thinned to fit",
          "[ui][legibility][grid]") {
  ensureApp();
  QImage device(620, 300, QImage::Format_RGB32);
  const HeatmapStyle style = HeatmapStyle::light();
  const QFontMetricsF fm(figureFont(&device, style.fontSize), &device);
  for (int heads : {4, 16, 32}) {
    CAPTURE(heads);
    const RunResult r = runWithHeads(heads);
    const ModelGridData g = modelGridData(r.trace, attentionFamilies(r.trace)[0], true);
    const ModelGridLayout L = layoutModelGrid(&device, QRectF(0, 0, 620, 300), g, style);
    qreal widest = 0;
    for (int c : g.columns) widest = std::max(widest, fm.horizontalAdvance(headShortName(c)));
    if (heads == 4) {
      CHECK_FALSE(L.uprightHeaders);
      CHECK(widest <= L.cellW);
      continue;
    }
    CHECK(L.uprightHeaders);
    CHECK(L.headerH >= widest);  // every name fits its band
    CHECK(L.cellW * L.headerStep >= fm.height());  // labelled heads a line apart
    CHECK(L.grid.top() - L.headerH >= L.title.bottom() - 0.5);  // the band is below the title
    // The colour bar keeps room for its title although two layers make a short grid.
    CHECK(L.colorBar.height() >= std::min(6 * fm.height(), 300 - L.grid.top() - 4));
    // The layout paints (the screenshots of 16- and 32-head models were looked at).
    QPainter p(&device);
    paintModelGrid(p, L, g, style, nullptr);
  }
}

TEST_CASE("masked cells of the grid's tiles are hatched like the heatmap's once large enough",
          "[ui][legibility][grid]") {
  ensureApp();
  const RunResult r = runWithHeads(4);  // causal: each tile's upper triangle is masked
  const ModelGridData g = modelGridData(r.trace, attentionFamilies(r.trace)[0], true);
  const HeatmapStyle style = HeatmapStyle::light();
  auto hatchPixels = [&](int width, bool upper) {
    QImage img(width, width / 2, QImage::Format_RGB32);
    const ModelGridLayout L = layoutModelGrid(&img, QRectF(0, 0, img.width(), img.height()), g, style);
    {
      QPainter p(&img);
      paintModelGrid(p, L, g, style, nullptr);
    }
    // Head 0 of layer 0: count hatch-coloured pixels in the cells above (masked) or below the
    // diagonal, away from the cell edges.
    const QRectF t = L.thumb(0, 0);
    const HeatmapData& h = g.at(0, 0);
    const qreal cw = t.width() / h.cols, ch = t.height() / h.rows;
    int count = 0;
    for (int i = 0; i < h.rows; ++i)
      for (int j = 0; j < h.cols; ++j) {
        if ((j > i) != upper) continue;
        for (int y = int(t.top() + i * ch + 1); y < int(t.top() + (i + 1) * ch - 1); ++y)
          for (int x = int(t.left() + j * cw + 1); x < int(t.left() + (j + 1) * cw - 1); ++x)
            count += rgbDistance(img.pixel(x, y), style.hatchColor.rgb()) < 40 ? 1 : 0;
      }
    return count;
  };
  CHECK(hatchPixels(3000, true) > 100);  // large tiles: the masked triangle is hatched
  CHECK(hatchPixels(3000, false) == 0);  // and nothing else
  CHECK(hatchPixels(400, true) == 0);    // cells of a few pixels: plain grey, as the heatmap
}

TEST_CASE("a title wider than its figure wraps onto lines the layout keeps room for, every word kept",
          "[ui][legibility][title]") {
  ensureApp();
  QImage device(600, 600, QImage::Format_RGB32);
  const HeatmapStyle style = HeatmapStyle::light();
  const QFont font = figureFont(&device, style.fontSize * 1.25, true);
  const QFontMetricsF fm(font, &device);
  const QString title = "A very long title that a user typed to describe this figure in a paper, wider than it";
  const qreal width = 200;
  const QStringList lines = titleLines(title, fm, width);
  // Oracle: the words, in order, across the lines; each line within the band.
  REQUIRE(lines.size() > 1);
  REQUIRE(lines.size() <= 3);
  CHECK(lines.join(' ') == title);
  for (const QString& l : lines) CHECK(fm.horizontalAdvance(l) <= width);
  CHECK(titleHeight(title, fm, width) == Approx(fm.height() * (lines.size() + 0.6)));
  // One short title keeps the one line (and the height) titles always had.
  CHECK(titleLines("layer 0, head 1", fm, width) == QStringList{"layer 0, head 1"});
  CHECK(titleHeight("layer 0, head 1", fm, width) == Approx(fm.height() * 1.6));
  // A word longer than the band is elided, never drawn past it.
  const QStringList one = titleLines(QString(80, 'x'), fm, width);
  REQUIRE(one.size() == 1);
  CHECK(one[0].endsWith(QChar(0x2026)));
  CHECK(fm.horizontalAdvance(one[0]) <= width);
  // The heatmap's layout puts its cells below every line of the title.
  HeatmapData data;
  data.rows = data.cols = 3;
  data.values.assign(9, 0.5f);
  data.rowLabels = data.colLabels = QStringList{"a", "b", "a"};
  data.title = title;
  const HeatmapLayout L = layoutHeatmap(&device, QRectF(0, 0, width, 400), data, style, QRectF());
  CHECK(L.title.height() == Approx(fm.height() * (lines.size() + 0.6)));
  CHECK(L.cells.top() >= L.title.bottom());
}
