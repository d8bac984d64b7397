// Workspaces in the window (ui/workspace.h): capturing what is on screen, and restoring it in
// two steps: texts, colours, panels and layout at once, then the model load, and once its first
// run is shown, the selected map, layer, head and query (they only exist in that run).
#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QSettings>
#include <QTimer>

#include "core/tensor/error.h"
#include "ui/views/colormap.h"
#include "ui/main_window/main_window.h"
#include "ui/workspace.h"
#include "ui/workspace_selection.h"

namespace atlas::ui {

Workspace MainWindow::workspace() const {
  Workspace w;
  w.model = m_modelSpec;
  w.source = m_source->toPlainText();
  w.target = m_target->toPlainText();
  w.selection = m_sel;
  w.query = m_selectedQuery;
  const ColorMapping m = currentMapping();
  w.colormap = colormapKey(m.colormap);
  w.scale = m.scale == ColorScale::Log ? "log" : "linear";
  w.normalization = m.normalization == Normalization::Row ? "row" : "global";
  w.valueWeighted = m_valueWeightedAction && m_valueWeightedAction->isChecked();
  w.sharedGridScale = m.sharedScale;
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    if (dock->isVisible() && !dock->objectName().isEmpty()) w.openPanels << dock->objectName();
  w.windowState = saveState();
  w.geometry = saveGeometry();
  return w;
}

void MainWindow::applyWorkspace(const Workspace& w) {
  restoreGeometry(w.geometry);
  restoreState(w.windowState);
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    if (!dock->objectName().isEmpty()) dock->setVisible(w.openPanels.contains(dock->objectName()));
  m_cmapCombo->setCurrentIndex(static_cast<int>(colormapFromKey(w.colormap)));
  m_scaleCombo->setCurrentIndex(w.scale == "log" ? 1 : 0);
  m_normCombo->setCurrentIndex(w.normalization == "row" ? 1 : 0);
  if (m_valueWeightedAction) m_valueWeightedAction->setChecked(w.valueWeighted);
  if (m_sharedScaleAction) m_sharedScaleAction->setChecked(w.sharedGridScale);
  {
    const QSignalBlocker a(m_source), b(m_target);
    m_source->setPlainText(w.source);
    m_target->setPlainText(w.target);
  }
  m_pendingWorkspace = std::make_shared<Workspace>(w);
  loadModel(w.model);
}

bool MainWindow::openWorkspace(const QString& path) {
  try {
    applyWorkspace(loadWorkspaceFile(path));
    m_workspacePath = path;
    return true;
  } catch (const AtlasError& e) {
    m_lastError = QString::fromStdString(e.what());
    if (!m_headless) QMessageBox::critical(this, "Cannot open workspace", m_lastError);
    return false;
  }
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
  if (!m_pendingWorkspace || !m_trace) return;
  const Workspace w = *m_pendingWorkspace;
  m_pendingWorkspace.reset();
  m_workspaceError.clear();
  const QString problem = workspaceSelectionProblem(w.selection, w.query, m_families, *m_trace);
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

void MainWindow::openWorkspaceDialog() {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(this, "Open workspace", settings.value("workspaceDir").toString(),
                                                    "Attention Atlas workspace (*.atlas);;All files (*)");
  if (path.isEmpty()) return;
  settings.setValue("workspaceDir", QFileInfo(path).absolutePath());
  openWorkspace(path);
}

void MainWindow::saveWorkspaceDialog() {
  QSettings settings;
  QString path = QFileDialog::getSaveFileName(this, "Save workspace",
                                              m_workspacePath.isEmpty() ? settings.value("workspaceDir").toString() + "/untitled.atlas"
                                                                        : m_workspacePath,
                                              "Attention Atlas workspace (*.atlas)");
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += ".atlas";
  settings.setValue("workspaceDir", QFileInfo(path).absolutePath());
  saveWorkspace(path);
}

}  // namespace atlas::ui
