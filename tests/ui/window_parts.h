#pragma once
// The main window's parts as the tests reach them: by object name (findChild) and through the
// menus' actions, the way a user finds them, instead of getters on the window. Each helper
// fails the test when the part is missing.
#include <catch2/catch.hpp>

#include <QAction>
#include <QDockWidget>
#include <QPlainTextEdit>

#include "ui/main_window/backend_status.h"
#include "ui/main_window/command_palette.h"
#include "ui/main_window/figure_actions.h"
#include "ui/main_window/image_mode.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "ui/main_window/run_status.h"
#include "ui/panels/variant_panel.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/corpus_panel.h"
#include "ui/tools/score_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"
#include "ui/tools/training_panel.h"
#include "ui/views/heatmap_view.h"
#include "ui/views/image_input_view.h"
#include "ui/views/model_view.h"
#include "ui/views/overview_cache.h"
#include "ui/views/pattern_view.h"
#include "ui/views/positional_view.h"
#include "ui/views/token_chips.h"
#include "ui/views/token_view.h"

namespace atlas::uitest {

// The child of `w` of type T named `name` (empty: the only one).
template <class T>
T* part(const QObject& w, const QString& name = {}) {
  T* p = w.findChild<T*>(name);
  INFO("the window has no " << name.toStdString());
  REQUIRE(p);
  return p;
}

inline ui::HeatmapView* heatmapView(const ui::MainWindow& w) { return part<ui::HeatmapView>(w, "heatmap"); }
inline ui::ModelView* modelView(const ui::MainWindow& w) { return part<ui::ModelView>(w, "modelGrid"); }
inline ui::TokenView* tokenView(const ui::MainWindow& w) { return part<ui::TokenView>(w, "tokenView"); }
inline ui::PositionalView* positionalView(const ui::MainWindow& w) { return part<ui::PositionalView>(w, "positionalView"); }
inline ui::TokenChips* sourceChips(const ui::MainWindow& w) { return part<ui::TokenChips>(w, "sourceChips"); }
inline ui::TokenChips* targetChips(const ui::MainWindow& w) { return part<ui::TokenChips>(w, "targetChips"); }
inline ui::RunController* runController(const ui::MainWindow& w) { return part<ui::RunController>(w, "runController"); }
inline ui::PatternView* patternView(const ui::MainWindow& w) { return part<ui::PatternView>(w, "patternView"); }
inline ui::ScorePanel* scorePanel(const ui::MainWindow& w) { return part<ui::ScorePanel>(w, "scorePanel"); }
inline ui::SweepPanel* sweepPanel(const ui::MainWindow& w) { return part<ui::SweepPanel>(w, "sweepPanel"); }
inline ui::ComparePanel* comparePanel(const ui::MainWindow& w) { return part<ui::ComparePanel>(w, "comparePanel"); }
inline ui::TokenSearchPanel* searchPanel(const ui::MainWindow& w) { return part<ui::TokenSearchPanel>(w, "searchPanel"); }
inline ui::CorpusPanel* corpusPanel(const ui::MainWindow& w) { return part<ui::CorpusPanel>(w, "corpusPanel"); }
// A dock by its object name: "patternDock", "scoresDock", "sweepDock", "compareDock",
// "searchDock", "corpusDock", "imageDock", a variant panel's "<id>Dock".
inline QDockWidget* dock(const ui::MainWindow& w, const QString& name) { return part<QDockWidget>(w, name); }
// A variant or analysis panel by its provider id ("span", "performer", ...) and its dock.
inline ui::VariantPanel* variantPanel(const ui::MainWindow& w, const QString& id) {
  return part<ui::VariantPanel>(w, id + "Panel");
}
inline QDockWidget* variantDock(const ui::MainWindow& w, const QString& id) { return dock(w, id + "Dock"); }
// A menu action by its object name ("valueWeighted", "sharedGridScale", "mapsAutomatic",
// "mapsStored", "mapsOnDemand", "trainModel", "commandPalette", "copyHeatmapFigure", ...).
inline QAction* action(const ui::MainWindow& w, const QString& name) { return part<QAction>(w, name); }
inline QString sourceText(const ui::MainWindow& w) { return part<QPlainTextEdit>(w, "sourceEdit")->toPlainText(); }
inline bool imageMode(const ui::MainWindow& w) { return part<ui::ImageMode>(w, "imageMode")->active(); }
inline ui::ImageInputView* imageView(const ui::MainWindow& w) { return part<ui::ImageInputView>(w); }
inline bool overviewPending(const ui::MainWindow& w) { return part<ui::OverviewCache>(w, "overviewCache")->pending(); }
inline ui::BackendStatus* backendStatus(const ui::MainWindow& w) { return part<ui::BackendStatus>(w, "backendStatus"); }
inline ui::FigureActions* figureActions(const ui::MainWindow& w) { return part<ui::FigureActions>(w, "figureActions"); }
inline ui::RunStatus* runStatus(const ui::MainWindow& w) { return part<ui::RunStatus>(w, "runStatusLine"); }
// Model > Train a model…: the panel it opens.
inline ui::TrainingPanel* trainingPanel(ui::MainWindow& w) {
  action(w, "trainModel")->trigger();
  return part<ui::TrainingPanel>(w, "trainingPanel");
}
// View > Command palette (Ctrl+K): the palette it opens (the newest when several are open).
inline ui::CommandPalette* openCommandPalette(ui::MainWindow& w) {
  action(w, "commandPalette")->trigger();
  const auto palettes = w.findChildren<ui::CommandPalette*>(QString(), Qt::FindDirectChildrenOnly);
  REQUIRE_FALSE(palettes.isEmpty());
  return palettes.last();
}

}  // namespace atlas::uitest
