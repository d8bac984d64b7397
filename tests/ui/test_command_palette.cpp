// The command palette (ui/main_window/command_palette.h) lists the window's menu actions with their paths,
// filters them by every typed word, and runs the chosen one; the views' right-click menus offer
// copy, export and the compare and sweep panels.
#include <catch2/catch.hpp>

#include <QAction>
#include <QClipboard>
#include <QDockWidget>
#include <QGuiApplication>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMimeData>
#include <QApplication>
#include <QPlainTextEdit>
#include <QTest>

#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"
#include "ui/main_window/command_palette.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("command palette: every word filters, Enter runs the action", "[ui][palette]") {
  CHECK(CommandPalette::matches("View \u203A Variant panels \u203A Ablation sweep", "abl swe"));
  CHECK(CommandPalette::matches("View \u203A Variant panels \u203A Ablation sweep", "VIEW sweep"));
  CHECK_FALSE(CommandPalette::matches("View \u203A Variant panels \u203A Ablation sweep", "sweep zzz"));

  uitest::RunWindow rw("demo:induction", "abab");
  CommandPalette* palette = uitest::openCommandPalette(rw.w);
  REQUIRE(palette);
  const int all = palette->list()->count();
  CHECK(all > 40);  // menus, panels, presets, demos
  QTest::keyClicks(palette->filterEdit(), "variant ablation sweep");
  REQUIRE(palette->list()->count() == 1);
  CHECK(palette->list()->item(0)->text() == "View \u203A Variant panels \u203A Ablation sweep");
  CHECK_FALSE(uitest::dock(rw.w, "sweepDock")->isVisible());
  QTest::keyClick(palette->filterEdit(), Qt::Key_Return);
  CHECK(uitest::dock(rw.w, "sweepDock")->isVisible());
  // Presets are in it too: choosing one loads it.
  palette = uitest::openCommandPalette(rw.w);
  QTest::keyClicks(palette->filterEdit(), "preset tiny-xl");
  REQUIRE(palette->list()->count() >= 1);
  CHECK(palette->list()->currentItem()->text().endsWith("tiny-xl"));
  REQUIRE(palette->runCurrent());
  REQUIRE(rw.shown.wait(60000));
  rw.settle();
  CHECK(rw.w.modelSpec() == "preset:tiny-xl");
}

TEST_CASE("right-click menus of the views copy the figure and open the compare panel", "[ui][palette]") {
  uitest::RunWindow rw("demo:induction", "abab");
  QMenu* menu = uitest::figureActions(rw.w)->contextMenu("heatmap");
  REQUIRE(menu);
  QStringList texts;
  for (QAction* a : menu->actions()) texts << a->text().remove('&');
  CHECK(texts.contains("Copy figure"));
  CHECK(texts.contains("Export figure\u2026"));
  for (QAction* a : menu->actions())
    if (a->text().remove('&') == "Copy figure") a->trigger();
  CHECK(QGuiApplication::clipboard()->mimeData()->data("image/svg+xml").contains("<svg"));
  for (QAction* a : menu->actions())
    if (a->text().remove('&').startsWith("Compare")) a->trigger();
  CHECK(uitest::dock(rw.w, "compareDock")->isVisible());
  delete menu;
  // Pin: the row under the cursor becomes the pinned query; the next menu offers to unpin.
  QMenu* pin = uitest::figureActions(rw.w)->contextMenu("heatmap", 2);
  QAction* pinAction = nullptr;
  for (QAction* a : pin->actions())
    if (a->text().remove('&').startsWith("Pin query 2")) pinAction = a;
  REQUIRE(pinAction);
  pinAction->trigger();
  CHECK(uitest::heatmapView(rw.w)->pinnedRow() == 2);
  delete pin;
  QMenu* unpin = uitest::figureActions(rw.w)->contextMenu("heatmap", -1);
  for (QAction* a : unpin->actions())
    if (a->text().remove('&') == "Unpin the query") a->trigger();
  CHECK(uitest::heatmapView(rw.w)->pinnedRow() == -1);
  delete unpin;
}

TEST_CASE("a panel opened from the menu comes to the front of its tab group", "[ui][palette]") {
  uitest::RunWindow rw("demo:induction", "abab");
  // Two docks of the bottom tab group: open the first, then the second from the menu.
  uitest::dock(rw.w, "sweepDock")->toggleViewAction()->trigger();
  uitest::dock(rw.w, "compareDock")->toggleViewAction()->trigger();
  QTest::qWait(50);
  CHECK(uitest::dock(rw.w, "compareDock")->isVisible());
  CHECK_FALSE(uitest::dock(rw.w, "compareDock")->visibleRegion().isEmpty());
  CHECK(uitest::dock(rw.w, "sweepDock")->visibleRegion().isEmpty());  // behind it in the same tab group
  uitest::dock(rw.w, "sweepDock")->toggleViewAction()->trigger();  // closes the sweep dock
  uitest::dock(rw.w, "sweepDock")->toggleViewAction()->trigger();  // opens it again, in front
  QTest::qWait(50);
  CHECK_FALSE(uitest::dock(rw.w, "sweepDock")->visibleRegion().isEmpty());
}

TEST_CASE("Alt+arrows move the layer and head even while the input has focus, typing nothing", "[ui][palette]") {
  uitest::RunWindow rw("demo:induction", "abab");
  auto* input = rw.w.findChild<QPlainTextEdit*>("sourceEdit");
  REQUIRE(input);
  input->setFocus();
  QApplication::setActiveWindow(&rw.w);
  const AttentionSelection before = rw.w.selection();
  QTest::keyClick(input, Qt::Key_Down, Qt::AltModifier);
  QTest::keyClick(input, Qt::Key_Right, Qt::AltModifier);
  CHECK(rw.w.selection().layer == before.layer + 1);
  CHECK(rw.w.selection().head == before.head + 1);
  CHECK(input->toPlainText() == "abab");
  // "]" while typing is text, not navigation.
  QTest::keyClick(input, Qt::Key_BracketRight);
  CHECK(rw.w.selection().layer == before.layer + 1);
  CHECK(input->toPlainText().contains("]"));
}
