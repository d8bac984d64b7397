#pragma once
// Workspaces: what a researcher has on screen, saved as a .atlas JSON file and opened again
// (File > Save workspace / Open workspace, `attention-atlas FILE.atlas`): the model (its spec:
// a folder, a file, preset: or demo:), the input texts, the selected map, layer, head, segment
// and query, the colour mapping, the value-weighted option, which panels are open, the
// window layout, and the tool panels' settings and results (ui/tools/tool_panels.h says what
// each keeps). The model's weights are referenced, not copied. Format: docs/workspaces.md.
#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include "ui/views/attention_selection.h"

namespace atlas::ui {

struct Workspace {
  QString model;                  // as for --model
  QString source, target;         // input texts (target: encoder-decoder models)
  AttentionSelection selection;
  int query = -1;                 // selected query token, -1 = none
  QString colormap = "viridis";   // colormapKey
  QString scale = "linear";       // "linear" | "log"
  QString normalization = "global";  // "global" | "row"
  bool valueWeighted = false;
  bool sharedGridScale = false;   // the grid's tiles on one colour scale
  QStringList openPanels;         // object names of the docks on screen ("sweepDock", ...)
  QByteArray windowState;         // QMainWindow::saveState
  QByteArray geometry;            // QWidget::saveGeometry
  QJsonObject tools;              // by tool id ("sweep", "compare", ...): each tool panel's saved state
};

// Serialises to the versioned JSON of docs/workspaces.md.
QByteArray workspaceToJson(const Workspace& w);
// Parses it. Throws AtlasError naming `origin` and the problem: not JSON, another format or a
// newer version, a key of the wrong type, an unknown key, a value out of its range.
Workspace workspaceFromJson(const QByteArray& json, const QString& origin);

// Files: written atomically; read through the input-file policy (regular files only, never
// blocking) with a size limit (a workspace is a few KB).
void saveWorkspaceFile(const Workspace& w, const QString& path);
Workspace loadWorkspaceFile(const QString& path);

}  // namespace atlas::ui
