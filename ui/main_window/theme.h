#pragma once
// Light and dark themes: the Fusion style with a matching palette, so every platform looks
// the same and the dark theme is complete (Qt's default palette has no dark variant on X11).
class QApplication;

namespace atlas::ui {
void applyTheme(bool dark);
}
