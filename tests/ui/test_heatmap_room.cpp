// Room for the main heatmap: opening any bottom dock (every variant and tool panel) at the default
// window size and at 1280x720 leaves the heatmap at least kMainHeatmapMinimum (ui/main_window/main_window.h), and the dock itself
// keeps room for its plot. The docks are found in the window, not listed here, so a panel added
// later is checked too.
#include <catch2/catch.hpp>

#include <QComboBox>
#include <QDockWidget>
#include <QTest>

#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_view.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("no bottom panel shrinks the main heatmap below its minimum, at two window sizes", "[ui][room]") {
  for (const QSize size : {QSize(1100, 800), QSize(1280, 720)}) {
    INFO("window " << size.width() << "x" << size.height());
    uitest::RunWindow rw("demo:induction", "abab abab", size);
    HeatmapView* heatmap = uitest::heatmapView(rw.w);
    // The selectors above the heatmap are as wide as their text ("decoder self-attention" was cut
    // to "decoder self-atti" by a head list as wide as "attention flow (max-flow)").
    for (const char* name : {"familyCombo", "headCombo"}) {
      auto* combo = uitest::part<QComboBox>(rw.w, name);
      INFO(name << " " << combo->currentText().toStdString() << ": " << combo->width() << " px of "
                << combo->sizeHint().width());
      CHECK(combo->width() >= combo->sizeHint().width());
    }
    if (size.width() >= 1280) {  // with Transformer-XL's segment spin too, at the default width
      rw.w.loadModel("preset:tiny-xl");
      REQUIRE(rw.shown.wait(60000));
      rw.settle();
      for (const char* name : {"familyCombo", "headCombo"}) {
        auto* combo = uitest::part<QComboBox>(rw.w, name);
        INFO("XL " << name << " " << combo->currentText().toStdString() << ": " << combo->width() << " px of "
                   << combo->sizeHint().width());
        CHECK(combo->width() >= combo->sizeHint().width());
      }
      rw.w.loadModel("demo:induction");
      REQUIRE(rw.shown.wait(60000));
      rw.settle();
    }
    auto* heads = uitest::part<QComboBox>(rw.w, "headCombo");
    const int flow = heads->findData(int(HeadFlow));
    REQUIRE(flow >= 0);
    CHECK(heads->itemText(flow) == "flow");
    CHECK(heads->itemData(flow, Qt::ToolTipRole).toString() == headName(HeadFlow));
    std::vector<QDockWidget*> bottom;
    for (QDockWidget* d : rw.w.findChildren<QDockWidget*>())
      if (rw.w.dockWidgetArea(d) == Qt::BottomDockWidgetArea) bottom.push_back(d);
    REQUIRE(bottom.size() >= 10);  // the variant panels and the tool panels
    for (QDockWidget* d : bottom) d->hide();
    QTest::qWait(20);
    for (QDockWidget* d : bottom) {
      INFO("dock " << d->objectName().toStdString());
      d->show();
      d->raise();
      QTest::qWait(20);
      INFO("window now " << rw.w.width() << "x" << rw.w.height() << ", heatmap " << heatmap->width() << "x" << heatmap->height() << ", dock " << d->height());
      CHECK(rw.w.size() == size);  // the window did not grow to make room
      CHECK(heatmap->height() >= kMainHeatmapMinimum.height());
      CHECK(heatmap->width() >= kMainHeatmapMinimum.width());
      CHECK(d->height() >= kBottomDockReadable);  // and the panel has room for its plot
      d->hide();
    }
  }
}
