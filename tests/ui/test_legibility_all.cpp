// Legibility as a tested property: the window on a text decoder, an encoder-decoder, a ViT and
// Transformer-XL, at the default size (1280 x 800) and at 1280 x 720, with every dock opened in
// turn (the views, every panel of the registry, every tool) and every plot of each panel shown.
// Each state is rendered into a TextRecorder; any text item drawn elided or over another text
// item fails, named by the widget that drew it. ctest runs this again at QT_SCALE_FACTOR=2
// (ui_legibility_2x): the window's own layout at a device pixel ratio of 2.
#include <catch2/catch.hpp>

#include <QSettings>

#include <QAbstractButton>
#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QSignalSpy>
#include <QTest>
#include <map>

#include "tests/ui/text_recorder.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/main_window/main_window.h"
#include "ui/panels/variant_panel.h"
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/tools/qk_decomposition_panel.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::DrawnText;

namespace {

// The named widget under `at` (window coordinates) and its class: "heatmap (HeatmapView)".
QString widgetAt(QWidget& window, QPointF at) {
  QWidget* w = window.childAt(at.toPoint());
  if (!w) return "the window";
  const QString cls = w->metaObject()->className();
  QStringList names;
  for (QWidget* x = w; x && x != &window && names.size() < 2; x = x->parentWidget())
    if (!x->objectName().isEmpty() && !x->objectName().startsWith("qt_")) names.prepend(x->objectName());
  const QRect g(w->mapTo(&window, QPoint(0, 0)), w->size());
  return names.join('/') + " (" + cls + QString(" [%1,%2 %3x%4])").arg(g.x()).arg(g.y()).arg(g.width()).arg(g.height());
}

QString rectText(const QRectF& r) {
  return QString("[%1,%2 %3x%4]").arg(r.x(), 0, 'f', 1).arg(r.y(), 0, 'f', 1).arg(r.width(), 0, 'f', 1).arg(r.height(), 0, 'f', 1);
}

struct LegibilityRun {
  MainWindow& w;
  QSize size;  // the window's size: a dock whose minimum does not fit would grow the window
  QSignalSpy shown{&w, &MainWindow::traceShown};
  std::map<QString, QString> findings;  // deduplicated: what -> where it was first seen

  void settle() {
    for (int i = 0; i < 200 && shown.wait(300); ++i) {
    }
    REQUIRE(uitest::waitUntil([&] { return !uitest::overviewPending(w); }, 60000));
    QTest::qWait(20);
  }

  // The texts the window's buttons, actions and combo boxes hold: "Export…" ends in "…" by the
  // convention for a command that opens a dialog, not because it was cut.
  QSet<QString> ownTexts() const {
    QSet<QString> own;
    auto plain = [](QString s) { return s.remove('&'); };
    for (const QAbstractButton* b : w.findChildren<QAbstractButton*>()) own.insert(plain(b->text()));
    for (const QAction* a : w.findChildren<QAction*>()) own.insert(plain(a->text()));
    for (const QComboBox* c : w.findChildren<QComboBox*>())
      for (int i = 0; i < c->count(); ++i) own.insert(c->itemText(i));
    return own;
  }

  // Renders the window (or a dialog of it) as it is and notes every elided or overlapping text
  // item.
  void check(const QString& state) {
    INFO(state.toStdString());
    // Else a dock's minimum outgrew the window (and the screen it was sized for).
    CHECK(w.width() == size.width());
    CHECK(w.height() == size.height());
    check(w, state);
  }
  void check(QWidget& shownWindow, const QString& state) {
    QApplication::processEvents();
    uitest::TextRecorder rec(shownWindow.size(), shownWindow.devicePixelRatioF());
    shownWindow.render(&rec);
    const QSet<QString> own = ownTexts();
    std::vector<DrawnText> seen;
    for (const DrawnText& t : rec.texts())
      if (!t.visible.isEmpty()) seen.push_back(t);
    INFO(state.toStdString());
    CHECK(seen.size() > 20);  // the window's text reached the recorder (menus, selectors, views)
    for (size_t i = 0; i < seen.size(); ++i) {
      const DrawnText& a = seen[i];
      if (uitest::looksElided(a.text) && !own.contains(a.text))
        findings.emplace("elided \"" + a.text + "\" in " + widgetAt(shownWindow, a.visible.center()),
                         state + " " + rectText(a.rect));
      for (size_t j = i + 1; j < seen.size(); ++j) {
        const DrawnText& b = seen[j];
        if (!uitest::textsOverlap(a, b)) continue;
        findings.emplace("overlap \"" + a.text + "\" " + rectText(a.visible) + " in " +
                             widgetAt(shownWindow, a.visible.center()) + " with \"" + b.text + "\" " +
                             rectText(b.visible) + " in " + widgetAt(shownWindow, b.visible.center()),
                         state);
      }
    }
  }

  // The tools that compute results of their own, run on this input, so that their docks show
  // grids and charts rather than empty plots; and the training dialog (a window of its own).
  void runTools() {
    auto* sweep = uitest::sweepPanel(w);
    QSignalSpy swept(sweep, &SweepPanel::sweepFinished);
    const bool sweepStarted = sweep->startSweep();
    INFO(sweep->status().toStdString());
    REQUIRE(sweepStarted);
    REQUIRE(swept.wait(60000));
    auto* patching = uitest::part<PatchingPanel>(w, "patchingPanel");
    patching->setCorruptedText("the dog sat on the mat, the dog sat");
    patching->setChoice(PatchSite::HeadPos, PatchDirection::Noise, PatchMetric::Loss, "t");
    QSignalSpy patched(patching, &PatchingPanel::patchingFinished);
    const bool patchingStarted = patching->startPatching();
    INFO(patching->status().toStdString());
    REQUIRE(patchingStarted);
    REQUIRE(patched.wait(60000));
    auto* dla = uitest::part<DlaPanel>(w, "dlaPanel");
    QSignalSpy attributed(dla, &DlaPanel::attributionFinished);
    const bool dlaStarted = dla->startAttribution();
    INFO(dla->status().toStdString());
    REQUIRE(dlaStarted);
    REQUIRE(attributed.wait(60000));
    auto* compare = uitest::comparePanel(w);
    compare->setB(w.modelSpec(), "the dog sat on the mat, the dog sat");
    QSignalSpy compared(compare, &ComparePanel::compared);
    const bool compareStarted = compare->compare();
    INFO(compare->status().toStdString());
    REQUIRE(compareStarted);
    REQUIRE(compared.wait(60000));
    uitest::searchPanel(w)->setPatterns("cat", "the");
    TrainingPanel* training = uitest::trainingPanel(w);
    training->show();
    QApplication::processEvents();
    check(*training, "training dialog");
    training->close();
  }

  // The window as it opens, then every dock in turn brought to the front (and every plot of
  // the panels it holds), then closed again unless it was open.
  void checkEveryDock() {
    check("default layout");
    for (QDockWidget* dock : w.findChildren<QDockWidget*>()) {
      const bool wasOpen = dock->isVisible();
      dock->show();
      dock->raise();
      settle();
      const QString name = dock->objectName();
      check(name);
      for (VariantPanel* panel : dock->findChildren<VariantPanel*>()) {
        panel->ensureBuilt();
        for (int i = 1; i < static_cast<int>(panel->plots().size()); ++i) {
          panel->setCurrentPlot(i);
          QApplication::processEvents();
          check(name + " plot " + panel->plots()[size_t(i)].name);
        }
        if (!panel->plots().empty()) panel->setCurrentPlot(0);
      }
      if (!wasOpen) dock->hide();
    }
  }
};

void checkModel(const QString& spec, QSize size, bool runTools = false) {
  uitest::ensureApp();
  // The default layout, not one an earlier test of this process saved (a narrow side dock).
  QSettings().remove("window");
  MainWindow w;
  w.resize(size);
  w.show();
  LegibilityRun run{w, size};
  const bool image = spec.contains("vit");
  if (!image) {
    w.setSourceText("the cat sat on the mat, the cat sat");
    if (spec.contains("encoder-decoder")) w.setTargetText("le chat");
  }
  w.loadModel(spec);
  if (image) {
    QSignalSpy ready(&w, &MainWindow::modelReady);
    if (w.modelSpec() != spec) REQUIRE(ready.wait(60000));
    REQUIRE(w.setImage(uitest::colourTestImage(), "colours"));
  }
  REQUIRE(run.shown.wait(60000));
  run.settle();
  INFO(w.lastError().toStdString());
  REQUIRE(w.lastError().isEmpty());
  if (runTools) run.runTools();
  run.checkEveryDock();
  std::string report;
  for (const auto& [what, where] : run.findings) report += (what + "  {" + where + "}\n").toStdString();
  INFO(spec.toStdString() << " at " << size.width() << "x" << size.height() << ", "
                          << run.findings.size() << " text items not legible:\n" << report);
  CHECK(run.findings.empty());
}

}  // namespace

TEST_CASE("every view and panel is legible on a text decoder", "[ui][legibility][legibility-all]") {
  for (QSize size : {QSize(1280, 800), QSize(1280, 720)}) checkModel("demo:induction", size, true);
}

TEST_CASE("every view and panel is legible on an encoder-decoder", "[ui][legibility][legibility-all]") {
  for (QSize size : {QSize(1280, 800), QSize(1280, 720)}) checkModel("preset:tiny-encoder-decoder", size);
}

TEST_CASE("every view and panel is legible on a vision transformer", "[ui][legibility][legibility-all]") {
  for (QSize size : {QSize(1280, 800), QSize(1280, 720)}) checkModel("preset:tiny-vit", size);
}

TEST_CASE("every view and panel is legible on Transformer-XL", "[ui][legibility][legibility-all]") {
  for (QSize size : {QSize(1280, 800), QSize(1280, 720)}) checkModel("preset:tiny-xl", size);
}
