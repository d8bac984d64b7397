// The panels' Export… dialog (export_dialog.h).
#include "ui/export/export_dialog.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <exception>

namespace atlas::ui {

void runExportDialog(QWidget* parent, const QString& title, const QString& defaultName,
                     const std::function<void(const QString& path, int dpi)>& write) {
  QSettings settings;
  const QString path = QFileDialog::getSaveFileName(
      parent, title, settings.value("exportDir").toString() + "/" + defaultName,
      "SVG (*.svg);;PDF (*.pdf);;PNG (*.png);;NumPy array (*.npy);;CSV (*.csv)");
  if (path.isEmpty()) return;
  try {
    write(path, settings.value("exportDpi", 300).toInt());
    settings.setValue("exportDir", QFileInfo(path).absolutePath());
  } catch (const std::exception& e) {
    QMessageBox::critical(parent, "Export failed", QString::fromStdString(e.what()));
  }
}

}  // namespace atlas::ui
