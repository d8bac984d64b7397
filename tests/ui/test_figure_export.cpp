// Figure export from a hand-built trace: each format checked by its own bytes (PNG size for
// the DPI, SVG parsed as XML with its labels, PDF and NumPy magic, CSV values).
#include <catch2/catch.hpp>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QRegularExpression>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <cstdlib>
#include <functional>
#include <set>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "ui/export/figure_export.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas::uitest::readAll;
using atlas::uitest::handAttention;
using atlas::uitest::handTrace;

namespace {
// "3, 3" from a .npy header's "'shape': (3, 3)" (a trailing comma, as NumPy writes for 1-D, is
// dropped).
QString npyShape(const QByteArray& bytes) {
  const int a = bytes.indexOf("'shape': (");
  if (a < 0) return {};
  const int b = bytes.indexOf(')', a);
  QString s = QString::fromLatin1(bytes.mid(a + 10, b - a - 10)).trimmed();
  while (s.endsWith(',') || s.endsWith(' ')) s.chop(1);
  return s;
}

FigureSpec headSpec(int layer, int head) {
  FigureSpec s;
  s.view = "heatmap";
  s.selection = {"encoder", "attn", layer, head};
  return s;
}
}  // namespace

TEST_CASE("PNG export has the pixel size of its inches times the DPI", "[ui][export]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = handTrace();
  FigureSpec s = headSpec(0, 1);
  s.sizeInches = QSizeF(4.0, 3.0);
  for (int dpi : {72, 100, 250}) {
    s.dpi = dpi;
    const QString path = dir.filePath(QString("h%1.png").arg(dpi));
    exportFigure(s, t, path);
    const QByteArray bytes = readAll(path);
    CHECK(bytes.startsWith("\x89PNG\r\n\x1a\n"));
    const QImage img(path);
    CHECK(img.width() == 4 * dpi);
    CHECK(img.height() == 3 * dpi);
    // Not blank: the cells add many colours to the white background.
    std::set<QRgb> colours;
    for (int y = 0; y < img.height(); y += 3)
      for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    CHECK(colours.size() > 8);
  }
}

TEST_CASE("SVG export is XML with an <svg> root and token labels as <text>", "[ui][export]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = handTrace();
  for (const QString view : {"heatmap", "model", "tokens", "positional"}) {
    FigureSpec s = headSpec(1, 0);
    s.view = view;
    const QString path = dir.filePath(view + ".svg");
    exportFigure(s, t, path);
    QFile f(path);
    REQUIRE(f.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&f);
    QString root;
    int rects = 0, texts = 0;
    QStringList words;
    while (!xml.atEnd()) {
      if (xml.readNext() != QXmlStreamReader::StartElement) continue;
      if (root.isEmpty()) root = xml.name().toString();
      if (xml.name() == QLatin1String("rect") || xml.name() == QLatin1String("path")) ++rects;
      if (xml.name() == QLatin1String("text")) {
        ++texts;
        words << xml.readElementText(QXmlStreamReader::IncludeChildElements).trimmed();
      }
    }
    INFO(view.toStdString() << ": " << xml.errorString().toStdString());
    CHECK_FALSE(xml.hasError());
    CHECK(root == "svg");
    CHECK(texts > 3);
    CHECK(rects > 0);
    if (view == "heatmap" || view == "tokens") {
      CHECK(words.contains("cat"));
      CHECK(words.contains("query"));
    }
    if (view == "model") CHECK(words.contains("H1"));
  }
}

TEST_CASE("PDF export starts with %PDF and NumPy export with the .npy magic", "[ui][export]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = handTrace();
  exportFigure(headSpec(0, 0), t, dir.filePath("f.pdf"));
  const QByteArray pdf = readAll(dir.filePath("f.pdf"));
  CHECK(pdf.startsWith("%PDF"));
  CHECK(pdf.contains("%%EOF"));

  exportFigure(headSpec(0, 0), t, dir.filePath("f.npy"));
  const QByteArray npy = readAll(dir.filePath("f.npy"));
  REQUIRE(npy.size() > 10);
  CHECK(npy.startsWith(QByteArray("\x93NUMPY", 6)));
  CHECK(npyShape(npy) == "3, 3");
  CHECK(npy.contains("<f4"));
  // The last 9 float32 values are the head's matrix in C order.
  const char* tail = npy.constData() + npy.size() - 9 * 4;
  for (int k = 0; k < 9; ++k) {
    float v;
    std::memcpy(&v, tail + 4 * k, 4);
    CHECK(v == handAttention(0, 0, k / 3, k % 3));
  }
  FigureSpec m = headSpec(0, 0);
  m.view = "model";
  exportFigure(m, t, dir.filePath("m.npy"));
  CHECK(npyShape(readAll(dir.filePath("m.npy"))) == "2, 2, 3, 3");
}

TEST_CASE("CSV export has key positions and labels as header, query positions and labels first", "[ui][export]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = handTrace();
  exportFigure(headSpec(0, 1), t, dir.filePath("h.csv"));
  const QStringList lines = QString::fromUtf8(readAll(dir.filePath("h.csv"))).split('\n', Qt::SkipEmptyParts);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "query\\key,0 the,1 cat,2 sat");
  const QStringList row = lines[2].split(',');
  REQUIRE(row.size() == 4);
  CHECK(row[0] == "1 cat");
  for (int j = 0; j < 3; ++j) CHECK(row[j + 1].toFloat() == handAttention(0, 1, 1, j));
}

TEST_CASE("batch export writes one file per head of every layer", "[ui][export]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = handTrace();
  const QStringList files = exportAllHeads(FigureSpec{}, t, dir.filePath("all"), "png");
  // encoder 2 layers x 2 heads, decoder self 1 x 2, decoder cross 1 x 2
  CHECK(files.size() == 8);
  CHECK(QFile::exists(dir.filePath("all/encoder.layer1.attn.head1.png")));
  CHECK(QFile::exists(dir.filePath("all/decoder.layer0.cross_attn.head0.png")));
}

TEST_CASE("export errors name the problem", "[ui][export]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = handTrace();
  CHECK_THROWS_WITH(exportFigure(headSpec(0, 0), t, dir.filePath("f.jpg")), Catch::Contains(".svg"));
  FigureSpec bad = headSpec(0, 0);
  bad.view = "nonsense";
  CHECK_THROWS_WITH(exportFigure(bad, t, dir.filePath("f.svg")), Catch::Contains("heatmap"));
  CHECK_THROWS_WITH(exportFigure(headSpec(0, 0), t, "/nonexistent-dir/x/f.png"), Catch::Contains("cannot write"));
}

TEST_CASE("a masked heatmap's SVG renders like its PNG (the hatch stays inside the masked cells)",
          "[ui][export][render]") {
  ensureApp();
  const ModelConfig c = preset_config("tiny-decoder");  // causal: the upper triangle is masked
  const Model model(c, init_params(c, 2));
  const RunResult r = model.run("abababab", "", RunOptions{});
  QTemporaryDir dir;
  FigureSpec s;
  s.view = "heatmap";
  s.selection = {"decoder", "self_attn", 0, 0};
  s.sizeInches = QSizeF(4.0, 3.0);
  s.dpi = 100;
  exportFigure(s, r.trace, dir.filePath("h.png"));
  exportFigure(s, r.trace, dir.filePath("h.svg"));
  const QImage png = QImage(dir.filePath("h.png")).convertToFormat(QImage::Format_RGB32);
  REQUIRE(png.size() == QSize(400, 300));
  QSvgRenderer svg(dir.filePath("h.svg"));
  REQUIRE(svg.isValid());
  QImage rendered(png.size(), QImage::Format_RGB32);
  rendered.fill(Qt::white);
  {
    QPainter p(&rendered);
    svg.render(&p);
  }
  // Compare 5 x 5 blocks by their mean colour: text and edges land a pixel apart between the two
  // rasterisers, which a block mean absorbs; a hatch drawn over cells it should not cover (the
  // SVG generator ignores clip paths) changes whole blocks.
  const int B = 5, bw = png.width() / B, bh = png.height() / B;
  auto blockMean = [&](const QImage& img, int bx, int by, int channel) {
    int sum = 0;
    for (int y = by * B; y < (by + 1) * B; ++y)
      for (int x = bx * B; x < (bx + 1) * B; ++x) {
        const QRgb v = img.pixel(x, y);
        sum += channel == 0 ? qRed(v) : channel == 1 ? qGreen(v) : qBlue(v);
      }
    return sum / (B * B);
  };
  // The title band (top 10 %) is left out: QSvgRenderer lays the bold title out a few pixels
  // wider than the PNG's raster engine does, so its letters drift apart; everything below
  // (cells, hatch, labels, colour bar) must agree.
  int differ = 0;
  for (int by = bh / 10; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      int d = 0;
      for (int ch = 0; ch < 3; ++ch) d += std::abs(blockMean(png, bx, by, ch) - blockMean(rendered, bx, by, ch));
      if (d > 45) ++differ;
    }
  INFO("5x5 blocks that differ: " << differ << " of " << bw * bh);
  CHECK(differ < bw * bh / 100);
}

TEST_CASE("CSV export leaves masked cells empty and keeps repeated labels apart", "[ui][export]") {
  ensureApp();
  const ModelConfig c = preset_config("tiny-decoder");  // causal: key j > query i is masked
  const Model model(c, init_params(c, 2));
  const RunResult r = model.run("abab", "", RunOptions{});
  QTemporaryDir dir;
  FigureSpec s;
  s.view = "heatmap";
  s.selection = {"decoder", "self_attn", 0, 1};
  exportFigure(s, r.trace, dir.filePath("h.csv"));
  const QStringList lines = QString::fromUtf8(readAll(dir.filePath("h.csv"))).split('\n', Qt::SkipEmptyParts);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "query\\key,0 a,1 b,2 a,3 b");
  const Tensor& a = r.trace.find("decoder.layer0.self_attn")->tensor;  // [heads, 4, 4]
  for (int i = 0; i < 4; ++i) {
    const QStringList row = lines[i + 1].split(',');
    REQUIRE(row.size() == 5);
    CHECK(row[0] == QString("%1 %2").arg(i).arg(i % 2 ? "b" : "a"));
    for (int j = 0; j < 4; ++j) {
      if (j > i) {
        CHECK(row[j + 1].isEmpty());
      } else {
        CHECK(row[j + 1].toFloat() == Approx(a.data[size_t((1 * 4 + i) * 4 + j)]).margin(1e-6));
      }
    }
  }
}

namespace {

// The <text> contents of an SVG.
QStringList svgTexts(const QByteArray& svg) {
  QXmlStreamReader xml(svg);
  QStringList out;
  while (!xml.atEnd())
    if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("text"))
      out << xml.readElementText(QXmlStreamReader::IncludeChildElements).trimmed();
  return out;
}

HeatmapData labelledSquare(int n, const std::function<QString(int)>& label) {
  HeatmapData d;
  d.rows = d.cols = n;
  d.values.assign(size_t(n) * size_t(n), 0.5f);
  for (int i = 0; i < n; ++i) d.rowLabels << label(i), d.colLabels << label(i);
  d.title = "labels";
  return d;
}

}  // namespace

TEST_CASE("a thinned axis of repeating token labels shows each drawn label's position", "[ui][export]") {
  ensureApp();
  const int n = 64;
  const HeatmapData abab = labelledSquare(n, [](int i) { return QString(i % 2 ? "b" : "a"); });
  FigureSpec small;
  small.sizeInches = QSizeF(3, 3);  // cells far smaller than a line of text: every k-th label
  const QRegularExpression positioned("^(\\d+) ([ab])$");
  int drawn = 0, bare = 0;
  for (const QString& t : svgTexts(figureSvg(heatmapFigureContent(abab, small)))) {
    if (t == "a" || t == "b") ++bare;
    const QRegularExpressionMatch m = positioned.match(t);
    if (!m.hasMatch()) continue;
    ++drawn;
    const int at = m.captured(1).toInt();
    INFO(t.toStdString());
    REQUIRE(at < n);
    CHECK(m.captured(2) == abab.rowLabels[at]);  // the label at that position
  }
  CHECK(bare == 0);
  CHECK(drawn >= 8);
  CHECK(drawn < 2 * n);  // thinned

  FigureSpec large;
  large.sizeInches = QSizeF(30, 30);  // room for every label: drawn as they are
  int plain = 0;
  for (const QString& t : svgTexts(figureSvg(heatmapFigureContent(abab, large)))) {
    CHECK_FALSE(positioned.match(t).hasMatch());
    plain += t == "a" || t == "b";
  }
  CHECK(plain == 2 * n);

  // Labels that never repeat (positions, layers) are thinned without a prefix.
  const HeatmapData distinct = labelledSquare(n, [](int i) { return QString("t%1").arg(i); });
  int prefixed = 0, shown = 0;
  for (const QString& t : svgTexts(figureSvg(heatmapFigureContent(distinct, small)))) {
    prefixed += QRegularExpression("^\\d+ t\\d+$").match(t).hasMatch();
    shown += QRegularExpression("^t\\d+$").match(t).hasMatch();
  }
  CHECK(prefixed == 0);
  CHECK(shown > 0);
  CHECK(shown < 2 * n);
}
