#pragma once
// A paint device that records the text drawn on it instead of pixels: every text item's string
// and its rectangle in device coordinates (the item's advance width by its font's ascent +
// descent), and the part of that rectangle left visible by the clip. Render any widget into it
// with QWidget::render (labels, combo boxes, table headers, our painters, a QGraphicsView's
// scene) to test what a user can read: elided text, text drawn over other text.
#include <QPaintDevice>
#include <QRectF>
#include <QSize>
#include <QString>
#include <memory>
#include <vector>

namespace atlas::uitest {

struct DrawnText {
  QString text;
  QRectF rect;     // device coordinates
  QRectF visible;  // rect within the clip (empty: clipped away entirely)
};

class TextRecorder : public QPaintDevice {
 public:
  // `size` in device-independent pixels; `dpr` the device pixel ratio the painters see (the
  // recorded rects stay in device-independent pixels).
  explicit TextRecorder(QSize size, qreal dpr = 1.0);
  ~TextRecorder() override;
  QPaintEngine* paintEngine() const override;
  const std::vector<DrawnText>& texts() const;
  void clear();

 protected:
  int metric(PaintDeviceMetric m) const override;

 private:
  class Engine;
  QSize m_size;
  qreal m_dpr;
  std::unique_ptr<Engine> m_engine;
};

// Text a user cannot read in full: elided (ends in or contains "…" or "...").
bool looksElided(const QString& text);

// Two visible items overlap when their visible rects share more than `tolerance` device pixels
// both ways (a font's ascent and descent leave a pixel of slack between stacked lines).
bool textsOverlap(const DrawnText& a, const DrawnText& b, qreal tolerance = 1.5);

}  // namespace atlas::uitest
