#include "ui/dialog_folders.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace atlas::ui {

namespace {

// The first three keys are those earlier versions wrote, so an upgrade keeps the folders.
QString settingsKey(DialogPurpose purpose) {
  switch (purpose) {
    case DialogPurpose::Model: return "lastModelDir";
    case DialogPurpose::Workspace: return "workspaceDir";
    case DialogPurpose::Export: return "exportDir";
    case DialogPurpose::Image: return "imageDir";
    case DialogPurpose::Corpus: return "corpusDir";
    case DialogPurpose::Checkpoint: return "checkpointDir";
  }
  return "exportDir";
}

}  // namespace

QString dialogFolder(DialogPurpose purpose) {
  const QString kept = QSettings().value(settingsKey(purpose)).toString();
  if (!kept.isEmpty() && QFileInfo(kept).isAbsolute() && QFileInfo(kept).isDir()) return kept;
  return QDir::homePath();
}

QString dialogStart(DialogPurpose purpose, const QString& fileName) {
  return QDir(dialogFolder(purpose)).filePath(fileName);
}

void rememberDialogChoice(DialogPurpose purpose, const QString& path) {
  if (path.isEmpty()) return;
  const QFileInfo chosen(path);
  QSettings().setValue(settingsKey(purpose), chosen.isDir() ? chosen.absoluteFilePath() : chosen.absolutePath());
}

}  // namespace atlas::ui
