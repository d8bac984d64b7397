#pragma once
// The Export… dialog the panels share: asks for a file (SVG, PDF, PNG, .npy or .csv, starting
// in the last export folder), writes it through `write(path, dpi)` with the remembered PNG
// resolution, remembers the folder, and shows the core's message when writing fails.
#include <QSizeF>
#include <QString>
#include <functional>

class QInputDialog;
class QWidget;

namespace atlas::ui {

void runExportDialog(QWidget* parent, const QString& title, const QString& defaultName,
                     const std::function<void(const QString& path, int dpi)>& write);

// What a PNG resolution produces, for the prompt that asks for it: "The figure is 8.0 x 6.0
// inches: at 300 dots per inch the PNG is 2400 x 1800 pixels." (pixels rounded as
// figureImage rounds them).
QString pngSizeNote(const QSizeF& inches, int dpi);
// The PNG resolution prompt (36-1200 dpi, starting at `dpi`), its text following the value.
QInputDialog* makeDpiDialog(QWidget* parent, const QSizeF& inches, int dpi);

}  // namespace atlas::ui
