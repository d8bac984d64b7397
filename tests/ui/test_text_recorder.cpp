// The text recorder (text_recorder.h) against widgets whose text and positions are known: a
// hand-painted widget at an offset inside its parent, text painted where the clip hides it, and
// a label. Oracle: the rects worked from the font's metrics here, not read from the recorder.
#include <catch2/catch.hpp>

#include <QLabel>
#include <QPainter>
#include <QWidget>

#include "tests/ui/text_recorder.h"
#include "tests/ui/ui_test_support.h"

using atlas::uitest::DrawnText;
using atlas::uitest::TextRecorder;

namespace {

// Paints "alpha" with its baseline at (10, 30), "beta" at (60, 70) and "hidden" at x = -200
// (outside the widget: the clip of QWidget::render hides it).
class KnownText : public QWidget {
 public:
  using QWidget::QWidget;
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.setFont(font());
    p.drawText(QPointF(10, 30), "alpha");
    p.drawText(QPointF(60, 70), "beta");
    p.drawText(QPointF(-200, 30), "hidden");
  }
};

const DrawnText* findText(const std::vector<DrawnText>& texts, const QString& s) {
  for (const DrawnText& t : texts)
    if (t.text == s) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("the text recorder records each string at its device rect, the clip hiding what it hides",
          "[ui][legibility][recorder]") {
  atlas::uitest::ensureApp();
  QWidget parent;
  parent.resize(300, 200);
  QFont font = parent.font();
  font.setPixelSize(14);
  auto* child = new KnownText(&parent);
  child->setFont(font);
  child->setGeometry(20, 40, 200, 120);
  auto* label = new QLabel("a label", &parent);
  label->setFont(font);
  label->setGeometry(20, 170, 200, 25);

  for (qreal dpr : {1.0, 2.0}) {
    CAPTURE(dpr);
    TextRecorder rec(parent.size(), dpr);
    parent.render(&rec);
    const QFontMetricsF fm(font, &rec);
    const DrawnText* alpha = findText(rec.texts(), "alpha");
    const DrawnText* beta = findText(rec.texts(), "beta");
    REQUIRE(alpha);
    REQUIRE(beta);
    // The child sits at (20, 40): the baseline of "alpha" at (30, 70) in the parent.
    CHECK(alpha->rect.left() == Approx(30).margin(0.5));
    CHECK(alpha->rect.top() == Approx(70 - fm.ascent()).margin(0.5));
    CHECK(alpha->rect.height() == Approx(fm.ascent() + fm.descent()).margin(0.5));
    CHECK(alpha->rect.width() == Approx(fm.horizontalAdvance("alpha")).margin(1.0));
    CHECK(beta->rect.left() == Approx(80).margin(0.5));
    CHECK(beta->rect.bottom() == Approx(110 + fm.descent()).margin(0.5));
    CHECK(alpha->visible == alpha->rect);
    // Painted left of the child: recorded, but nothing of it visible.
    const DrawnText* hidden = findText(rec.texts(), "hidden");
    REQUIRE(hidden);
    CHECK(hidden->visible.isEmpty());
    // The label's text lies within the label.
    const DrawnText* l = findText(rec.texts(), "a label");
    REQUIRE(l);
    CHECK(QRectF(label->geometry()).adjusted(-0.5, -0.5, 0.5, 0.5).contains(l->visible));
    CHECK(rec.texts().size() == 4);
    // The three visible strings are apart; "alpha" over itself moved by 3 pixels overlaps.
    CHECK_FALSE(atlas::uitest::textsOverlap(*alpha, *beta));
    CHECK_FALSE(atlas::uitest::textsOverlap(*alpha, *l));
    DrawnText moved = *alpha;
    moved.visible.translate(3, 2);
    CHECK(atlas::uitest::textsOverlap(*alpha, moved));
  }
}

TEST_CASE("elided text is told by its ellipsis", "[ui][legibility][recorder]") {
  CHECK(atlas::uitest::looksElided(QString("decoder.laye") + QChar(0x2026)));
  CHECK(atlas::uitest::looksElided("KL(clean || ab..."));
  CHECK_FALSE(atlas::uitest::looksElided("layer 0. head 1"));
}
