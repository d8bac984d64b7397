// The panels' Export… dialog (export_dialog.h).
#include "ui/export/export_dialog.h"
#include "ui/dialog_folders.h"

#include <QFileDialog>
#include <QInputDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <cmath>
#include <exception>

namespace atlas::ui {

void runExportDialog(QWidget* parent, const QString& title, const QString& defaultName,
                     const std::function<void(const QString& path, int dpi)>& write) {
  QSettings settings;
  const QString path = QFileDialog::getSaveFileName(
      parent, title, dialogStart(DialogPurpose::Export, defaultName),
      "SVG (*.svg);;PDF (*.pdf);;PNG (*.png);;NumPy array (*.npy);;CSV (*.csv)");
  if (path.isEmpty()) return;
  try {
    write(path, settings.value("exportDpi", 300).toInt());
    rememberDialogChoice(DialogPurpose::Export, path);
  } catch (const std::exception& e) {
    QMessageBox::critical(parent, "Export failed", QString::fromStdString(e.what()));
  }
}

QString pngSizeNote(const QSizeF& inches, int dpi) {
  const long w = std::lround(inches.width() * dpi), h = std::lround(inches.height() * dpi);
  return QString("The figure is %1 \u00d7 %2 inches: at %3 dots per inch the PNG is %4 \u00d7 %5 pixels.")
      .arg(inches.width(), 0, 'f', 1)
      .arg(inches.height(), 0, 'f', 1)
      .arg(dpi)
      .arg(w)
      .arg(h);
}

QInputDialog* makeDpiDialog(QWidget* parent, const QSizeF& inches, int dpi) {
  auto* dialog = new QInputDialog(parent);
  dialog->setWindowTitle("PNG resolution");
  dialog->setInputMode(QInputDialog::IntInput);
  dialog->setIntRange(36, 1200);
  dialog->setIntValue(dpi);
  const auto label = [inches](int value) {
    return pngSizeNote(inches, value) + "\nDots per inch (the SVG and PDF exports are resolution-free):";
  };
  dialog->setLabelText(label(dpi));
  QObject::connect(dialog, &QInputDialog::intValueChanged, dialog,
                   [dialog, label](int value) { dialog->setLabelText(label(value)); });
  return dialog;
}

}  // namespace atlas::ui
