// The preset gallery's search box: typing filters by name or description (any case) and
// selects the exact name over longer names that start with it; Enter opens the selection.
#include <catch2/catch.hpp>

#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>
#include <QTreeWidget>

#include "core/model/demos.h"
#include "core/model/presets.h"
#include "tests/ui/ui_test_support.h"
#include "ui/main_window/preset_gallery.h"

using atlas::ui::PresetGallery;

namespace {

QStringList shownSpecs(const PresetGallery& g) {
  QStringList specs;
  const auto* tree = g.findChild<QTreeWidget*>();
  for (int t = 0; t < tree->topLevelItemCount(); ++t) {
    const QTreeWidgetItem* group = tree->topLevelItem(t);
    for (int i = 0; i < group->childCount(); ++i)
      if (!group->isHidden() && !group->child(i)->isHidden())
        specs << group->child(i)->data(0, Qt::UserRole).toString();
  }
  specs.sort();
  return specs;
}

// The oracle: every preset and demo whose name or description contains `needle`.
QStringList expectedSpecs(const QString& needle) {
  QStringList specs;
  for (const auto& p : atlas::list_presets())
    if (QString::fromStdString(p.name).contains(needle, Qt::CaseInsensitive) ||
        QString::fromStdString(p.description).contains(needle, Qt::CaseInsensitive))
      specs << "preset:" + QString::fromStdString(p.name);
  for (const auto& d : atlas::list_demos())
    if (QString::fromStdString(d.name).contains(needle, Qt::CaseInsensitive) ||
        QString::fromStdString(d.description).contains(needle, Qt::CaseInsensitive))
      specs << "demo:" + QString::fromStdString(d.name);
  specs.sort();
  return specs;
}

}  // namespace

TEST_CASE("preset gallery: typing filters and selects the exact name", "[ui][gallery]") {
  atlas::uitest::ensureApp();
  PresetGallery g("preset:tiny-encoder");
  auto* search = g.findChild<QLineEdit*>("presetSearch");
  REQUIRE(search);
  CHECK(g.selectedSpec() == "preset:tiny-encoder");
  CHECK(shownSpecs(g).size() == expectedSpecs("").size());

  // "tiny-span" is also the start of "tiny-span-dynamic": the exact name wins.
  QTest::keyClicks(search, "tiny-span");
  CHECK(g.selectedSpec() == "preset:tiny-span");
  CHECK(shownSpecs(g) == expectedSpecs("tiny-span"));
  CHECK(shownSpecs(g).contains("preset:tiny-span-dynamic"));

  // Any case, and a word of the description (not of the name) finds it too.
  search->clear();
  QTest::keyClicks(search, "REFORMER");
  CHECK(shownSpecs(g) == expectedSpecs("reformer"));
  CHECK(g.selectedSpec().startsWith("preset:"));
  search->clear();
  QTest::keyClicks(search, "tiny-x");  // prefix of one name
  CHECK(g.selectedSpec() == "preset:tiny-xl");

  // Nothing matches: nothing selected, nothing to open.
  search->clear();
  QTest::keyClicks(search, "no-such-model-zzz");
  CHECK(shownSpecs(g).isEmpty());
  CHECK(g.selectedSpec().isEmpty());

  // Enter opens the selection.
  search->clear();
  QSignalSpy accepted(&g, &QDialog::accepted);
  QTest::keyClicks(search, "tiny-vit");
  QTest::keyClick(search, Qt::Key_Return);
  CHECK(accepted.count() == 1);
  CHECK(g.selectedSpec() == "preset:tiny-vit");
}
