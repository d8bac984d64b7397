// Exports equal the screen: every figure view (heatmap, model grid, tokens, positional,
// similarity) and every plot of every variant panel is written as PNG, SVG and PDF; the SVG is
// rendered with QSvgRenderer and the PDF with pdftoppm (poppler-utils) at the PNG's resolution,
// and both must match the PNG block by block (charts: also a PNG at twice the DPI, scaled down). A figure element drawn in one format and not
// the other (an unclipped hatch, a missing legend, a label outside the page) changes whole
// blocks; antialiasing and font hinting move single pixels, which a block mean absorbs. Every
// SVG written must also parse as XML (tests/svg_xml.h).
#include <catch2/catch.hpp>

#include <QFile>
#include <cmath>
#include <QImage>
#include <QPainter>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <map>
#include <set>

#include "core/analysis/logit_attribution.h"
#include "core/analysis/patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/svg_xml.h"
#include "tests/ui/ui_test_support.h"
#include "ui/export/figure_export.h"
#include "ui/panels/panel_chart.h"
#include "ui/panels/variant_panel.h"
#include "ui/panels/variant_plots.h"
#include "ui/panels/panel_registry.h"
#include "ui/tools/dla_figure.h"
#include "ui/tools/qk_decomposition_figure.h"
#include "ui/tools/patching_figure.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

constexpr int kDpi = 100;

QImage renderSvg(const QString& path, QSize size) {
  QSvgRenderer svg(path);
  REQUIRE(svg.isValid());
  QImage img(size, QImage::Format_RGB32);
  img.fill(Qt::white);
  QPainter p(&img);
  svg.render(&p);
  return img;
}

QImage renderPdf(const QString& path, const QString& outBase) {
  const QString pdftoppm = QStandardPaths::findExecutable("pdftoppm");
  INFO("pdftoppm (Debian package poppler-utils, installed by scripts/setup.sh) renders the PDF");
  REQUIRE_FALSE(pdftoppm.isEmpty());
  QProcess proc;
  proc.start(pdftoppm, {"-r", QString::number(kDpi), "-png", "-singlefile", path, outBase});
  REQUIRE(proc.waitForFinished(60000));
  REQUIRE(proc.exitCode() == 0);
  const QImage img(outBase + ".png");
  REQUIRE_FALSE(img.isNull());
  return img.convertToFormat(QImage::Format_RGB32);
}

// Share of 5 x 5 blocks (below the title band) whose mean colour differs by more than 45 (sum
// over R, G, B) between `a` and `b`, over the area both cover. A block of `b` may sit a pixel
// off in any direction: rasterisers place an edge half a pixel apart.
double differingBlocks(const QImage& a, const QImage& b) {
  const int B = 5, w = std::min(a.width(), b.width()) / B - 1, h = std::min(a.height(), b.height()) / B - 1;
  auto mean = [&](const QImage& img, int x0, int y0, int ch) {
    int sum = 0;
    for (int y = y0; y < y0 + B; ++y)
      for (int x = x0; x < x0 + B; ++x) {
        const QRgb v = img.pixel(std::max(0, x), std::max(0, y));
        sum += ch == 0 ? qRed(v) : ch == 1 ? qGreen(v) : qBlue(v);
      }
    return sum / (B * B);
  };
  auto blockDiff = [&](int bx, int by) {
    int best = 1 << 30;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        int d = 0;
        for (int ch = 0; ch < 3; ++ch)
          d += std::abs(mean(a, bx * B, by * B, ch) - mean(b, bx * B + dx, by * B + dy, ch));
        best = std::min(best, d);
      }
    return best;
  };
  // The title band (top 10 %) is left out: QSvgRenderer lays a bold title out a few pixels
  // wider than the raster engine, so its letters drift.
  int differ = 0, total = 0;
  for (int by = h / 10; by < h; ++by)
    for (int bx = 0; bx < w; ++bx) {
      differ += blockDiff(bx, by) > 45 ? 1 : 0;
      ++total;
    }
  return total ? double(differ) / total : 1.0;
}

// Writes `fig` in the three figure formats and compares the SVG and PDF renders with the PNG.
// With `twiceTheDpi`, a PNG at twice the DPI scaled down must match too (charts: their text is
// laid out once and must be drawn at the size it was laid out for, whatever the device).
void checkFormatsAgree(const FigureContent& fig, const QString& name, bool twiceTheDpi = false) {
  INFO("figure: " << name.toStdString());
  QTemporaryDir dir;
  const QString base = dir.filePath("fig");
  writeFigure(fig, kDpi, base + ".png");
  writeFigure(fig, kDpi, base + ".svg");
  writeFigure(fig, kDpi, base + ".pdf");
  {  // The SVG is XML a strict reader parses (titles and token labels escaped), titled as the figure.
    QFile f(base + ".svg");
    REQUIRE(f.open(QIODevice::ReadOnly));
    const atlas_test::SvgXml xml = atlas_test::readSvgXml(f.readAll());
    INFO(xml.describe());
    REQUIRE(xml.wellFormed());
    CHECK(xml.title == fig.title);
  }
  const QImage png = QImage(base + ".png").convertToFormat(QImage::Format_RGB32);
  REQUIRE_FALSE(png.isNull());
  const QImage svg = renderSvg(base + ".svg", png.size());
  const QImage pdf = renderPdf(base + ".pdf", dir.filePath("pdfpage"));
  // The PDF page is the figure's size in inches: within a pixel of the PNG at the same DPI.
  CHECK(std::abs(pdf.width() - png.width()) <= 1);
  CHECK(std::abs(pdf.height() - png.height()) <= 1);
  QImage sharp;
  if (twiceTheDpi) {
    writeFigure(fig, 2 * kDpi, base + "-2x.png");
    sharp = QImage(base + "-2x.png")
                .convertToFormat(QImage::Format_RGB32)
                .scaled(png.size(), Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    CHECK(differingBlocks(png, sharp) < 0.02);
  }
  const double svgDiff = differingBlocks(png, svg), pdfDiff = differingBlocks(png, pdf);
  // ATLAS_RENDER_DUMP=DIR keeps the three renders of every figure, to look at a failure.
  if (const QString dump = qEnvironmentVariable("ATLAS_RENDER_DUMP"); !dump.isEmpty()) {
    QString file = name;
    file.replace(QRegularExpression("[^A-Za-z0-9]+"), "_");
    png.save(dump + "/" + file + ".png.png");
    svg.save(dump + "/" + file + ".svg.png");
    pdf.save(dump + "/" + file + ".pdf.png");
    if (twiceTheDpi) sharp.save(dump + "/" + file + ".2x.png");
  }
  INFO("blocks differing: SVG " << svgDiff * 100 << " %, PDF " << pdfDiff * 100 << " %");
  CHECK(svgDiff < 0.02);
  CHECK(pdfDiff < 0.02);
}

RunResult runPreset(const std::string& preset, const std::string& text, TraceOptions trace) {
  ModelConfig c = preset_config(preset);
  const Model m(c, init_params(c, 7));
  RunOptions o;
  o.trace = trace;
  return m.run(text, "", o);
}

}  // namespace

TEST_CASE("every figure view exports SVG and PDF that render like its PNG", "[ui][export][render]") {
  ensureApp();
  // Repeated labels and a causal mask (hatched cells) on a decoder.
  const RunResult dec = runPreset("tiny-decoder", "abcabcabcabc", TraceOptions{});
  for (const QString& view : figureViews()) {
    FigureSpec s;
    s.view = view;
    s.selection = {"decoder", "self_attn", 1, 2};
    s.dpi = kDpi;
    s.title = "Q & K <" + view + "> ]]>";  // XML's special characters in the title
    checkFormatsAgree(figureContent(s, dec.trace), "tiny-decoder " + view);
  }
  // An aggregate head, and the grid on its shared scale.
  FigureSpec mean;
  mean.selection = {"decoder", "self_attn", 0, HeadMean};
  checkFormatsAgree(figureContent(mean, dec.trace), "tiny-decoder mean over heads");
  FigureSpec shared;
  shared.view = "model";
  shared.selection = {"decoder", "self_attn", 0, 0};
  shared.mapping.sharedScale = true;
  checkFormatsAgree(figureContent(shared, dec.trace), "tiny-decoder grid, shared scale");
  // Transformer-XL's segment over memory + segment; grouped-query heads with their brackets.
  const RunResult xl = runPreset("tiny-xl", "the memory of the segment before", TraceOptions{});
  FigureSpec seg;
  seg.selection = {"decoder", "self_attn", 0, 1, 1};
  checkFormatsAgree(figureContent(seg, xl.trace), "tiny-xl segment 1");
  const RunResult llama = runPreset("tiny-llama", "grouped query heads", TraceOptions{});
  FigureSpec grid;
  grid.view = "model";
  grid.selection = {"decoder", "self_attn", 0, 0};
  checkFormatsAgree(figureContent(grid, llama.trace), "tiny-llama grid");
}

TEST_CASE("every variant panel's plots export SVG and PDF that render like their PNG",
          "[ui][export][render][panels]") {
  ensureApp();
  TraceOptions all = TraceOptions::all();
  all.qk = true;
  std::vector<std::pair<std::string, Trace>> traces;
  for (const char* preset : {"tiny-span", "tiny-ut-act", "tiny-reformer", "tiny-xl", "tiny-gtrxl", "tiny-rope",
                             "alibi-lm"})
    traces.emplace_back(preset, runPreset(preset, "abab cdcd abab", all).trace);
  // The logit lens on a plain decoder; the ablation and Performer-study panels read arrays
  // their own runs add: hand-made here.
  all.logit_lens = 3;
  Trace extra = runPreset("tiny-decoder", "abab", all).trace;
  auto add = [&](const std::string& name, Shape shape, std::vector<float> v, DType dt = DType::F32) {
    Tensor t(shape);
    t.data.assign(v.begin(), v.end());
    extra.add(name, "", std::move(t), dt);
  };
  add("ablation.kl", {4}, {0.25f, 0.5f, 1.5f, 0.1f});
  add("ablation.layers", {1}, {1}, DType::I32);
  add("ablation.heads", {1, 2}, {0, 3}, DType::I32);
  add("performer.study.implicit", {2, 2}, {1.0f, 0.0f, 0.4f, 0.6f});
  add("performer.study.exact", {2, 2}, {1.0f, 0.0f, 0.5f, 0.5f});
  add("performer.study.features", {2}, {16, 64}, DType::I32);
  add("performer.study.mean_abs", {2}, {0.05f, 0.02f});
  add("performer.study.max_tv", {2}, {0.1f, 0.04f});
  traces.emplace_back("tiny-decoder + ablation and Performer arrays", std::move(extra));

  std::map<QString, int> plotsPerPanel;
  for (const auto& [what, trace] : traces) {
    auto shared = std::make_shared<const Trace>(trace);
    for (const PanelProvider& provider : variantProviders()) {
      VariantPanel panel(provider);
      panel.resize(800, 500);
      panel.setTrace(shared);
      if (!panel.available()) continue;
      panel.setContext({0, 0, -1});
      panel.ensureBuilt();
      // One plot of each kind (matrix, bars, curves, table, scatter) per panel and model keeps
      // the run short; every kind a panel draws is covered.
      std::set<int> kinds;
      for (const PanelPlot& plot : panel.plots()) {
        if (!kinds.insert(static_cast<int>(plot.kind)).second) continue;
        FigureSpec spec;
        spec.dpi = kDpi;
        const bool chart = plot.kind != PanelPlot::Kind::Matrix && plot.kind != PanelPlot::Kind::Table;
        checkFormatsAgree(panelFigure(plot, spec),
                          QString::fromStdString(what) + " / " + provider.id + " / " + plot.name, chart);
        ++plotsPerPanel[provider.id];
      }
    }
  }
  for (const PanelProvider& provider : variantProviders()) {
    INFO("panel " << provider.id.toStdString() << " had no plot to compare");
    CHECK(plotsPerPanel[provider.id] > 0);
  }
}

TEST_CASE("the activation-patching, logit-attribution and QK decomposition figures export SVG and PDF that render like their PNG",
          "[ui][export][render][patching]") {
  ensureApp();
  const ModelConfig c = preset_config("tiny-llama");
  const Model model(c, init_params(c, 3));
  const auto clean = model.tokenize("the cat sat", "").first;
  const auto corrupted = model.tokenize("the bat sat", "").first;
  QStringList labels;
  for (const TokenInfo& t : clean) labels << QString::fromStdString(t.label);
  FigureSpec spec;
  spec.dpi = kDpi;
  for (const PatchSite site : {PatchSite::Resid, PatchSite::Head, PatchSite::HeadPos}) {
    PatchSpec ps;
    ps.site = site;
    ps.metric = PatchMetric::KL;
    PatchResult r = activation_patching(model, clean, corrupted, ps, RunOptions{});
    if (site == PatchSite::HeadPos)  // a cancelled grid: its unfinished cells masked
      for (size_t i = r.raw.size() / 2; i < r.raw.size(); ++i) r.raw[i] = r.normalised[i] = std::nan("");
    r.complete = site != PatchSite::HeadPos;
    PanelPlot plot;
    plot.matrix = patchingHeatmap(r, labels, 4);
    plot.mapping = signedEffectMapping();
    checkFormatsAgree(panelFigure(plot, spec), QString("patching ") + patch_site_name(site));
  }
  DlaRequest req;
  req.positions = {5};
  req.token = 't';
  req.against = 'a';
  const LogitAttribution a = logit_attribution(model, clean, req);
  PanelPlot heads;
  heads.matrix = dlaHeadHeatmap(a);
  heads.mapping = signedEffectMapping();
  checkFormatsAgree(panelFigure(heads, spec), "logit attribution heads");
  PanelPlot bars;
  bars.kind = PanelPlot::Kind::Bars;
  bars.matrix = dlaComponentBars(a);
  bars.xTitle = "part";
  bars.yTitle = "contribution";
  checkFormatsAgree(panelFigure(bars, spec), "logit attribution parts", true);
  // Why this head attends here: the score's matrix (query x key components, every layer's heads
  // named on both axes) and the value path's bars.
  QkRequest qr;
  qr.layer = 1;
  qr.head = 1;
  qr.query = 9;
  qr.key = 4;
  qr.value = true;
  const QkDecomposition qk = qk_decomposition(model, clean, qr);
  PanelPlot qkMatrix;
  qkMatrix.matrix = qkScoreMatrix(qk, labels);
  qkMatrix.mapping = signedEffectMapping();
  checkFormatsAgree(panelFigure(qkMatrix, spec), "qk decomposition matrix");
  PanelPlot qkValue;
  qkValue.kind = PanelPlot::Kind::Bars;
  qkValue.matrix = qkValueBars(qk);
  qkValue.yTitle = "projection on o";
  checkFormatsAgree(panelFigure(qkValue, spec), "qk decomposition value path", true);
}
