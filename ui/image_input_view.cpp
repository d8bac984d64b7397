// The input image of image mode (image_input_view.h).
#include "image_input_view.h"

#include <QContextMenuEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QTextStream>
#include <algorithm>

#include "error.h"
#include "export_dialog.h"
#include "heatmap_painter.h"

namespace atlas::ui {

ImageInputView::ImageInputView(QWidget* parent) : QWidget(parent) { setMinimumSize(120, 90); }

void ImageInputView::setInput(const ImageInput& in) {
  const RgbImage& r = in.resampled;
  m_image = QImage(int(r.width), int(r.height), QImage::Format_RGB888);
  for (int64_t y = 0; y < r.height; ++y)
    for (int64_t x = 0; x < r.width; ++x) {
      const uint8_t* p = &r.rgb[size_t((y * r.width + x) * 3)];
      // A grey model sees the luma: draw exactly the token values.
      const int grey = in.channels == 1 ? in.tokens[size_t(y * r.width + x)].id : -1;
      m_image.setPixel(int(x), int(y), grey >= 0 ? qRgb(grey, grey, grey) : qRgb(p[0], p[1], p[2]));
    }
  m_channels = int(in.channels);
  m_selected = -1;
  update();
}

void ImageInputView::setSelectedToken(int token) {
  m_selected = token;
  update();
}

int ImageInputView::selectedPixel() const {
  if (m_selected < 0 || m_image.isNull()) return -1;
  const int pixel = m_selected / m_channels;
  return pixel < m_image.width() * m_image.height() ? pixel : -1;
}

QRectF ImageInputView::imageRect() const {
  if (m_image.isNull()) return {};
  const double s = std::min(double(width()) / m_image.width(), double(height()) / m_image.height());
  const QSizeF size(m_image.width() * s, m_image.height() * s);
  return QRectF(QPointF((width() - size.width()) / 2, (height() - size.height()) / 2), size);
}

int ImageInputView::tokenAt(QPointF pos) const {
  const QRectF r = imageRect();
  if (r.isEmpty() || !r.contains(pos)) return -1;
  const int x = std::min(m_image.width() - 1, int((pos.x() - r.left()) / r.width() * m_image.width()));
  const int y = std::min(m_image.height() - 1, int((pos.y() - r.top()) / r.height() * m_image.height()));
  return (y * m_image.width() + x) * m_channels;
}

void ImageInputView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  if (m_image.isNull()) return;
  const QRectF r = imageRect();
  p.drawImage(r, m_image);  // no smoothing: one block per pixel
  const double cell = r.width() / m_image.width();
  if (cell >= 6) {  // the token grid, when pixels are big enough to show it
    p.setPen(QPen(QColor(0, 0, 0, 60), 0));
    for (int x = 1; x < m_image.width(); ++x) p.drawLine(QPointF(r.left() + x * cell, r.top()), QPointF(r.left() + x * cell, r.bottom()));
    for (int y = 1; y < m_image.height(); ++y) p.drawLine(QPointF(r.left(), r.top() + y * cell), QPointF(r.right(), r.top() + y * cell));
  }
  const int pixel = selectedPixel();
  if (pixel >= 0) {
    const int x = pixel % m_image.width(), y = pixel / m_image.width();
    p.setPen(QPen(QColor(255, 40, 40), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRectF(r.left() + x * cell, r.top() + y * cell, cell, cell).adjusted(-1, -1, 1, 1));
  }
}

void ImageInputView::mousePressEvent(QMouseEvent* e) {
  const int token = tokenAt(e->position());
  if (token >= 0) emit tokenPicked(token);
}

FigureContent ImageInputView::figure() const {
  if (m_image.isNull()) throw AtlasError("no input image to export");
  const int w = m_image.width(), h = m_image.height(), ch = m_channels;
  FigureContent fig;
  fig.title = QString("Input image: %1 x %2 pixels, %3 tokens").arg(h).arg(w).arg(w * h * ch);
  fig.sizeInches = QSizeF(5.0, 5.0 * h / w + 0.4);
  const QImage image = m_image;
  fig.paint = [image, title = fig.title](QPainter& p, const QRectF& bounds, bool) {
    const QFont font = figureFont(p.device(), 9.0);
    p.setFont(font);
    const qreal titleH = QFontMetricsF(font).height() * 1.5;
    p.drawText(QRectF(bounds.left(), bounds.top(), bounds.width(), titleH), Qt::AlignCenter, title);
    const QRectF area(bounds.left(), bounds.top() + titleH, bounds.width(), bounds.height() - titleH);
    const qreal s = std::min(area.width() / image.width(), area.height() / image.height());
    const QSizeF size(image.width() * s, image.height() * s);
    p.drawImage(QRectF(QPointF(area.center().x() - size.width() / 2, area.top()), size), image);
  };
  // The token values: grey [rows, cols], or [rows, cols, 3] for R, G, B.
  fig.data = ch == 1 ? Tensor({h, w}) : Tensor({h, w, 3});
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const QRgb px = image.pixel(x, y);
      if (ch == 1) {
        fig.data.data[size_t(y * w + x)] = float(qRed(px));
      } else {
        const int v[3] = {qRed(px), qGreen(px), qBlue(px)};
        for (int c = 0; c < 3; ++c) fig.data.data[size_t((y * w + x) * 3 + c)] = float(v[c]);
      }
    }
  auto data = std::make_shared<Tensor>(fig.data);
  fig.csv = [data, w, h, ch](QTextStream& out) {
    out << "y,x,channel,value\n";
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < ch; ++c)
          out << y << ',' << x << ',' << (ch == 1 ? "grey" : c == 0 ? "R" : c == 1 ? "G" : "B") << ','
              << data->data[size_t((y * w + x) * ch + c)] << '\n';
  };
  return fig;
}

void ImageInputView::exportTo(const QString& path, int dpi) const { writeFigure(figure(), dpi, path); }

void ImageInputView::contextMenuEvent(QContextMenuEvent* e) {
  if (m_image.isNull()) return;
  QMenu menu(this);
  menu.addAction("Export\u2026", this, [this] {
    runExportDialog(this, "Export the input image", "input-image.svg",
                    [this](const QString& path, int dpi) { exportTo(path, dpi); });
  });
  menu.exec(e->globalPos());
}

}  // namespace atlas::ui
