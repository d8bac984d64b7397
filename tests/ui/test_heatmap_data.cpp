// Data behind the views: extraction from a Trace, aggregates, rollout, value mapping and
// colour maps. Oracles are hand-computed numbers and naive loops written here.
#include <catch2/catch.hpp>

#include <cmath>

#include "ui/views/colormap.h"
#include "ui/views/aggregate_heatmaps.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/positional_data.h"
#include "ui/views/value_mapper.h"
#include "ui/views/heatmap_painter.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::handAttention;
using atlas::uitest::handTrace;

TEST_CASE("attention families come from the trace's attention-map catalogue", "[ui][data]") {
  const Trace t = handTrace();
  const auto fams = attentionFamilies(t);
  REQUIRE(fams.size() == 3);
  CHECK(fams[0].stack == "encoder");
  CHECK(fams[0].kind == "attn");
  CHECK(fams[0].layers == 2);
  CHECK(fams[0].heads == 2);
  CHECK(fams[0].segments == 0);
  CHECK_FALSE(fams[0].steps);
  CHECK(fams[1].kind == "self_attn");
  CHECK(fams[2].kind == "cross_attn");
  CHECK_FALSE(fams[2].isSelfAttention());
  CHECK(attentionArrayName(t, {"decoder", "cross_attn", 0, 1}) == "decoder.layer0.cross_attn");
  // An array the catalogue does not describe is not attention to the views.
  Trace bare = t;
  bare.attention_maps.clear();
  CHECK(attentionFamilies(bare).empty());
  CHECK_THROWS_WITH(attentionArrayName(bare, {"encoder", "attn", 0, 0}), Catch::Contains("no encoder self-attention"));
}

TEST_CASE("segments and steps: families, maps and errors from hand-described maps", "[ui][data]") {
  // Transformer-XL: 2 segments of 2 tokens, segment 1's keys = 2 memory + 2 segment tokens;
  // then a Universal Transformer stack with 3 steps.
  Trace t;
  t.source_tokens = {{1, "a"}, {2, "b"}, {1, "a"}, {2, "b"}};
  auto xl = [&](int s, int lk, std::vector<float> v) {
    Tensor a({1, 2, lk});
    a.data.assign(v.begin(), v.end());
    const std::string name = "decoder.seg" + std::to_string(s) + ".layer0.self_attn";
    t.add(name, "", a);
    AttentionMap m;
    m.array = name;
    m.stack = "decoder";
    m.sublayer = "self_attn";
    m.segment = s;
    m.kind = AttentionMapKind::Memory;
    m.memory_keys = lk - 2;
    m.queries = {TokenSide::Source, 2 * s, 2};
    m.keys = {TokenSide::Source, 2 * s - m.memory_keys, lk};
    t.describe_attention(m);
  };
  xl(0, 2, {1, 0, 0.25f, 0.75f});
  xl(1, 4, {0.1f, 0.2f, 0.7f, 0, 0.1f, 0.2f, 0.3f, 0.4f});
  for (int n = 1; n <= 3; ++n) {
    const std::string name = "encoder.step" + std::to_string(n) + ".attn";
    Tensor a({2, 4, 4}, 0.25f);
    a.data[size_t(16 + 4 * 3 + 1)] = float(n);  // head 1, query 3, key 1 tells the steps apart
    t.add(name, "", a);
    AttentionMap m;
    m.array = name;
    m.stack = "encoder";
    m.sublayer = "attn";
    m.step = n;
    m.queries = m.keys = {TokenSide::Source, 0, 4};
    t.describe_attention(m);
  }
  t.finalize_attention_maps();
  const auto fams = attentionFamilies(t);
  REQUIRE(fams.size() == 2);
  CHECK(fams[0].label() == "decoder self-attention");
  CHECK(fams[0].segments == 2);
  CHECK(fams[0].layers == 1);
  CHECK(fams[0].layerWord() == "layer");
  CHECK(fams[1].steps);
  CHECK(fams[1].layers == 3);
  CHECK(fams[1].layerWord() == "step");

  const HeatmapData s1 = attentionHeatmap(t, {"decoder", "self_attn", 0, 0, 1});
  REQUIRE(s1.rows == 2);
  REQUIRE(s1.cols == 4);
  CHECK(s1.at(0, 2) == 0.7f);
  CHECK(s1.at(1, 3) == 0.4f);
  // Rows are segment 1's tokens; the first two keys are memory, marked.
  CHECK(s1.rowLabels == QStringList({"a", "b"}));
  CHECK(s1.colLabels == QStringList({"\u21BA a", "\u21BA b", "a", "b"}));
  CHECK(s1.title.contains("segment 1"));
  CHECK(attentionHeatmap(t, {"decoder", "self_attn", 0, 0, 0}).cols == 2);
  // Rollout within segment 0 (square), not over segment 1's memory.
  CHECK(rolloutApplies(t, fams[0], 0));
  CHECK_FALSE(rolloutApplies(t, fams[0], 1));
  CHECK_THROWS_WITH(attentionHeatmap(t, {"decoder", "self_attn", 0, HeadRollout, 1}), Catch::Contains("memory"));
  CHECK_THROWS_WITH(attentionArrayName(t, {"decoder", "self_attn", 0, 0, 5}),
                    Catch::Contains("decoder.seg5.layer0.self_attn") && Catch::Contains("segments 0 to 1"));

  // Layer index i is step i + 1.
  CHECK(attentionArrayName(t, {"encoder", "attn", 2, 0}) == "encoder.step3.attn");
  for (int l = 0; l < 3; ++l) CHECK(attentionHeatmap(t, {"encoder", "attn", l, 1}).at(3, 1) == float(l + 1));
  CHECK(attentionHeatmap(t, {"encoder", "attn", 0, 1}).title.contains("step 1"));
  CHECK(rolloutHeatmap(t, {"encoder", "attn", 2, HeadRollout}).title.contains("rollout of steps 1-3"));
  CHECK_THROWS_WITH(attentionArrayName(t, {"encoder", "attn", 3, 0}),
                    Catch::Contains("encoder.step4.attn") && Catch::Contains("steps 1 to 3"));
}

TEST_CASE("a CSR-only map is densified per head; cells outside the head's nonzeros are masked", "[ui][data]") {
  // 3 queries x 3 keys, 2 heads. Union pattern: row 0 {0}, row 1 {0, 1}, row 2 {1, 2};
  // head 0 owns every nonzero, head 1 not (2, 1).
  Trace t;
  t.source_tokens = {{1, "x"}, {2, "y"}, {1, "x"}};
  Tensor indptr({4}), indices({5}), values({2, 5}), own({2, 5});
  indptr.data = {0, 1, 3, 5};
  indices.data = {0, 0, 1, 1, 2};
  values.data = {1.0f, 0.4f, 0.6f, 0.3f, 0.7f, /* head 1 */ 1.0f, 0.5f, 0.5f, 0.0f, 1.0f};
  own.data = {1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
  t.add("encoder.layer0.attn.indptr", "", indptr, DType::I32);
  t.add("encoder.layer0.attn.indices", "", indices, DType::I32);
  t.add("encoder.layer0.attn.values", "", values);
  t.add("encoder.layer0.attn.allowed", "", own, DType::I32);
  for (AttentionMap& m : derive_attention_maps(t)) t.describe_attention(std::move(m));
  t.finalize_attention_maps();
  REQUIRE(t.attention_maps.size() == 1);
  REQUIRE(t.attention_maps[0].csr);
  REQUIRE_FALSE(t.attention_maps[0].dense);
  const float dense[2][3][3] = {{{1.0f, 0, 0}, {0.4f, 0.6f, 0}, {0, 0.3f, 0.7f}},
                                {{1.0f, 0, 0}, {0.5f, 0.5f, 0}, {0, 0, 1.0f}}};
  const bool allowed[2][3][3] = {{{1, 0, 0}, {1, 1, 0}, {0, 1, 1}}, {{1, 0, 0}, {1, 1, 0}, {0, 0, 1}}};
  for (int h = 0; h < 2; ++h) {
    const HeatmapData d = attentionHeatmap(t, {"encoder", "attn", 0, h});
    REQUIRE(d.rows == 3);
    REQUIRE(d.cols == 3);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        CHECK(d.at(i, j) == dense[h][i][j]);
        CHECK(d.masked(i, j) == !allowed[h][i][j]);
      }
    // Repeated labels stay separate columns, in position order.
    CHECK(d.colLabels == QStringList({"x", "y", "x"}));
  }
  const HeatmapData mean = attentionHeatmap(t, {"encoder", "attn", 0, HeadMean});
  CHECK(mean.at(2, 1) == Approx(0.15f));
  CHECK_FALSE(mean.masked(2, 1));  // the union of heads
  CHECK(mean.masked(0, 1));
}

TEST_CASE("a head's heatmap is that head's [Lq, Lk] slice with token labels", "[ui][data]") {
  const Trace t = handTrace();
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) {
      const HeatmapData d = attentionHeatmap(t, {"encoder", "attn", l, h});
      REQUIRE(d.rows == 3);
      REQUIRE(d.cols == 3);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const float expected = (l == 1 && i == 0 && j == 2) ? 0.0f : handAttention(l, h, i, j);
          CHECK(d.at(i, j) == expected);
        }
      CHECK(d.rowLabels == QStringList({"the", "cat", "sat"}));
      CHECK(d.colLabels == QStringList({"the", "cat", "sat"}));
    }
}

TEST_CASE("masks mark masked cells; an all-ones mask is dropped", "[ui][data]") {
  const Trace t = handTrace();
  const HeatmapData l0 = attentionHeatmap(t, {"encoder", "attn", 0, 0});
  CHECK(l0.mask.empty());
  const HeatmapData l1 = attentionHeatmap(t, {"encoder", "attn", 1, 0});
  CHECK(l1.masked(0, 2));
  CHECK_FALSE(l1.masked(0, 1));
  CHECK_FALSE(l1.masked(2, 2));
}

TEST_CASE("cross-attention rows are target tokens and columns source tokens", "[ui][data]") {
  const Trace t = handTrace();
  const HeatmapData d = attentionHeatmap(t, {"decoder", "cross_attn", 0, 1});
  REQUIRE(d.rows == 2);
  REQUIRE(d.cols == 3);
  CHECK(d.rowLabels == QStringList({"le", "chat"}));
  CHECK(d.colLabels == QStringList({"the", "cat", "sat"}));
  CHECK(d.at(1, 0) == 0.9f);  // head 1, query "chat", key "the"
  const HeatmapData s = attentionHeatmap(t, {"decoder", "self_attn", 0, 0});
  CHECK(s.rowLabels == QStringList({"le", "chat"}));
  CHECK(s.masked(0, 1));
}

TEST_CASE("mean and max over heads match hand sums", "[ui][data]") {
  const Trace t = handTrace();
  const HeatmapData mean = attentionHeatmap(t, {"encoder", "attn", 0, HeadMean});
  const HeatmapData mx = attentionHeatmap(t, {"encoder", "attn", 0, HeadMax});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const float a = handAttention(0, 0, i, j), b = handAttention(0, 1, i, j);
      CHECK(mean.at(i, j) == Approx((a + b) / 2).epsilon(1e-6));
      CHECK(mx.at(i, j) == (a > b ? a : b));
    }
}

TEST_CASE("a missing array or head is a clear error", "[ui][data]") {
  const Trace t = handTrace();
  CHECK_THROWS_WITH(attentionHeatmap(t, {"encoder", "attn", 5, 0}), Catch::Contains("encoder.layer5.attn"));
  CHECK_THROWS_WITH(attentionHeatmap(t, {"encoder", "attn", 0, 7}), Catch::Contains("2 heads"));
  CHECK_THROWS_WITH(attentionHeatmap(t, {"decoder", "cross_attn", 0, HeadRollout}),
                    Catch::Contains("self-attention"));
}

TEST_CASE("rollout is the product of row-normalised 0.5A+0.5I over layers", "[ui][data]") {
  const Trace t = handTrace();
  // Naive oracle: head mean, mix with identity, normalise rows, multiply (layer 1 on the left).
  double a[2][3][3];
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 3; ++i) {
      double sum = 0;
      for (int j = 0; j < 3; ++j) {
        double m = 0;
        for (int h = 0; h < 2; ++h) m += (l == 1 && i == 0 && j == 2) ? 0.0 : handAttention(l, h, i, j);
        a[l][i][j] = 0.5 * (m / 2) + (i == j ? 0.5 : 0.0);
        sum += a[l][i][j];
      }
      for (int j = 0; j < 3; ++j) a[l][i][j] /= sum;
    }
  double r[3][3] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) r[i][j] += a[1][i][k] * a[0][k][j];
  const HeatmapData d = attentionHeatmap(t, {"encoder", "attn", 1, HeadRollout});
  const HeatmapData d0 = attentionHeatmap(t, {"encoder", "attn", 0, HeadRollout});
  for (int i = 0; i < 3; ++i) {
    double rowSum = 0;
    for (int j = 0; j < 3; ++j) {
      CHECK(d.at(i, j) == Approx(r[i][j]).epsilon(1e-5));
      CHECK(d0.at(i, j) == Approx(a[0][i][j]).epsilon(1e-5));
      rowSum += d.at(i, j);
    }
    CHECK(rowSum == Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("rank in row counts larger unmasked weights", "[ui][data]") {
  HeatmapData d;
  d.rows = 1;
  d.cols = 4;
  d.values = {0.1f, 0.5f, 0.2f, 0.9f};
  d.mask = {1, 1, 1, 0};
  CHECK(d.rankInRow(0, 0) == 3);
  CHECK(d.rankInRow(0, 1) == 1);
  CHECK(d.rankInRow(0, 2) == 2);
}

TEST_CASE("value mapping: global, per-row, log and signed", "[ui][data]") {
  HeatmapData d;
  d.rows = d.cols = 2;
  d.values = {0.0f, 1.0f, 2.0f, 4.0f};
  ColorMapping m;
  {
    const ValueMapper v(d, m);
    CHECK(v(1, 1) == Approx(1.0));
    CHECK(v(1, 0) == Approx(0.5));
    CHECK(v(0, 1) == Approx(0.25));
    CHECK(v(0, 0) == Approx(0.0));
  }
  m.normalization = Normalization::Row;
  {
    const ValueMapper v(d, m);
    CHECK(v(0, 1) == Approx(1.0));
    CHECK(v(1, 0) == Approx(0.5));
  }
  m.normalization = Normalization::Global;
  m.scale = ColorScale::Log;
  m.logFloor = 1e-3f;
  {
    HeatmapData e = d;
    e.values = {0.004f, 0.04f, 0.4f, 4.0f};  // 1e-3, 1e-2, 1e-1, 1 of the max
    const ValueMapper v(e, m);
    CHECK(v(0, 0) == Approx(0.0).margin(1e-6));
    CHECK(v(0, 1) == Approx(1.0 / 3).epsilon(1e-4));
    CHECK(v(1, 0) == Approx(2.0 / 3).epsilon(1e-4));
    CHECK(v(1, 1) == Approx(1.0));
  }
  m.scale = ColorScale::Linear;
  {
    HeatmapData s;
    s.rows = 1;
    s.cols = 3;
    s.values = {-2.0f, 1.0f, 0.0f};
    const ValueMapper v(s, m);
    CHECK(v.signedData());
    CHECK(v(0, 0) == Approx(0.0));
    CHECK(v(0, 1) == Approx(0.75));
    CHECK(v(0, 2) == Approx(0.5));
  }
}

TEST_CASE("colour maps match published viridis/magma values", "[ui][colour]") {
  // matplotlib's viridis and magma at 0, 0.5 and 1 (hex values from its documentation).
  struct Ref {
    Colormap cmap;
    double t;
    int r, g, b;
  } refs[] = {{Colormap::Viridis, 0.0, 0x44, 0x01, 0x54}, {Colormap::Viridis, 0.5, 0x21, 0x91, 0x8c},
              {Colormap::Viridis, 1.0, 0xfd, 0xe7, 0x25}, {Colormap::Magma, 0.0, 0x00, 0x00, 0x04},
              {Colormap::Magma, 0.5, 0xb7, 0x37, 0x79},   {Colormap::Magma, 1.0, 0xfc, 0xfd, 0xbf}};
  for (const auto& r : refs) {
    const QColor c = evaluateColormap(r.cmap, r.t);
    INFO(colormapKey(r.cmap).toStdString() << " at " << r.t);
    CHECK(std::abs(c.red() - r.r) <= 6);
    CHECK(std::abs(c.green() - r.g) <= 6);
    CHECK(std::abs(c.blue() - r.b) <= 6);
  }
}

namespace {
double luminance(const QColor& c) {  // WCAG relative luminance, written independently here
  auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF());
}
}  // namespace

TEST_CASE("sequential maps brighten monotonically; the diverging map peaks at its centre", "[ui][colour]") {
  for (Colormap cm : {Colormap::Viridis, Colormap::Magma}) {
    double last = -1;
    for (int i = 0; i <= 50; ++i) {
      const double y = luminance(evaluateColormap(cm, i / 50.0));
      CHECK(y > last);
      last = y;
    }
  }
  double last = -1;
  for (int i = 0; i <= 25; ++i) {
    const double y = luminance(evaluateColormap(Colormap::Diverging, i / 50.0));
    CHECK(y > last);
    last = y;
  }
  for (int i = 26; i <= 50; ++i) {
    const double y = luminance(evaluateColormap(Colormap::Diverging, i / 50.0));
    CHECK(y < last);
    last = y;
  }
  const double y0 = luminance(evaluateColormap(Colormap::Diverging, 0.0));
  const double y1 = luminance(evaluateColormap(Colormap::Diverging, 1.0));
  CHECK(std::abs(y0 - y1) < 0.03);  // neither sign looks stronger
  const QColor lo = evaluateColormap(Colormap::Diverging, 0.0), hi = evaluateColormap(Colormap::Diverging, 1.0);
  CHECK(lo.blue() > lo.red());
  CHECK(hi.red() > hi.blue());
}

TEST_CASE("the raster pyramid colours cells, greys masked ones and averages 2x2 blocks", "[ui][raster]") {
  HeatmapData d;
  d.rows = d.cols = 4;
  // Left half 0, right half max (1); cell (3, 3) masked.
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) d.values.push_back(c < 2 ? 0.0f : 1.0f);
  d.mask.assign(16, 1);
  d.mask[15] = 0;
  ColorMapping m;
  const QColor grey(10, 200, 30);
  HeatmapRaster raster;
  raster.build(d, m, grey);
  REQUIRE(raster.levelCount() == 1);  // 4x4 is already small
  const QImage& img = raster.level(0);
  REQUIRE(img.size() == QSize(4, 4));
  CHECK(QColor(img.pixel(3, 3)) == grey);
  const QColor v0 = evaluateColormap(Colormap::Viridis, 0.0), v1 = evaluateColormap(Colormap::Viridis, 1.0);
  CHECK(std::abs(QColor(img.pixel(0, 0)).green() - v0.green()) <= 1);
  CHECK(std::abs(QColor(img.pixel(2, 0)).green() - v1.green()) <= 1);

  // 40 x 40 of alternating columns 0/1: level 1 averages each pair to the mean colour.
  HeatmapData big;
  big.rows = big.cols = 40;
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 40; ++c) big.values.push_back(static_cast<float>(c % 2));
  raster.build(big, m, grey);
  REQUIRE(raster.levelCount() == 3);  // 40 -> 20 -> 10
  CHECK(raster.level(1).size() == QSize(20, 20));
  CHECK(raster.level(2).size() == QSize(10, 10));
  const QColor avg(raster.level(1).pixel(5, 5));
  CHECK(std::abs(avg.red() - (v0.red() + v1.red()) / 2) <= 1);
  CHECK(std::abs(avg.green() - (v0.green() + v1.green()) / 2) <= 1);
  CHECK(std::abs(avg.blue() - (v0.blue() + v1.blue()) / 2) <= 1);
  // Zoomed out to a quarter pixel per cell the coarser level is used.
  CHECK(raster.levelFor(2.0) == 0);
  CHECK(raster.levelFor(0.5) == 1);
  CHECK(raster.levelFor(0.25) == 2);
  CHECK(raster.levelFor(0.01) == 2);
}

TEST_CASE("positional views read P and compute P P^T", "[ui][data]") {
  const Trace t = handTrace();
  const HeatmapData p = positionalHeatmap(t);
  REQUIRE(p.rows == 3);
  REQUIRE(p.cols == 4);
  CHECK(p.at(2, 1) == -0.42f);
  const HeatmapData s = positionalSimilarity(t);
  // Row 1 . row 2 by hand: 0.84*0.91 + 0.54*(-0.42) + 0.01*0.02 + 1*1
  CHECK(s.at(1, 2) == Approx(0.84 * 0.91 - 0.54 * 0.42 + 0.0002 + 1.0).epsilon(1e-5));
  CHECK(s.at(2, 1) == Approx(s.at(1, 2)));
}

TEST_CASE("colour bar ticks sit at round values: 1, 2, 2.5 or 5 times a power of ten", "[ui][heatmap][ticks]") {
  auto ticks = [](std::vector<float> values, ColorMapping m = {}) {
    HeatmapData d;
    d.rows = 1;
    d.cols = static_cast<int>(values.size());
    d.values = std::move(values);
    std::vector<std::pair<QString, float>> out;
    for (const auto& t : ValueMapper(d, m).colorBarTicks()) out.push_back({t.text, t.position});
    return out;
  };
  // Non-negative, max 0.362: 0, 0.1, 0.2, 0.3 at their fractions of the bar.
  const auto a = ticks({0.0f, 0.362f});
  REQUIRE(a.size() == 4);
  CHECK(a[1].first == "0.1");
  CHECK(a[3].first == "0.3");
  CHECK(a[3].second == Approx(0.3 / 0.362));
  // Signed, |max| 0.162: -0.1, 0, 0.1 around the centre.
  const auto b = ticks({-0.162f, 0.05f});
  REQUIRE(b.size() == 3);
  CHECK(b[0].first == "-0.1");
  CHECK(b[1].first == "0");
  CHECK(b[1].second == Approx(0.5));
  CHECK(b[2].second == Approx(0.5 + 0.5 * 0.1 / 0.162));
  // Attention weights up to 1: quarters.
  const auto c = ticks({0.0f, 1.0f});
  REQUIRE(c.size() == 5);
  CHECK(c[1].first == "0.25");
  // Log scale: decades from floor * max to max.
  ColorMapping log;
  log.scale = ColorScale::Log;
  const auto d = ticks({0.0f, 5.0f}, log);
  QStringList texts;
  for (const auto& [t, pos] : d) texts << t;
  CHECK(texts == QStringList{"0.01", "0.1", "1"});
}
