// Workspaces in the window (ui/workspace.h): capturing what is on screen, and restoring it in
// two steps: texts, colours, panels and layout at once, then the model load, and once its first
// run is shown, the selected map, layer, head and query (they only exist in that run).
#include <QAction>
#include <QDockWidget>
#include <QMessageBox>
#include <QTimer>

#include "core/tensor/error.h"
#include "ui/main_window/input_area.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/selector_bar.h"
#include "ui/main_window/window_session.h"
#include "ui/tools/compare_panel.h"
#include "ui/tools/dla_panel.h"
#include "ui/tools/patching_panel.h"
#include "ui/tools/qk_decomposition_panel.h"
#include "ui/tools/search_panel.h"
#include "ui/tools/sweep_panel.h"
#include "ui/views/colormap.h"
#include "ui/workspace.h"
#include "ui/workspace_selection.h"

namespace atlas::ui {

Workspace MainWindow::workspace() const {
  Workspace w;
  w.model = modelSpec();
  w.source = m_input->source();
  w.target = m_input->target();
  w.selection = selection();
  w.query = m_session->query();
  const ColorMapping m = m_selectors->mapping();
  w.colormap = colormapKey(m.colormap);
  w.scale = m.scale == ColorScale::Log ? "log" : "linear";
  w.normalization = m.normalization == Normalization::Row ? "row" : "global";
  w.valueWeighted = m_valueWeighted->isChecked();
  w.sharedGridScale = m_sharedScale->isChecked();
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    if (dock->isVisible() && !dock->objectName().isEmpty()) w.openPanels << dock->objectName();
  w.windowState = saveState();
  w.geometry = saveGeometry();
  // The tool panels' settings and results, when open or holding a result.
  if (auto* p = findChild<PatchingPanel*>("patchingPanel")) {
    const QJsonObject state = p->saveState();
    if (p->isVisible() || state.contains("result")) w.tools["patching"] = state;
  }
  if (auto* p = findChild<DlaPanel*>("dlaPanel")) {
    const QJsonObject state = p->saveState();
    if (p->isVisible() || state.contains("result")) w.tools["dla"] = state;
  }
  if (auto* p = findChild<QkDecompositionPanel*>("qkDecompositionPanel")) {
    const QJsonObject state = p->saveState();
    if (p->isVisible() || state.contains("result")) w.tools["qk"] = state;
  }
  if (auto* p = findChild<SweepPanel*>("sweepPanel")) {
    const QJsonObject state = p->saveState();
    if (p->isVisible() || state.contains("result")) w.tools["sweep"] = state;
  }
  // Compare and token search keep inputs only (B runs again, the scores follow the run).
  if (auto* p = findChild<ComparePanel*>("comparePanel")) {
    const QJsonObject state = p->saveState();
    const bool hasB = !state["model"].toString().isEmpty() || !state["text"].toString().isEmpty();
    if (p->isVisible() || hasB || p->comparing()) w.tools["compare"] = state;
  }
  if (auto* p = findChild<TokenSearchPanel*>("searchPanel")) {
    const QJsonObject state = p->saveState();
    if (p->isVisible() || !state["query"].toString().isEmpty() || !state["key"].toString().isEmpty())
      w.tools["search"] = state;
  }
  return w;
}

bool MainWindow::openWorkspace(const QString& path) {
  Workspace w;
  try {
    w = loadWorkspaceFile(path);
  } catch (const AtlasError& e) {
    m_lastError = QString::fromStdString(e.what());
    if (!m_headless) QMessageBox::critical(this, "Cannot open workspace", m_lastError);
    return false;
  }
  m_workspacePath = path;
  restoreGeometry(w.geometry);
  if (restoreState(w.windowState)) m_defaultLayout = false;  // the workspace's dock sizes stand
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    if (!dock->objectName().isEmpty()) dock->setVisible(w.openPanels.contains(dock->objectName()));
  m_selectors->setMapping(colormapFromKey(w.colormap), w.scale == "log" ? ColorScale::Log : ColorScale::Linear,
                          w.normalization == "row" ? Normalization::Row : Normalization::Global);
  m_valueWeighted->setChecked(w.valueWeighted);
  m_sharedScale->setChecked(w.sharedGridScale);
  // A restored grid waits in its panel for a run of the tokens it was computed on.
  if (auto* p = findChild<PatchingPanel*>("patchingPanel"); p && w.tools.contains("patching"))
    p->restoreState(w.tools["patching"].toObject());
  if (auto* p = findChild<DlaPanel*>("dlaPanel"); p && w.tools.contains("dla"))
    p->restoreState(w.tools["dla"].toObject());
  if (auto* p = findChild<QkDecompositionPanel*>("qkDecompositionPanel"); p && w.tools.contains("qk"))
    p->restoreState(w.tools["qk"].toObject());
  if (auto* p = findChild<SweepPanel*>("sweepPanel"); p && w.tools.contains("sweep"))
    p->restoreState(w.tools["sweep"].toObject());
  if (auto* p = findChild<TokenSearchPanel*>("searchPanel"); p && w.tools.contains("search"))
    p->restoreState(w.tools["search"].toObject());
  // B's model may have moved since the save: said in the status line once the run is shown
  // (the Compare dock may be closed), as well as in the panel.
  m_workspaceNote.clear();
  if (auto* p = findChild<ComparePanel*>("comparePanel"); p && w.tools.contains("compare"))
    if (!p->restoreState(w.tools["compare"].toObject())) m_workspaceNote = p->status();
  m_input->setSource(w.source, /*quiet=*/true);
  m_input->setTarget(w.target, /*quiet=*/true);
  m_pendingWorkspace = std::make_shared<Workspace>(w);
  loadModel(w.model);
  return true;
}

bool MainWindow::saveWorkspace(const QString& path) {
  try {
    saveWorkspaceFile(workspace(), path);
    m_workspacePath = path;
    return true;
  } catch (const AtlasError& e) {
    m_lastError = QString::fromStdString(e.what());
    if (!m_headless) QMessageBox::critical(this, "Cannot save workspace", m_lastError);
    return false;
  }
}

// The selection of a workspace being opened, once its model's first run is on screen. One this
// run does not have (layer 99 of a 2-layer model) is refused with the valid range, and the run's
// own default selection stays: never a clamped neighbour the user did not choose.
void MainWindow::finishWorkspace() {
  const auto trace = m_session->trace();
  if (!m_pendingWorkspace || !trace) return;
  const Workspace w = *m_pendingWorkspace;
  m_pendingWorkspace.reset();
  m_workspaceError.clear();
  const QString problem = workspaceSelectionProblem(w.selection, w.query, m_selectors->families(), *trace);
  if (!problem.isEmpty()) {
    m_workspaceError = m_lastError = "the workspace's selection: " + problem + "; the first map is shown instead";
    // After the run is shown: a modal dialog here would run the event loop inside showRun.
    if (!m_headless)
      QTimer::singleShot(0, this, [this, text = m_lastError] { QMessageBox::warning(this, "Workspace selection", text); });
    return;
  }
  setSelection(w.selection);
  if (w.query >= 0) selectQuery(w.query);
}

}  // namespace atlas::ui
