// User text in SVG: titles, token labels, axis labels and panel text holding XML's special
// characters ("<", "&", "]]>", markup) or characters XML 1.0 forbids (U+0001, U+FFFF) give an
// SVG that a strict XML reader parses and that shows the text itself (tests/svg_xml.h reads
// it). Control characters are shown as their Control Pictures symbols (U+0001 as U+2401).
#include <catch2/catch.hpp>

#include <QFile>
#include <QPainter>
#include <QTemporaryDir>
#include <algorithm>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/svg_xml.h"
#include "tests/ui/ui_test_support.h"
#include "ui/export/figure_export.h"
#include "ui/export/painted_figure.h"
#include "ui/panels/panel_chart.h"
#include "ui/export/svg_writer.h"
#include "ui/panels/variant_plots.h"
#include "ui/panels/panel_registry.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using atlas_test::readSvgXml;
using atlas_test::SvgXml;

namespace {

// U+0001 and U+FFFF, as a reader sees them shown: U+2401 "␁" and U+FFFD.
const QString kSoh = QString(QChar(0x0001)), kSohShown = QString(QChar(0x2401));
const QString kNonChar = QString(QChar(0xFFFF)), kNonCharShown = QString(QChar(0xFFFD));

SvgXml readSvgFile(const QString& path) {
  QFile f(path);
  REQUIRE(f.open(QIODevice::ReadOnly));
  return readSvgXml(f.readAll());
}

// A decoder whose words tokenizer has hostile words: each is one token, its label the word.
Model hostileWordsModel() {
  ModelConfig c = preset_config("tiny-decoder");
  c.tokenizer.kind = TokenizerKind::Words;
  c.tokenizer.vocab = {"<unk>", "<", "&", "]]>", "<b>x</b>", "\x01", "a&b<c>"};
  for (int i = static_cast<int>(c.tokenizer.vocab.size()); i < c.vocab_size; ++i)
    c.tokenizer.vocab.push_back("w" + std::to_string(i));
  return Model(c, init_params(c, 7));
}

const char* kHostileText = "< & ]]> <b>x</b> \x01 a&b<c>";
// How each word is shown: itself, except U+0001.
const QStringList kHostileShown = {"<", "&", "]]>", "<b>x</b>", kSohShown, "a&b<c>"};

}  // namespace

TEST_CASE("the XML reader of these tests refuses what QSvgGenerator 6.4 wrote before", "[ui][export][svg]") {
  // The oracle itself: a raw "&" and "<" in <title>, and U+0001 in text, are not XML.
  CHECK_FALSE(readSvgXml("<svg><title>Q & K <layer 0></title></svg>").wellFormed());
  CHECK_FALSE(readSvgXml("<svg><text>a\x01" "b</text></svg>").wellFormed());
  CHECK_FALSE(readSvgXml("<svg><text>a\xEF\xBF\xBF</text></svg>").wellFormed());
  const SvgXml ok = readSvgXml("<svg><title>Q &amp; K &lt;l&gt;</title><text>]]&gt;</text></svg>");
  CHECK(ok.wellFormed());
  CHECK(ok.title == "Q & K <l>");
  CHECK(ok.texts == QStringList{"]]>"});
}

TEST_CASE("figureText shows the characters XML forbids as symbols and keeps the rest", "[ui][export][svg]") {
  CHECK(figureText("Q & K <layer 0>") == "Q & K <layer 0>");
  CHECK(figureText(QString("a") + kSoh + "b") == QString("a") + kSohShown + "b");
  CHECK(figureText(QString(QChar(0)) + "\r\x1b") == QString::fromUtf8("\u2400\u240D\u241B"));
  CHECK(figureText(QString("del") + QChar(0x7F)) == QString::fromUtf8("del\u2421"));
  CHECK(figureText(kNonChar + QChar(0xFFFE)) == kNonCharShown + kNonCharShown);
  CHECK(figureText("tab\tand\nline") == "tab\tand\nline");  // XML holds them
  const QString pair = QString::fromUtf8("\U0001F600");  // a surrogate pair is one character
  CHECK(figureText(pair) == pair);
  CHECK(figureText(QString(QChar(0xD800)) + "x") == kNonCharShown + "x");
  // Token labels: whitespace had its symbols; the other controls now too.
  CHECK(displayLabel("a\x01") == QString("a") + kSohShown);
  CHECK(displayLabel("a b") == QString::fromUtf8("a\u2423b"));
}

TEST_CASE("a hostile --title and hostile tokens give well-formed SVG of every view, showing the text",
          "[ui][export][svg]") {
  ensureApp();
  QTemporaryDir dir;
  const Model model = hostileWordsModel();
  const RunResult run = model.run(kHostileText, "", RunOptions{});
  REQUIRE(run.trace.source_tokens.size() == 6);
  const QString title = QString("Q & K <layer 0> ]]> ") + kSoh + kNonChar;
  const QString titleShown = QString("Q & K <layer 0> ]]> ") + kSohShown + kNonCharShown;
  for (const QString& view : figureViews()) {
    FigureSpec s;
    s.view = view;
    s.selection = {"decoder", "self_attn", 1, 2};
    s.title = title;
    const QString path = dir.filePath(view + ".svg");
    exportFigure(s, run.trace, path);
    const SvgXml svg = readSvgFile(path);
    INFO(view.toStdString() << ": " << svg.describe());
    REQUIRE(svg.wellFormed());
    CHECK(svg.title == titleShown);
    CHECK(svg.showsText(titleShown));
    if (view == "heatmap" || view == "tokens")
      for (const QString& word : kHostileShown) CHECK(svg.showsText(word));
  }
  // The clipboard's SVG is the same writer's.
  FigureSpec s;
  s.selection = {"decoder", "self_attn", 0, 0};
  s.title = title;
  const SvgXml clip = readSvgXml(figureSvg(figureContent(s, run.trace)));
  INFO(clip.describe());
  REQUIRE(clip.wellFormed());
  CHECK(clip.title == titleShown);
  for (const QString& word : kHostileShown) CHECK(clip.showsText(word));
}

TEST_CASE("every panel plot of a run with hostile tokens exports well-formed SVG", "[ui][export][svg][panels]") {
  ensureApp();
  QTemporaryDir dir;
  const Model model = hostileWordsModel();
  TraceOptions trace;
  trace.qk = true;
  trace.logit_lens = 3;
  RunOptions options;
  options.trace = trace;
  const RunResult run = model.run(kHostileText, "", options);
  const QString title = QString("<i>T</i> & ") + kSoh;
  const QString titleShown = QString("<i>T</i> & ") + kSohShown;
  int plots = 0;
  QStringList shown;  // every text of every plot
  for (const PanelProvider& provider : variantProviders()) {
    if (!provider.available(run.trace)) continue;
    PanelContext ctx;
    ctx.tokenText = [&model](int32_t id) { return QString::fromStdString(model.tokenizer().label(id)); };
    for (const PanelPlot& plot : provider.plots(run.trace, ctx)) {
      const QString what = provider.id + " / " + plot.name;
      FigureSpec spec;
      spec.title = title;
      const QString path = dir.filePath(QString("plot%1.svg").arg(plots++));
      writeFigure(panelFigure(plot, spec), 72, path);
      const SvgXml svg = readSvgFile(path);
      INFO(what.toStdString() << ": " << svg.describe());
      REQUIRE(svg.wellFormed());
      CHECK(svg.title == titleShown);
      CHECK(svg.showsText(titleShown));  // drawn as given: a chart's HTML does not swallow "<i>"
      shown << svg.texts;
    }
  }
  CHECK(plots >= 5);
  // Each token is shown by some plot as itself, or after its position ("2 ]]>": bar categories).
  for (const QString& word : kHostileShown) {
    INFO("token " << word.toStdString());
    CHECK(std::any_of(shown.begin(), shown.end(),
                      [&](const QString& t) { return t == word || t.endsWith(" " + word); }));
  }
}

TEST_CASE("a painted figure's SVG escapes its title and the text drawn into it", "[ui][export][svg]") {
  ensureApp();
  QTemporaryDir dir;
  const QString path = dir.filePath("painted.svg");
  const QString drawn = QString("memory <slot 0> & ]]> ") + kSoh;
  writePaintedFigure(path, "svg", QRectF(0, 0, 300, 100), "NTM <addressing> & " + kSoh, [&](QPainter& p) {
    p.drawText(QPointF(10, 50), drawn);  // unmapped: the writer's last pass must cope
  });
  const SvgXml svg = readSvgFile(path);
  INFO(svg.describe());
  REQUIRE(svg.wellFormed());
  CHECK(svg.title == "NTM <addressing> & " + kSohShown);
  CHECK(svg.showsText(QString("memory <slot 0> & ]]> ") + kSohShown));
}
