#pragma once
// The window's tool panels (score functions, ablation sweep, activation patching, logit
// attribution, QK decomposition, compare, token search, corpus) as one list, which the window's
// docks (ui/main_window/panel_docks.cpp), its workspaces (window_workspace.cpp) and the tests
// iterate: a new tool is one entry here. Each entry names the panel and its dock, makes the
// panel, reads back the run it holds (so that a test can check that every tool follows the run
// on screen), and saves and restores what a workspace keeps of it.
#include <QJsonObject>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

#include "core/model/model.h"

class QWidget;

namespace atlas::ui {

struct ToolPanelEntry {
  QString id;         // "sweep": the key of its state in a workspace's tools
  QString title;      // its dock's title: "Ablation sweep"
  QString panelName;  // the panel's object name: "sweepPanel"
  QString dockName;   // its dock's, as a workspace lists the open panels: "sweepDock"
  std::function<QWidget*()> create;
  // The run the panel holds: the model and the trace it was given (null: none). A panel that
  // reads no trace (corpus: it runs the model over a file) has no `trace`.
  std::function<std::shared_ptr<const Model>(const QWidget*)> model;
  std::function<std::shared_ptr<const Trace>(const QWidget*)> trace;
  // What a workspace keeps of it: its state when open or holding something worth keeping,
  // else an empty object. `restore` gives it back and returns why not ("" when it did). Null
  // when the panel has nothing of its own to keep (the score functions follow the selection).
  std::function<QJsonObject(const QWidget*)> save;
  std::function<QString(QWidget*, const QJsonObject&)> restore;
};

// In the order their docks are added (and listed under View > Variant panels).
std::vector<ToolPanelEntry> toolPanels();

}  // namespace atlas::ui
