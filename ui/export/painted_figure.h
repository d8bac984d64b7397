#pragma once
// A figure painted by a function, written as PNG (150 dpi), SVG or PDF: the panels that draw
// their own figures (NTM addressing, SAGAN overlay) share this instead of each holding the
// three writers. Painting happens in points (1/72 in), so fonts keep their size in every
// format. Files are written whole or not at all (ui/export/atomic_file_device.h).
#include <QPainter>
#include <QRectF>
#include <QString>
#include <functional>

namespace atlas::ui {

// `ext` is "png", "svg" or "pdf"; anything else throws AtlasError naming `path`.
void writePaintedFigure(const QString& path, const QString& ext, const QRectF& page,
                        const QString& title, const std::function<void(QPainter&)>& paint);

}  // namespace atlas::ui
