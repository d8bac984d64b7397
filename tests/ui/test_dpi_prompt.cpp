// The PNG resolution prompt says what it will produce: the figure's size in inches and the
// pixels at the chosen dots per inch, following the value as it changes, and the pixels it
// names are those the PNG export then draws (figureImage).
#include <catch2/catch.hpp>

#include <QInputDialog>
#include <QPainter>
#include <memory>

#include "tests/ui/ui_test_support.h"
#include "ui/export/export_dialog.h"
#include "ui/export/figure_export.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("the PNG resolution prompt names the pixel size the export produces", "[ui][export][dpi]") {
  uitest::ensureApp();
  CHECK(pngSizeNote(QSizeF(8, 6), 300) ==
        QString::fromUtf8("The figure is 8.0 \u00d7 6.0 inches: at 300 dots per inch the PNG is 2400 \u00d7 1800 pixels."));
  // 5.5 x 3.25 in at 150 dpi: 825 x 487.5, rounded half away from zero as the export rounds.
  CHECK(pngSizeNote(QSizeF(5.5, 3.25), 150).endsWith("the PNG is 825 \u00d7 488 pixels."));

  FigureContent fig;
  fig.sizeInches = QSizeF(5.5, 3.25);
  fig.paint = [](QPainter& p, const QRectF& bounds, bool) { p.fillRect(bounds, Qt::black); };
  CHECK(figureImage(fig, 150).size() == QSize(825, 488));

  std::unique_ptr<QInputDialog> dialog(makeDpiDialog(nullptr, fig.sizeInches, 150));
  CHECK(dialog->intValue() == 150);
  CHECK(dialog->labelText().startsWith(pngSizeNote(fig.sizeInches, 150)));
  dialog->setIntValue(600);  // as the user types: the text follows
  CHECK(dialog->labelText().startsWith(pngSizeNote(fig.sizeInches, 600)));
  CHECK(dialog->labelText().contains("3300 \u00d7 1950 pixels"));
  dialog->setIntValue(5000);  // beyond the range: clamped, as the spin box clamps
  CHECK(dialog->intValue() == 1200);
}
