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
#include "ui/main_window/panel_docks.h"
#include "ui/main_window/selector_bar.h"
#include "ui/main_window/window_session.h"
#include "ui/tools/tool_panels.h"
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
  // The tool panels' settings and results (ui/tools/tool_panels.h): each when open or holding
  // something worth keeping.
  for (const ToolPanelEntry& tool : toolPanels()) {
    const QWidget* panel = tool.save ? findChild<QWidget*>(tool.panelName) : nullptr;
    if (!panel) continue;
    const QJsonObject state = tool.save(panel);
    if (!state.isEmpty()) w.tools[tool.id] = state;
  }
  if (const QJsonObject ablation = m_panels->ablationState(); !ablation.isEmpty()) w.tools["ablation"] = ablation;
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

// The tool panels' states of a workspace being opened, once its model is loaded (before its first
// run): a restored result waits in its panel for that model's run of the tokens it was computed
// on. Not earlier: the run on screen then (another model's, maybe of the same tokens) would take
// it and drop it when the workspace's run arrived, and a model that fails to load would leave it
// waiting for whatever model comes next. A state the panel refuses (Compare's B model moved since
// the save) is said in the status line once the run is shown (the dock may be closed), as well as
// in the panel.
void MainWindow::restoreWorkspaceTools(const QString& loadedSpec) {
  if (!m_pendingWorkspace) return;
  if (loadedSpec != m_pendingWorkspace->model) {  // another model came first: the study is not its
    m_pendingWorkspace.reset();
    return;
  }
  const Workspace& w = *m_pendingWorkspace;
  m_workspaceNote.clear();
  m_panels->detachTools();
  for (const ToolPanelEntry& tool : toolPanels()) {
    QWidget* panel = tool.restore && w.tools.contains(tool.id) ? findChild<QWidget*>(tool.panelName) : nullptr;
    if (!panel) continue;
    const QString refused = tool.restore(panel, w.tools[tool.id].toObject());
    if (!refused.isEmpty()) m_workspaceNote = refused;
  }
  if (w.tools.contains("ablation"))
    if (const QString refused = m_panels->restoreAblationState(w.tools["ablation"].toObject()); !refused.isEmpty())
      m_workspaceNote = refused;
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
