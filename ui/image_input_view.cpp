// The input image of image mode (image_input_view.h).
#include "image_input_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

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

}  // namespace atlas::ui
