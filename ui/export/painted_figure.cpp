#include "ui/export/painted_figure.h"

#include <QImage>
#include <QPageSize>
#include <QPdfWriter>

#include "core/tensor/error.h"
#include "ui/export/atomic_file_device.h"
#include "ui/export/svg_writer.h"

namespace atlas::ui {

void writePaintedFigure(const QString& path, const QString& ext, const QRectF& page,
                        const QString& title, const std::function<void(QPainter&)>& paint) {
  const std::string where = path.toStdString();
  if (ext == "png") {
    const double dpi = 150;
    QImage img(int(page.width() / 72 * dpi), int(page.height() / 72 * dpi), QImage::Format_ARGB32);
    if (img.isNull()) throw AtlasError(where + ": not enough memory for the PNG image");
    // Paint at 72 dpi so a point is one figure unit (fonts are in points), then scale up.
    img.setDotsPerMeterX(int(72 / 0.0254));
    img.setDotsPerMeterY(int(72 / 0.0254));
    img.fill(Qt::white);
    {
      QPainter p(&img);
      p.setRenderHint(QPainter::Antialiasing);
      p.scale(dpi / 72, dpi / 72);
      paint(p);
    }
    img.setDotsPerMeterX(int(dpi / 0.0254));
    img.setDotsPerMeterY(int(dpi / 0.0254));
    writeFileAtomically(path, [&](AtomicFileDevice& out) {
      if (!img.save(&out, "PNG") && !out.failed())
        throw AtlasError(where + ": cannot encode the PNG file");
    });
  } else if (ext == "svg") {
    const QByteArray svg = renderSvg(page, title, QString(), paint, where);
    writeFileAtomically(path, [&](AtomicFileDevice& out) { out.write(svg); });
  } else if (ext == "pdf") {
    writeFileAtomically(path, [&](AtomicFileDevice& out) {
      QPdfWriter pdf(&out);
      pdf.setResolution(72);
      pdf.setPageSize(QPageSize(page.size(), QPageSize::Point, QString(), QPageSize::ExactMatch));
      pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
      pdf.setTitle(title);
      QPainter p;
      if (!p.begin(&pdf)) throw AtlasError(where + ": cannot start the PDF file");
      paint(p);
      p.end();
    });
  } else {
    throw AtlasError(where + ": unknown export format \"" + ext.toStdString() +
                     "\" (use .png, .svg, .pdf or .npy)");
  }
}

}  // namespace atlas::ui
