#pragma once
// The Export… dialog the panels share: asks for a file (SVG, PDF, PNG, .npy or .csv, starting
// in the last export folder), writes it through `write(path, dpi)` with the remembered PNG
// resolution, remembers the folder, and shows the core's message when writing fails.
#include <QString>
#include <functional>

class QWidget;

namespace atlas::ui {

void runExportDialog(QWidget* parent, const QString& title, const QString& defaultName,
                     const std::function<void(const QString& path, int dpi)>& write);

}  // namespace atlas::ui
