// The ALiBi panel (ui/panels/alibi/) on real runs of preset alibi-lm: every plotted bias equals
// -m_h |i - j| with the slopes written here by hand from Press et al.'s rule (8 heads: 2^-h;
// 6 heads: the 4-head sequence, then every other slope of 8 heads), and the traced
// `<attn>.alibi.distance_bias` at the same place; the panel follows model switches (absent
// without ALiBi, never a previous model's slopes); every plot exports.
#include <catch2/catch.hpp>

#include <QAbstractSeries>
#include <QChart>
#include <QDockWidget>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/formats/model_io.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/ui/run_window.h"
#include "ui/panels/panel_chart.h"
#include "ui/panels/panel_registry.h"
#include "ui/panels/variant_panel.h"
#include "ui/views/heatmap_view.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

// Press et al.'s slopes, head index h = 0..H-1 (the paper's head h + 1), written out.
const double kAlibiSlopes8[8] = {1.0 / 2, 1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256};
const double kAlibiSlopes6[6] = {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 2, 1.0 / 8};
const char* const kAlibiLegend8[8] = {"1/2", "1/4", "1/8", "1/16", "1/32", "1/64", "1/128", "1/256"};
const char* const kAlibiLegend6[6] = {"1/4", "1/16", "1/64", "1/256", "1/2", "1/8"};

const PanelPlot& alibiPlot(VariantPanel& panel, const QString& prefix) {
  const int i = uitest::plotIndex(panel, prefix);
  panel.setCurrentPlot(i);
  return panel.plots()[static_cast<size_t>(i)];
}

// The traced bias of layer `layer` ([L, heads]) of the run on screen.
const Tensor& alibiTraced(const Trace& t, int layer) {
  const std::string name = "decoder.layer" + std::to_string(layer) + ".self_attn.alibi.distance_bias";
  const TracedArray* a = t.find(name);
  INFO(name);
  REQUIRE(a);
  return a->tensor;
}

// Every plot of the panel against the hand-written slopes and the trace: the position heatmap
// of head `head` (what the heatmap widget holds), heads x distance, the curves on screen with
// their legend, the slope table.
void checkAlibiPlots(VariantPanel& panel, const Trace& trace, int layer, int head, const double* slopes,
                     const char* const* legend, int heads, int L) {
  INFO("layer " << layer << ", head " << head);
  PanelContext ctx;
  ctx.layer = layer;
  ctx.head = head;
  panel.setContext(ctx);
  panel.ensureBuilt();
  const Tensor& traced = alibiTraced(trace, layer);
  REQUIRE(traced.shape == Shape{L, heads});

  alibiPlot(panel, "bias -m_h |i - j| by position");
  const HeatmapData& pos = panel.matrixView()->data();
  REQUIRE(pos.rows == L);
  REQUIRE(pos.cols == L);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) {
      const int d = std::abs(i - j);
      CHECK(pos.at(i, j) == Approx(-slopes[head] * d).margin(1e-6));
      CHECK(pos.at(i, j) == traced.data[static_cast<size_t>(d * heads + head)]);
    }
  CHECK(pos.title.contains(QString("head %1 (m = %2)").arg(head).arg(legend[head])));

  const PanelPlot& grid = alibiPlot(panel, "bias by distance, every head");
  const HeatmapData& g = panel.matrixView()->data();
  REQUIRE(grid.matrix.rows == heads);
  REQUIRE(g.rows == heads);
  REQUIRE(g.cols == L);
  for (int h = 0; h < heads; ++h) {
    CHECK(g.rowLabels[h].toStdString() == QString("%1: m = %2").arg(h).arg(legend[h]).toStdString());
    for (int d = 0; d < L; ++d) {
      CHECK(g.at(h, d) == Approx(-slopes[h] * d).margin(1e-6));
      CHECK(g.at(h, d) == traced.data[static_cast<size_t>(d * heads + h)]);
    }
  }

  alibiPlot(panel, "bias against distance");
  REQUIRE(panel.chart() != nullptr);
  const QVector<QVector<double>> curves = chartSeriesValues(panel.chart());
  const QList<QAbstractSeries*> series = panel.chart()->series();
  REQUIRE(curves.size() == heads);
  REQUIRE(series.size() == heads);
  for (int h = 0; h < heads; ++h) {
    CHECK(series[h]->name().toStdString() == QString("h%1: %2").arg(h).arg(legend[h]).toStdString());
    REQUIRE(curves[h].size() == L);
    for (int d = 0; d < L; ++d) {
      CHECK(curves[h][d] == Approx(-slopes[h] * d).margin(1e-6));
      CHECK(curves[h][d] == traced.data[static_cast<size_t>(d * heads + h)]);
    }
  }

  const PanelPlot& table = alibiPlot(panel, "slopes m_h");
  REQUIRE(table.matrix.rows == heads);
  for (int h = 0; h < heads; ++h) {
    CHECK(table.matrix.at(h, 0) == Approx(slopes[h]));
    CHECK(table.cellText[h * 3].startsWith(QString(legend[h]) + " ("));
  }
}

}  // namespace

TEST_CASE("ALiBi panel: alibi-lm's biases by position and distance are Press's slopes and the trace",
          "[ui][panels][alibi]") {
  uitest::ensureApp();
  const Model model = load_model("preset:alibi-lm");
  const std::shared_ptr<const Trace> trace = uitest::runOn(model, "abab abab");  // labels repeat
  VariantPanel panel(providerById("alibi"));
  panel.resize(800, 600);
  panel.show();
  panel.setTrace(trace);
  REQUIRE(panel.available());
  for (const auto& [layer, head] : {std::pair{0, 0}, {0, 3}, {3, 7}, {2, 5}})
    checkAlibiPlots(panel, *trace, layer, head, kAlibiSlopes8, kAlibiLegend8, 8, 9);

  // Repeated tokens keep one row each, labelled by the run's tokens in order.
  PanelContext ctx;
  panel.setContext(ctx);
  alibiPlot(panel, "bias -m_h |i - j| by position");
  const HeatmapData& pos = panel.matrixView()->data();
  REQUIRE(pos.rowLabels.size() == 9);
  CHECK(pos.rowLabels[0] == "a");
  CHECK(pos.rowLabels[2] == "a");
  CHECK(pos.rowLabels[7] == "a");
  CHECK(pos.colLabels[1] == "b");
  // The causal decoder's keys after the query are masked (the traced mask), the rest allowed.
  CHECK(pos.masked(0, 1));
  CHECK_FALSE(pos.masked(1, 0));
  CHECK_FALSE(pos.masked(8, 8));

  // One token: the trace holds distance 0 only, so no slope is shown, and none invented.
  VariantPanel one(providerById("alibi"));
  one.setTrace(uitest::runOn(model, "a"));
  REQUIRE(one.available());
  one.ensureBuilt();
  REQUIRE(one.plots().size() == 4);
  CHECK(one.plots()[2].matrix.rowLabels[0] == "h0");
  CHECK(one.plots()[2].matrix.cols == 1);
  CHECK(one.plots()[2].matrix.at(0, 0) == 0.0f);
  CHECK(one.plots()[3].cellText[0] == "needs 2 tokens");

  // A model without ALiBi offers no such panel.
  VariantPanel none(providerById("alibi"));
  none.setTrace(uitest::runOn(load_model("preset:tiny-decoder"), "abab abab"));
  CHECK_FALSE(none.available());
}

TEST_CASE("ALiBi panel: every plot exports as SVG, PNG, PDF and .npy with the plotted values",
          "[ui][panels][alibi][export]") {
  uitest::ensureApp();
  const Model model = load_model("preset:alibi-lm");
  VariantPanel panel(providerById("alibi"));
  panel.resize(800, 600);
  panel.setTrace(uitest::runOn(model, "abab abab"));
  panel.ensureBuilt();
  REQUIRE(panel.plots().size() == 4);
  QTemporaryDir dir;
  for (int i = 0; i < static_cast<int>(panel.plots().size()); ++i) {
    panel.setCurrentPlot(i);
    const PanelPlot& p = panel.plots()[static_cast<size_t>(i)];
    INFO(p.name.toStdString());
    const QString base = dir.filePath(QString("alibi%1").arg(i));
    panel.exportCurrent(base + ".svg");
    const QByteArray svg = uitest::readAll(base + ".svg");
    CHECK(svg.contains("<svg"));
    CHECK(svg.size() > 1000);
    // The curves' legend keeps every head's slope whole at the default size (a bottom row of
    // eight entries was elided to "h...").
    if (p.kind == PanelPlot::Kind::Curves) {
      CHECK(svg.contains("h0: 1/2"));
      CHECK(svg.contains("h7: 1/256"));
    }
    panel.exportCurrent(base + ".png", 100);
    const QImage png(base + ".png");
    REQUIRE_FALSE(png.isNull());
    QSet<QRgb> colours;  // a figure, not a blank page
    for (int y = 0; y < png.height(); y += 3)
      for (int x = 0; x < png.width(); x += 3) colours.insert(png.pixel(x, y));
    CHECK(colours.size() > 8);
    panel.exportCurrent(base + ".pdf");
    CHECK(uitest::readAll(base + ".pdf").startsWith("%PDF"));
    panel.exportCurrent(base + ".npy");
    const QByteArray npy = uitest::readAll(base + ".npy");
    REQUIRE(npy.startsWith("\x93NUMPY"));
    const int header = static_cast<uint8_t>(npy[8]) | (static_cast<uint8_t>(npy[9]) << 8);
    const size_t n = static_cast<size_t>(p.matrix.rows) * p.matrix.cols;
    REQUIRE(static_cast<size_t>(npy.size()) == 10 + header + 4 * n);
    const float* v = reinterpret_cast<const float*>(npy.constData() + 10 + header);
    for (size_t k = 0; k < n; ++k) CHECK(v[k] == p.matrix.values[k]);
  }
  // The by-distance data is the slopes' lines: row h, column d holds -m_h d.
  const PanelPlot& g = panel.plots()[1];
  for (int h = 0; h < 8; ++h) CHECK(g.matrix.at(h, 4) == Approx(-4 * kAlibiSlopes8[h]));
}

TEST_CASE("ALiBi panel follows model switches: absent without ALiBi, a 6-head model's own slopes",
          "[ui][panels][alibi][switch]") {
  uitest::ensureApp();
  // A 6-head ALiBi model built in code (Press's rule for H not a power of two).
  ModelConfig c = preset_config("alibi-lm");
  c.n_heads = 6;
  c.d_model = 192;
  c.n_layers = 2;
  QTemporaryDir dir;
  const std::string six = (std::filesystem::path(dir.path().toStdString()) / "alibi6").string();
  save_model(Model(c, init_params(c, 5)), six);

  uitest::RunWindow rw("preset:alibi-lm", "abab abab");
  MainWindow& w = rw.w;
  VariantPanel* panel = uitest::variantPanel(w, "alibi");
  QDockWidget* dock = uitest::variantDock(w, "alibi");
  const auto current = [&](int heads) {
    REQUIRE(panel->trace() == w.trace());
    REQUIRE(panel->available());
    CHECK(dock->isVisible());  // shown by itself when a run has ALiBi
    panel->ensureBuilt();
    const PanelPlot& curves = alibiPlot(*panel, "bias against distance");
    REQUIRE(curves.matrix.rows == heads);
    return curves.matrix;
  };
  const auto load = [&](const QString& spec) {
    rw.shown.clear();
    w.loadModel(spec);
    REQUIRE(rw.shown.wait(60000));
    rw.settle();
    INFO(w.lastError().toStdString());
    REQUIRE(w.lastError().isEmpty());
  };

  HeatmapData m = current(8);
  CHECK(m.rowLabels[7] == "h7: 1/256");
  CHECK(m.at(7, 8) == Approx(-8.0 / 256));

  load("preset:tiny-decoder");
  CHECK(panel->trace() == w.trace());
  CHECK_FALSE(panel->available());
  CHECK_FALSE(dock->isVisible());

  load(QString::fromStdString(six));
  m = current(6);
  for (int h = 0; h < 6; ++h) {
    CHECK(m.rowLabels[h].toStdString() == QString("h%1: %2").arg(h).arg(kAlibiLegend6[h]).toStdString());
    for (int d = 0; d < 9; ++d) CHECK(m.at(h, d) == Approx(-kAlibiSlopes6[h] * d).margin(1e-6));
  }
  // Two layers now: the panel's layer range follows (the selection of layer 3 clamps to 1).
  CHECK(panel->provider().selection(*w.trace()).layer.count == 2);

  load("preset:alibi-lm");
  m = current(8);
  CHECK(m.rowLabels[4] == "h4: 1/32");
}
