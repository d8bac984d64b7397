// The variant panels' contracts on hand-built traces: every plot shows the numbers written
// into the trace arrays (read back from the heatmap widget or from the Qt Charts series on
// screen), and every plot exports as a valid SVG / PDF / PNG / .npy / .csv file.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <QBarCategoryAxis>
#include <QChart>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QTableWidget>
#include <QSignalSpy>
#include <QTest>
#include <QXmlStreamReader>

#include "core/analysis/head_statistics.h"
#include "core/formats/model_io.h"
#include "ui/views/heatmap_view.h"
#include "ui/panels/panel_chart.h"
#include "tests/ui/ui_test_support.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/panel_registry.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::plotIndex;
using atlas::uitest::readAll;

namespace {

Tensor filled(Shape shape, std::vector<float> values) {
  Tensor t(std::move(shape));
  REQUIRE(t.data.size() == values.size());
  t.data.assign(values.begin(), values.end());
  return t;
}

Trace withTokens(int n) {
  Trace t;
  const char* words[] = {"a", "b", "c", "d", "e", "f"};
  for (int i = 0; i < n; ++i) t.source_tokens.push_back({i, words[i]});
  return t;
}

// Shows plot `prefix` and returns the matrix the heatmap widget holds.
const HeatmapData& shownMatrix(VariantPanel& panel, const QString& prefix) {
  panel.setCurrentPlot(plotIndex(panel, prefix));
  return panel.matrixView()->data();
}

// Shows plot `prefix` and returns the series values of the chart on screen.
QVector<QVector<double>> shownSeries(VariantPanel& panel, const QString& prefix) {
  panel.setCurrentPlot(plotIndex(panel, prefix));
  REQUIRE(panel.chart() != nullptr);
  return chartSeriesValues(panel.chart());
}

void checkMatrix(const HeatmapData& d, int rows, int cols, const std::vector<float>& expected) {
  REQUIRE(d.rows == rows);
  REQUIRE(d.cols == cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) CHECK(d.at(r, c) == Approx(expected[static_cast<size_t>(r) * cols + c]));
}

// Exports every plot of the panel in every format and checks each file by its bytes.
void checkExports(VariantPanel& panel) {
  QTemporaryDir dir;
  panel.ensureBuilt();
  REQUIRE_FALSE(panel.plots().empty());
  for (int i = 0; i < static_cast<int>(panel.plots().size()); ++i) {
    panel.setCurrentPlot(i);
    const PanelPlot& p = panel.plots()[static_cast<size_t>(i)];
    const QString base = dir.filePath(QString("plot%1").arg(i));
    panel.exportCurrent(base + ".png", 100);
    const QImage img(base + ".png");
    CHECK(img.width() > 300);
    // Not blank: a figure has many distinct colours.
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    CHECK(colours.size() > 8);
    panel.exportCurrent(base + ".svg");
    QFile svg(base + ".svg");
    REQUIRE(svg.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&svg);
    int elements = 0;
    while (!xml.atEnd()) {
      if (xml.readNext() == QXmlStreamReader::StartElement) ++elements;
    }
    CHECK_FALSE(xml.hasError());
    CHECK(elements > 10);
    panel.exportCurrent(base + ".pdf");
    CHECK(readAll(base + ".pdf").startsWith("%PDF"));
    panel.exportCurrent(base + ".npy");
    const QByteArray npy = readAll(base + ".npy");
    REQUIRE(npy.startsWith("\x93NUMPY"));
    const int header = static_cast<uint8_t>(npy[8]) | (static_cast<uint8_t>(npy[9]) << 8);
    const size_t n = static_cast<size_t>(p.matrix.rows) * p.matrix.cols;
    REQUIRE(static_cast<size_t>(npy.size()) == 10 + header + 4 * n);
    const float* v = reinterpret_cast<const float*>(npy.constData() + 10 + header);
    for (size_t k = 0; k < n; ++k) CHECK(v[k] == p.matrix.values[k]);
    panel.exportCurrent(base + ".csv");
    const QStringList lines = QString::fromUtf8(readAll(base + ".csv")).split('\n', Qt::SkipEmptyParts);
    CHECK(lines.size() == p.matrix.rows + 1);
  }
}

}  // namespace

TEST_CASE("adaptive span panel shows z bars, mask curves and the dynamic span", "[ui][panels][span]") {
  ensureApp();
  Trace t = withTokens(4);
  t.add("span.z", "", filled({2, 3}, {1, 2, 3, 4, 5, 6}));
  std::vector<float> curve(2 * 3 * 4);
  for (size_t k = 0; k < curve.size(); ++k) curve[k] = 1.0f - 0.03f * static_cast<float>(k);
  t.add("span.mask_curve", "", filled({2, 3, 4}, curve));
  t.add("span.flops_saved", "", filled({2, 3}, {10, 20, 30, 40, 50, 60}));
  t.add("span.penalty", "", filled({2}, {0.5f, 0.25f}));
  t.add("decoder.layer1.self_attn.span.dynamic_z", "", filled({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  VariantPanel panel(providerById("span"));
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  CHECK(panel.available());

  // Bars: one series per head, one bar per layer.
  auto z = shownSeries(panel, "span z");
  REQUIRE(z.size() == 3);
  CHECK(z[0] == QVector<double>{1, 4});
  CHECK(z[1] == QVector<double>{2, 5});
  CHECK(z[2] == QVector<double>{3, 6});
  CHECK(shownSeries(panel, "L1 span penalty") == QVector<QVector<double>>{{0.5, 0.25}});

  // Mask curves of the selected layer: layer 1, head 2 holds elements 20..23.
  panel.setContext({1, 0, -1});
  auto m = shownSeries(panel, "mask curve");
  REQUIRE(m.size() == 3);
  for (int x = 0; x < 4; ++x) CHECK(m[2][x] == Approx(1.0 - 0.03 * (20 + x)));

  checkMatrix(shownMatrix(panel, "dynamic span"), 3, 4, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(panel.matrixView()->data().colLabels == QStringList{"a", "b", "c", "d"});
  checkExports(panel);

  VariantPanel none(providerById("span"));
  none.setTrace(std::make_shared<const Trace>(withTokens(2)));
  CHECK_FALSE(none.available());
  none.ensureBuilt();
  CHECK(none.plots().empty());
  CHECK_THROWS_WITH(none.exportCurrent(QTemporaryDir().filePath("x.png")), Catch::Contains("nothing to export"));
}

TEST_CASE("ACT panel shows ponder bars, halting per step and per-step attention", "[ui][panels][act]") {
  ensureApp();
  Trace t = withTokens(3);
  t.add("act.halting", "", filled({2, 3}, {0.5f, 0.9f, 0.2f, 0.0f, 0.1f, 0.8f}));
  t.add("act.weights", "", filled({2, 3}, {0.5f, 0.9f, 0.2f, 0.5f, 0.1f, 0.8f}));
  t.add("act.steps", "", filled({3}, {2, 2, 1}), DType::I32);
  t.add("act.remainder", "", filled({3}, {0.5f, 0.1f, 0.25f}));
  t.add("act.ponder", "", filled({3}, {2.5f, 2.1f, 1.25f}));
  std::vector<float> att(2 * 3 * 3);
  for (size_t k = 0; k < att.size(); ++k) att[k] = 0.01f * static_cast<float>(k);
  t.add("decoder.step2.self_attn", "", filled({2, 3, 3}, att));
  t.attention_maps = derive_attention_maps(t);  // the catalogue a run writes, from the names
  t.finalize_attention_maps();
  VariantPanel panel(providerById("act"));
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  REQUIRE(panel.available());
  const auto bars = shownSeries(panel, "ponder steps");
  REQUIRE(bars.size() == 3);
  CHECK(bars[0] == QVector<double>{2, 2, 1});
  CHECK(bars[1][0] == Approx(0.5));
  CHECK(bars[2][2] == Approx(1.25));
  checkMatrix(shownMatrix(panel, "halting probability"), 2, 3, {0.5f, 0.9f, 0.2f, 0.0f, 0.1f, 0.8f});
  CHECK(panel.matrixView()->data().rowLabels == QStringList{"step 1", "step 2"});
  panel.setContext({0, 1, -1});  // head 1: elements 9..17
  checkMatrix(shownMatrix(panel, "attention at step 2"), 3, 3,
              {0.09f, 0.10f, 0.11f, 0.12f, 0.13f, 0.14f, 0.15f, 0.16f, 0.17f});
  panel.setContext({0, HeadMean, -1});  // mean of heads 0 and 1: (k + (k + 9)) / 2 * 0.01
  checkMatrix(shownMatrix(panel, "attention at step 2"), 3, 3,
              {0.045f, 0.055f, 0.065f, 0.075f, 0.085f, 0.095f, 0.105f, 0.115f, 0.125f});
  checkExports(panel);
}

TEST_CASE("ACT ponder bars are per position when labels repeat (demo:parity-act)",
          "[ui][panels][act]") {
  ensureApp();
  const Model model = load_model("demo:parity-act");
  const RunResult r = model.run("011010|010011", "", RunOptions{});
  const Tensor& steps = r.trace.find("act.steps")->tensor;
  const int n = static_cast<int>(r.trace.source_tokens.size());
  REQUIRE(n == 13);  // "0" and "1" repeat: a chart keyed by label would show 3 bars
  VariantPanel panel(providerById("act"));
  panel.resize(900, 500);
  panel.setTrace(std::make_shared<const Trace>(r.trace));
  const auto bars = shownSeries(panel, "ponder steps");
  REQUIRE(!bars.empty());
  REQUIRE(bars[0].size() == n);
  for (int i = 0; i < n; ++i) CHECK(bars[0][i] == steps.data[size_t(i)]);
  const auto axes = panel.chart()->axes(Qt::Horizontal);
  REQUIRE(axes.size() == 1);
  const auto* x = qobject_cast<QBarCategoryAxis*>(axes[0]);
  REQUIRE(x != nullptr);
  REQUIRE(x->count() == n);
  for (int i = 0; i < n; ++i)
    CHECK(x->at(i) == QString("%1 %2").arg(i).arg(displayLabel(r.trace.source_tokens[size_t(i)].label)));
}

TEST_CASE("LSH panel shows buckets per round and the sorted order with chunks", "[ui][panels][lsh]") {
  ensureApp();
  Trace t = withTokens(4);
  const std::string n = "encoder.layer0.attn";
  t.add(n + ".round0.buckets", "", filled({2, 4}, {1, 0, 1, 3, 2, 2, 0, 1}), DType::I32);
  t.add(n + ".round0.order", "", filled({2, 4}, {1, 0, 2, 3, 2, 3, 0, 1}), DType::I32);
  t.add(n + ".round1.buckets", "", filled({2, 4}, {3, 3, 0, 2, 1, 0, 0, 0}), DType::I32);
  t.add(n + ".round1.order", "", filled({2, 4}, {2, 3, 0, 1, 1, 2, 3, 0}), DType::I32);
  t.add(n + ".chunks", "", filled({3}, {0, 2, 4}), DType::I32);
  VariantPanel panel(providerById("lsh"));
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  REQUIRE(panel.available());
  panel.setContext({0, 1, -1});
  checkMatrix(shownMatrix(panel, "buckets per round"), 2, 4, {2, 2, 0, 1, 1, 0, 0, 0});
  // Buckets are ids: categorical colours over ids 0..3 (the largest id of any round and head is 3).
  CHECK(shownMatrix(panel, "buckets per round").categories == 4);
  // Round 1 of head 1: sorted positions 1 2 3 0 (in the labels), their round-1 buckets 0 0 0 1.
  const HeatmapData& s = shownMatrix(panel, "sorted order and chunks, encoder.layer0.attn, head 1, round 1");
  checkMatrix(s, 1, 4, {0, 0, 0, 1});
  CHECK(s.categories == 4);
  CHECK(s.colLabels[0].startsWith(QString("\u25030 1 ")));
  CHECK(s.colLabels[1].startsWith(QString("2 ")));
  CHECK(s.colLabels[2].startsWith(QString("\u25031 3 ")));
  CHECK(s.colLabels[3].startsWith(QString("0 ")));
  checkExports(panel);
}

TEST_CASE("Transformer-XL panel marks memory columns and shows the four terms", "[ui][panels][xl]") {
  ensureApp();
  Trace t = withTokens(4);
  t.add("decoder.seg0.layer0.self_attn", "", filled({1, 2, 2}, {1, 0, 0.4f, 0.6f}));
  t.add("xl.seg0.key_segment", "", filled({2}, {0, 0}), DType::I32);
  t.add("decoder.seg1.layer0.self_attn", "", filled({1, 2, 4}, {0.1f, 0.2f, 0.7f, 0, 0.1f, 0.1f, 0.3f, 0.5f}));
  t.add("decoder.seg1.layer0.self_attn.mask", "", filled({2, 4}, {1, 1, 1, 0, 1, 1, 1, 1}), DType::I32);
  t.add("xl.seg1.key_segment", "", filled({4}, {0, 0, 1, 1}), DType::I32);
  for (int k = 0; k < 4; ++k) {
    std::vector<float> v(8);
    for (int e = 0; e < 8; ++e) v[static_cast<size_t>(e)] = static_cast<float>(10 * k + e) - 15.0f;
    t.add(std::string("xl.seg1.layer0.terms.") + "abcd"[k], "", filled({1, 2, 4}, v));
  }
  t.attention_maps = derive_attention_maps(t);  // the catalogue a run writes, from the names
  t.finalize_attention_maps();
  VariantPanel panel(providerById("xl"));
  CHECK(panel.provider().needsScores);
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  REQUIRE(panel.available());
  const HeatmapData& a = shownMatrix(panel, "segment 1, layer 0, head 0: attention");
  checkMatrix(a, 2, 4, {0.1f, 0.2f, 0.7f, 0, 0.1f, 0.1f, 0.3f, 0.5f});
  CHECK(a.colLabels == QStringList{"[mem s0] a", "[mem s0] b", "c", "d"});
  CHECK(a.rowLabels == QStringList{"c", "d"});
  CHECK(a.masked(0, 3));
  const HeatmapData& terms = shownMatrix(panel, "segment 1, layer 0, head 0: score terms");
  REQUIRE(terms.rows == 2);
  REQUIRE(terms.cols == 16);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) CHECK(terms.at(i, 4 * k + j) == Approx(10 * k + i * 4 + j - 15));
  CHECK(terms.colLabels[4] == "b: [mem s0] a");
  checkExports(panel);
}

TEST_CASE("GTrXL gate panel: mean gate per layer and position, per-dimension detail", "[ui][panels][gates]") {
  ensureApp();
  Trace t = withTokens(4);
  // Two segments of two positions, two layers, d_model 3; value = 0.1 * (layer + 1) + 0.01 * (pos * 3 + dim).
  for (int l = 0; l < 2; ++l)
    for (int s = 0; s < 2; ++s) {
      std::vector<float> v;
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 3; ++k) v.push_back(0.1f * (l + 1) + 0.01f * static_cast<float>((s * 2 + i) * 3 + k));
      t.add("decoder.seg" + std::to_string(s) + ".layer" + std::to_string(l) + ".attn.gate.z", "", filled({2, 3}, v));
      t.add("decoder.seg" + std::to_string(s) + ".layer" + std::to_string(l) + ".ffn.gate.r", "", filled({2, 3}, v));
    }
  VariantPanel panel(providerById("gates"));
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  REQUIRE(panel.available());
  std::vector<float> mean;
  for (int l = 0; l < 2; ++l)
    for (int p = 0; p < 4; ++p) mean.push_back(0.1f * (l + 1) + 0.01f * (p * 3 + 1));  // mean of dims 0..2
  checkMatrix(shownMatrix(panel, "mean decoder attn gate z"), 2, 4, mean);
  CHECK(panel.matrixView()->data().colLabels == QStringList{"a", "b", "c", "d"});
  checkMatrix(shownMatrix(panel, "mean decoder ffn gate r"), 2, 4, mean);
  panel.setContext({0, 0, 2});  // position 2 = segment 1, row 0
  checkMatrix(shownMatrix(panel, "decoder attn gate z at position 2"), 2, 3,
              {0.16f, 0.17f, 0.18f, 0.26f, 0.27f, 0.28f});
  checkExports(panel);
}

TEST_CASE("logit lens panel: a table of the top-k tokens per layer and position", "[ui][panels][lens]") {
  ensureApp();
  Trace t = withTokens(2);
  t.add("logits", "", Tensor({2, 5}));
  // [layers 2, L 2, K 2]
  t.add("decoder.logit_lens.ids", "", filled({2, 2, 2}, {3, 1, 4, 0, 2, 3, 1, 4}), DType::I32);
  t.add("decoder.logit_lens.probs", "", filled({2, 2, 2}, {0.5f, 0.25f, 0.75f, 0.125f, 0.625f, 0.375f, 0.875f, 0.062f}));
  VariantPanel panel(lensProvider());
  CHECK_FALSE(panel.provider().autoShow);
  panel.resize(700, 500);
  panel.setContext({0, 0, -1});
  panel.setTrace(std::make_shared<const Trace>(t), [](int32_t id) { return QString("tok%1").arg(id); });
  REQUIRE(panel.available());
  panel.setCurrentPlot(plotIndex(panel, "decoder: top-2"));
  QTableWidget* table = panel.table();
  REQUIRE(table->rowCount() == 2);
  REQUIRE(table->columnCount() == 2);
  CHECK(table->item(0, 0)->text() == "tok3 0.500\ntok1 0.250");
  CHECK(table->item(1, 1)->text() == "tok1 0.875\ntok4 0.062");
  CHECK(table->verticalHeaderItem(1)->text() == "layer 1");
  checkMatrix(panel.plots()[0].matrix, 2, 2, {0.5f, 0.75f, 0.625f, 0.875f});
  QTemporaryDir dir;
  panel.exportCurrent(dir.filePath("lens.csv"));
  const QString csv = QString::fromUtf8(readAll(dir.filePath("lens.csv")));
  CHECK(csv.contains("\"tok3 0.500; tok1 0.250\""));
  checkExports(panel);
}

TEST_CASE("predictions panel: softmax of the logits, top-k at the selected position and everywhere",
          "[ui][panels][predictions]") {
  ensureApp();
  Trace t = withTokens(3);
  // Rows chosen so the softmax is exact by hand: exp of the logits are 4,1,3,2 / 1,1,1,1 / 1,2,3,4.
  const float l2 = std::log(2.0f), l3 = std::log(3.0f), l4 = std::log(4.0f);
  t.add("logits", "", filled({3, 4}, {l4, 0, l3, l2, 0, 0, 0, 0, 0, l2, l3, l4}));
  VariantPanel panel(predictionsProvider());
  CHECK_FALSE(panel.provider().autoShow);
  panel.resize(700, 500);
  panel.setContext({0, 0, -1});
  panel.setTrace(std::make_shared<const Trace>(t), [](int32_t id) { return QString("tok%1").arg(id); });
  REQUIRE(panel.available());
  panel.ensureBuilt();
  // No query selected: the last position, 0.4 0.3 0.2 0.1 for tokens 3 2 1 0.
  const PanelPlot& last = panel.plots()[size_t(plotIndex(panel, "top-4 at position 2"))];
  CHECK(last.matrix.rowLabels == QStringList({"tok3", "tok2", "tok1", "tok0"}));
  for (int i = 0; i < 4; ++i) CHECK(last.matrix.values[size_t(i)] == Approx(0.4 - 0.1 * i).margin(1e-6));
  // Selecting position 0 re-ranks: tokens 0 2 3 1.
  panel.setContext({0, 0, 0});
  panel.ensureBuilt();
  const PanelPlot& first = panel.plots()[size_t(plotIndex(panel, "top-4 at position 0"))];
  CHECK(first.matrix.rowLabels == QStringList({"tok0", "tok2", "tok3", "tok1"}));
  CHECK(first.matrix.values[0] == Approx(0.4).margin(1e-6));
  // The table: ranks x positions; a uniform row ranks ties by id.
  panel.setCurrentPlot(plotIndex(panel, "top-5 at every position"));
  QTableWidget* table = panel.table();
  REQUIRE(table->rowCount() == 5);
  REQUIRE(table->columnCount() == 3);
  CHECK(table->item(0, 0)->text() == "tok0 0.400");
  CHECK(table->item(0, 1)->text() == "tok0 0.250");
  CHECK(table->item(3, 2)->text() == "tok0 0.100");
  CHECK(table->item(4, 2)->text().isEmpty());  // only 4 tokens in this vocabulary
  checkExports(panel);
}

TEST_CASE("predictions panel: an image classifier predicts from [CLS] whatever is selected",
          "[ui][panels][predictions]") {
  ensureApp();
  Trace t = withTokens(3);
  for (size_t i = 1; i < 3; ++i) t.source_tokens[i].patch = {0.5f};  // tokens 1, 2 are patches
  const float l2 = std::log(2.0f), l3 = std::log(3.0f), l4 = std::log(4.0f);
  t.add("logits", "", filled({3, 4}, {l4, 0, l3, l2, 0, 0, 0, 0, 0, l2, l3, l4}));
  VariantPanel panel(predictionsProvider());
  panel.resize(700, 500);
  for (int selected : {-1, 2}) {  // nothing selected (a text model would use the last row), a patch
    panel.setContext({0, 0, selected});
    panel.setTrace(std::make_shared<const Trace>(t), [](int32_t id) { return QString("tok%1").arg(id); });
    panel.ensureBuilt();
    const PanelPlot& cls = panel.plots()[size_t(plotIndex(panel, "top-4 at position 0"))];
    CHECK(cls.matrix.rowLabels == QStringList({"tok0", "tok2", "tok3", "tok1"}));
    CHECK(cls.matrix.values[0] == Approx(0.4).margin(1e-6));
    CHECK(cls.matrix.title.startsWith("class distribution"));
  }
}

TEST_CASE("ablation panel: KL per position with what was dropped", "[ui][panels][ablation]") {
  ensureApp();
  Trace t = withTokens(3);
  t.add("ablation.kl", "", filled({3}, {0.25f, 0.5f, 1.5f}));
  t.add("ablation.layers", "", filled({1}, {1}), DType::I32);
  t.add("ablation.heads", "", filled({1, 2}, {0, 3}), DType::I32);
  VariantPanel panel(ablationProvider());
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  REQUIRE(panel.available());
  CHECK(shownSeries(panel, "KL(full || ablated)") == QVector<QVector<double>>{{0.25, 0.5, 1.5}});
  CHECK(panel.chart()->title().contains("mean 0.75"));
  CHECK(panel.chart()->title().contains("layer 1, head 0:3"));
  checkExports(panel);
}

TEST_CASE("Performer error panel: error bars per m and the three matrices", "[ui][panels][performer]") {
  ensureApp();
  Trace t = withTokens(2);
  t.add("performer.study.implicit", "", filled({2, 2}, {1.0f, 0.0f, 0.4f, 0.6f}));
  t.add("performer.study.exact", "", filled({2, 2}, {1.0f, 0.0f, 0.5f, 0.5f}));
  t.add("performer.study.features", "", filled({2}, {16, 64}), DType::I32);
  t.add("performer.study.mean_abs", "", filled({2}, {0.05f, 0.02f}));
  t.add("performer.study.max_tv", "", filled({2}, {0.1f, 0.04f}));
  VariantPanel panel(providerById("performer"));
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  const auto e = shownSeries(panel, "error vs number");
  REQUIRE(e.size() == 2);
  CHECK(e[0][0] == Approx(0.05));
  CHECK(e[1][1] == Approx(0.04));
  checkMatrix(shownMatrix(panel, "implicit \u2212 exact"), 2, 2, {0.0f, 0.0f, -0.1f, 0.1f});
  checkExports(panel);
}

TEST_CASE("head statistics panel: a layers x heads map per statistic, a click selects the head",
          "[ui][panels][heads]") {
  ensureApp();
  const Model model = load_model("demo:induction");
  const RunResult r = model.run("atlasofheadsatlasofheads", "", RunOptions{});
  VariantPanel panel(headsProvider());
  panel.resize(700, 500);
  panel.show();
  panel.setTrace(std::make_shared<const Trace>(r.trace));
  REQUIRE(panel.available());
  // The values shown are the analysis function's, at [layer, head].
  const std::vector<HeadStatisticsRow> rows = head_statistics(r.trace);
  for (int s = 0; s < kHeadStatisticCount; ++s) {
    const QString name = QString(head_statistic_name(HeadStatistic(s))).replace('_', ' ');
    const HeatmapData& d = shownMatrix(panel, "decoder self-attention: " + name);
    REQUIRE(d.rows == 2);
    REQUIRE(d.cols == 4);
    for (const auto& row : rows)
      CHECK(d.at(int(row.map.layer), int(row.head)) == Approx(row.value[s]));
    CHECK(d.rowLabels == QStringList{"L0", "L1"});
    CHECK(d.colLabels == QStringList{"H0", "H1", "H2", "H3"});
  }
  checkExports(panel);
  // A click on the cell of layer 1, head 2 selects that layer and that head.
  shownMatrix(panel, "decoder self-attention: induction");
  QSignalSpy layers(&panel, &VariantPanel::layerPicked), heads(&panel, &VariantPanel::headPicked);
  HeatmapView* view = panel.matrixView();
  const HeatmapLayout L = layoutHeatmap(view, QRectF(view->rect()), view->data(), view->heatmapStyle(), view->viewWindow());
  const QRectF cell = L.cellRect(1, 2);
  QTest::mouseClick(view, Qt::LeftButton, {}, cell.center().toPoint());
  REQUIRE(layers.count() == 1);
  REQUIRE(heads.count() == 1);
  CHECK(layers.at(0).at(0).toInt() == 1);
  CHECK(heads.at(0).at(0).toInt() == 2);
  // A model without self-attention maps to measure has no such panel (the seq2seq RNN's
  // alignments are cross-attention).
  VariantPanel none(headsProvider());
  none.setTrace(std::make_shared<const Trace>(withTokens(2)));
  CHECK_FALSE(none.available());
}

TEST_CASE("rotary panel: frequencies, and weight and score by distance worked by hand", "[ui][panels][rope]") {
  ensureApp();
  Trace t = withTokens(3);
  // One head: rows [1, 0, 0], [0.25, 0.75, 0], [0.2, 0.3, 0.5]; scores with the causal -inf.
  const float inf = std::numeric_limits<float>::infinity();
  t.add("decoder.layer0.self_attn", "", filled({1, 3, 3}, {1, 0, 0, 0.25f, 0.75f, 0, 0.2f, 0.3f, 0.5f}));
  t.add("decoder.layer0.self_attn.scores", "", filled({1, 3, 3}, {2, -inf, -inf, -1, 3, -inf, 0.5f, 1.5f, 4}));
  t.add("positional.frequencies", "", filled({2}, {1.0f, 0.01f}));
  for (AttentionMap& m : derive_attention_maps(t)) t.describe_attention(std::move(m));
  t.finalize_attention_maps();
  VariantPanel panel(providerById("rope"));
  panel.resize(700, 500);
  panel.setTrace(std::make_shared<const Trace>(t));
  REQUIRE(panel.available());
  CHECK(shownSeries(panel, "rotation frequency") == QVector<QVector<double>>{{0.0, -2.0}});
  const auto w = shownSeries(panel, "attention weight by distance");
  REQUIRE(w.size() == 1);
  CHECK(w[0][0] == Approx((1 + 0.75 + 0.5) / 3));  // the diagonal
  CHECK(w[0][1] == Approx((0.25 + 0.3) / 2));
  CHECK(w[0][2] == Approx(0.2));
  const auto s = shownSeries(panel, "score q.k");
  CHECK(s[0][0] == Approx((2 + 3 + 4) / 3.0));
  CHECK(s[0][1] == Approx((-1 + 1.5) / 2));
  CHECK(s[0][2] == Approx(0.5));
  checkExports(panel);
  VariantPanel none(providerById("rope"));
  none.setTrace(std::make_shared<const Trace>(withTokens(2)));
  CHECK_FALSE(none.available());
}

TEST_CASE("head statistics table: every head, sorted by a statistic, a click selects the row's head",
          "[ui][panels][heads]") {
  ensureApp();
  const Model model = load_model("demo:induction");
  const RunResult r = model.run("atlasofheadsatlasofheads", "", RunOptions{});
  VariantPanel panel(headsProvider());
  panel.resize(700, 500);
  panel.show();
  panel.setTrace(std::make_shared<const Trace>(r.trace));
  panel.ensureBuilt();
  panel.setCurrentPlot(plotIndex(panel, "all heads"));
  QTableWidget* table = panel.table();
  REQUIRE(table->rowCount() == 8);
  // Sort by induction, highest first: the first row is the head with the largest score.
  const int induction = 2 + static_cast<int>(HeadStatistic::Induction);
  table->sortItems(induction, Qt::DescendingOrder);
  const std::vector<HeadStatisticsRow> rows = head_statistics(r.trace);
  const auto best = std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a[HeadStatistic::Induction] < b[HeadStatistic::Induction];
  });
  CHECK(table->item(0, induction)->data(Qt::DisplayRole).toDouble() == Approx(best->value[int(HeadStatistic::Induction)]).margin(1e-4));
  CHECK(table->item(0, 1)->data(Qt::DisplayRole).toInt() == best->head);
  QSignalSpy layers(&panel, &VariantPanel::layerPicked), heads(&panel, &VariantPanel::headPicked);
  emit table->cellClicked(0, 3);
  REQUIRE(layers.count() == 1);
  CHECK(layers.at(0).at(0).toInt() == best->map.layer);
  CHECK(heads.at(0).at(0).toInt() == best->head);
  checkExports(panel);
}
