// Workspace files (workspace.h).
#include "ui/workspace.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "ui/export/atomic_file_device.h"

namespace atlas::ui {

namespace {

constexpr const char* kFormat = "attention-atlas-workspace";
constexpr int kVersion = 1;

[[noreturn]] void fail(const QString& origin, const QString& what) {
  throw AtlasError((origin + ": " + what).toStdString());
}

QString text(const QJsonObject& o, const char* key, const QString& fallback, const QString& origin) {
  if (!o.contains(key)) return fallback;
  if (!o[key].isString()) fail(origin, QString("\"%1\" must be a string").arg(key));
  return o[key].toString();
}

int integer(const QJsonObject& o, const char* key, int fallback, int lo, int hi, const QString& origin) {
  if (!o.contains(key)) return fallback;
  const QJsonValue v = o[key];
  if (!v.isDouble() || v.toDouble() != double(qint64(v.toDouble())) || v.toDouble() < lo || v.toDouble() > hi)
    fail(origin, QString("\"%1\" must be an integer from %2 to %3").arg(key).arg(lo).arg(hi));
  return v.toInt();
}

QString choice(const QJsonObject& o, const char* key, const QString& fallback, const QStringList& allowed,
               const QString& origin) {
  const QString v = text(o, key, fallback, origin);
  if (!allowed.contains(v)) fail(origin, QString("\"%1\" must be one of %2, not \"%3\"").arg(key, allowed.join(", "), v));
  return v;
}

}  // namespace

QByteArray workspaceToJson(const Workspace& w) {
  QJsonObject sel{{"stack", w.selection.stack}, {"kind", w.selection.kind}, {"layer", w.selection.layer},
                  {"head", w.selection.head}, {"segment", w.selection.segment}};
  QJsonObject o{{"format", kFormat},
                {"version", kVersion},
                {"model", w.model},
                {"source", w.source},
                {"target", w.target},
                {"selection", sel},
                {"query", w.query},
                {"colormap", w.colormap},
                {"scale", w.scale},
                {"normalization", w.normalization},
                {"value_weighted", w.valueWeighted},
                {"shared_grid_scale", w.sharedGridScale},
                {"open_panels", QJsonArray::fromStringList(w.openPanels)},
                {"window_state", QString::fromLatin1(w.windowState.toBase64())},
                {"geometry", QString::fromLatin1(w.geometry.toBase64())}};
  return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

Workspace workspaceFromJson(const QByteArray& json, const QString& origin) {
  QJsonParseError err;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
  if (err.error != QJsonParseError::NoError)
    fail(origin, QString("not a workspace (JSON error at byte %1: %2)").arg(err.offset).arg(err.errorString()));
  if (!doc.isObject()) fail(origin, "not a workspace (the JSON is not an object)");
  const QJsonObject o = doc.object();
  if (o["format"].toString() != kFormat) fail(origin, QString("not a workspace (\"format\" is not \"%1\")").arg(kFormat));
  const int version = integer(o, "version", 0, 0, 1 << 20, origin);
  if (version != kVersion)
    fail(origin, QString("workspace version %1; this Attention Atlas reads version %2").arg(version).arg(kVersion));
  static const QStringList known = {"format", "version", "model", "source", "target", "selection", "query",
                                    "colormap", "scale", "normalization", "value_weighted", "shared_grid_scale", "open_panels",
                                    "window_state", "geometry"};
  for (const QString& key : o.keys())
    if (!known.contains(key)) fail(origin, QString("unknown key \"%1\"").arg(key));
  Workspace w;
  w.model = text(o, "model", "", origin);
  if (w.model.trimmed().isEmpty()) fail(origin, "\"model\" is missing or empty");
  w.source = text(o, "source", "", origin);
  w.target = text(o, "target", "", origin);
  if (o.contains("selection")) {
    if (!o["selection"].isObject()) fail(origin, "\"selection\" must be an object");
    const QJsonObject s = o["selection"].toObject();
    for (const QString& key : s.keys())
      if (!QStringList{"stack", "kind", "layer", "head", "segment"}.contains(key))
        fail(origin, QString("unknown key \"selection.%1\"").arg(key));
    w.selection.stack = text(s, "stack", w.selection.stack, origin);
    w.selection.kind = text(s, "kind", w.selection.kind, origin);
    w.selection.layer = integer(s, "layer", 0, 0, 1 << 20, origin);
    w.selection.head = integer(s, "head", 0, HeadFlow, 1 << 20, origin);
    w.selection.segment = integer(s, "segment", 0, 0, 1 << 20, origin);
  }
  w.query = integer(o, "query", -1, -1, 1 << 24, origin);
  w.colormap = choice(o, "colormap", "viridis", {"viridis", "magma", "diverging"}, origin);
  w.scale = choice(o, "scale", "linear", {"linear", "log"}, origin);
  w.normalization = choice(o, "normalization", "global", {"global", "row"}, origin);
  if (o.contains("value_weighted")) {
    if (!o["value_weighted"].isBool()) fail(origin, "\"value_weighted\" must be true or false");
    w.valueWeighted = o["value_weighted"].toBool();
  }
  if (o.contains("shared_grid_scale")) {
    if (!o["shared_grid_scale"].isBool()) fail(origin, "\"shared_grid_scale\" must be true or false");
    w.sharedGridScale = o["shared_grid_scale"].toBool();
  }
  if (o.contains("open_panels")) {
    if (!o["open_panels"].isArray()) fail(origin, "\"open_panels\" must be a list of dock names");
    for (const QJsonValue& v : o["open_panels"].toArray()) {
      if (!v.isString()) fail(origin, "\"open_panels\" must be a list of dock names");
      w.openPanels << v.toString();
    }
  }
  w.windowState = QByteArray::fromBase64(text(o, "window_state", "", origin).toLatin1());
  w.geometry = QByteArray::fromBase64(text(o, "geometry", "", origin).toLatin1());
  return w;
}

void saveWorkspaceFile(const Workspace& w, const QString& path) {
  const QByteArray json = workspaceToJson(w);
  writeFileAtomically(path, [&](AtomicFileDevice& out) {
    if (out.write(json) != json.size()) throw AtlasError("could not write " + path.toStdString());
  });
}

Workspace loadWorkspaceFile(const QString& path) {
  // Through the input-file policy: a FIFO, device or folder is refused before it is opened (a
  // QFile would wait forever for a FIFO's writer), and the size is capped (a workspace is a
  // few KB).
  const std::string bytes = read_input_file(path.toStdString(), InputKind::Workspace);
  return workspaceFromJson(QByteArray::fromStdString(bytes), path);
}

}  // namespace atlas::ui
