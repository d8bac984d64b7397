// Workspace files (workspace.h).
#include "ui/workspace.h"

#include <QJsonDocument>
#include <cstdint>

#include "core/formats/workspace_file.h"
#include "core/tensor/error.h"
#include "ui/export/atomic_file_device.h"

namespace atlas::ui {

// The format itself, its parsing and its range checks are in core (core/formats/workspace_file.h,
// fuzzed by tests/fuzz/fuzz_workspace.cpp); this file converts to and from Qt's types.
namespace {

std::string utf8(const QString& s) { return s.toStdString(); }
QString qstring(const std::string& s) { return QString::fromStdString(s); }
std::string bytesOf(const QByteArray& b) { return std::string(b.constData(), size_t(b.size())); }
QByteArray qbytes(const std::string& s) { return QByteArray(s.data(), qsizetype(s.size())); }

WorkspaceFile fileOf(const Workspace& w) {
  WorkspaceFile f;
  f.model = utf8(w.model);
  f.source = utf8(w.source);
  f.target = utf8(w.target);
  f.stack = utf8(w.selection.stack);
  f.kind = utf8(w.selection.kind);
  f.layer = w.selection.layer;
  f.head = w.selection.head;
  f.segment = w.selection.segment;
  f.query = w.query;
  f.colormap = utf8(w.colormap);
  f.scale = utf8(w.scale);
  f.normalization = utf8(w.normalization);
  f.value_weighted = w.valueWeighted;
  f.shared_grid_scale = w.sharedGridScale;
  for (const QString& p : w.openPanels) f.open_panels.push_back(utf8(p));
  f.window_state = bytesOf(w.windowState);
  f.geometry = bytesOf(w.geometry);
  for (auto it = w.tools.begin(); it != w.tools.end(); ++it)
    if (it.value().isObject()) f.tools[utf8(it.key())] = bytesOf(QJsonDocument(it.value().toObject()).toJson(QJsonDocument::Compact));
  return f;
}

// The integers are within the file's ranges (at most 2^24), so they fit an int.
Workspace workspaceOf(const WorkspaceFile& f) {
  static_assert(kWorkspaceMaxQuery <= INT32_MAX && kWorkspaceMaxIndex <= INT32_MAX);
  Workspace w;
  w.model = qstring(f.model);
  w.source = qstring(f.source);
  w.target = qstring(f.target);
  w.selection.stack = qstring(f.stack);
  w.selection.kind = qstring(f.kind);
  w.selection.layer = int(f.layer);
  w.selection.head = int(f.head);
  w.selection.segment = int(f.segment);
  w.query = int(f.query);
  w.colormap = qstring(f.colormap);
  w.scale = qstring(f.scale);
  w.normalization = qstring(f.normalization);
  w.valueWeighted = f.value_weighted;
  w.sharedGridScale = f.shared_grid_scale;
  for (const std::string& p : f.open_panels) w.openPanels << qstring(p);
  w.windowState = qbytes(f.window_state);
  w.geometry = qbytes(f.geometry);
  for (const auto& [name, state] : f.tools) w.tools[qstring(name)] = QJsonDocument::fromJson(qbytes(state)).object();
  return w;
}

}  // namespace

QByteArray workspaceToJson(const Workspace& w) { return qbytes(encode_workspace(fileOf(w))); }

Workspace workspaceFromJson(const QByteArray& json, const QString& origin) {
  return workspaceOf(parse_workspace(std::string_view(json.constData(), size_t(json.size())), utf8(origin)));
}

void saveWorkspaceFile(const Workspace& w, const QString& path) {
  const QByteArray json = workspaceToJson(w);
  writeFileAtomically(path, [&](AtomicFileDevice& out) {
    if (out.write(json) != json.size()) throw AtlasError("could not write " + path.toStdString());
  });
}

Workspace loadWorkspaceFile(const QString& path) { return workspaceOf(read_workspace_file(utf8(path))); }

}  // namespace atlas::ui
