#include "tests/ui/text_recorder.h"

#include <QGuiApplication>
#include <QPaintEngine>
#include <QPainter>
#include <QScreen>
#include <QTextItem>

namespace atlas::uitest {

// Records drawTextItem; everything else draws nothing. It claims every feature so that QPainter
// hands it the text as drawn (no emulation through paths or images).
class TextRecorder::Engine : public QPaintEngine {
 public:
  Engine() : QPaintEngine(QPaintEngine::AllFeatures) {}
  bool begin(QPaintDevice*) override { return true; }
  bool end() override { return true; }
  void updateState(const QPaintEngineState&) override {}
  void drawPixmap(const QRectF&, const QPixmap&, const QRectF&) override {}
  void drawPolygon(const QPointF*, int, PolygonDrawMode) override {}
  void drawPath(const QPainterPath&) override {}
  void drawRects(const QRectF*, int) override {}
  void drawLines(const QLineF*, int) override {}
  void drawEllipse(const QRectF&) override {}
  void drawImage(const QRectF&, const QImage&, const QRectF&, Qt::ImageConversionFlags) override {}
  void drawTiledPixmap(const QRectF&, const QPixmap&, const QPointF&) override {}
  Type type() const override { return QPaintEngine::User; }

  void drawTextItem(const QPointF& p, const QTextItem& item) override {
    QPainter* painter = this->painter();
    // The painter's device transform holds the world matrix, the redirection of a widget
    // rendered into this device and the high-dpi scale.
    const QTransform toDevice = painter->deviceTransform();
    const QRectF logical(p.x(), p.y() - item.ascent(), item.width(), item.ascent() + item.descent());
    DrawnText t;
    t.text = item.text();
    t.rect = toDevice.mapRect(logical);
    QRectF visible = t.rect;
    if (painter->hasClipping()) visible &= toDevice.mapRect(painter->clipBoundingRect());
    if (!systemClip().isEmpty()) visible &= QRectF(systemClip().boundingRect());
    t.visible = visible.isValid() ? visible : QRectF();
    if (dpr != 1.0) {  // back to device-independent pixels
      const QTransform down = QTransform::fromScale(1 / dpr, 1 / dpr);
      t.rect = down.mapRect(t.rect);
      t.visible = down.mapRect(t.visible);
    }
    if (!t.text.trimmed().isEmpty()) texts.push_back(t);
  }

  std::vector<DrawnText> texts;
  qreal dpr = 1.0;
};

TextRecorder::TextRecorder(QSize size, qreal dpr) : m_size(size), m_dpr(dpr), m_engine(std::make_unique<Engine>()) {
  m_engine->dpr = dpr;
}

TextRecorder::~TextRecorder() = default;

QPaintEngine* TextRecorder::paintEngine() const { return m_engine.get(); }

const std::vector<DrawnText>& TextRecorder::texts() const { return m_engine->texts; }

void TextRecorder::clear() { m_engine->texts.clear(); }

int TextRecorder::metric(PaintDeviceMetric m) const {
  // The screen's logical dpi, so that fonts resolve to the sizes the widgets laid out with.
  const QScreen* screen = QGuiApplication::primaryScreen();
  const int dpi = screen ? qRound(screen->logicalDotsPerInch()) : 96;
  switch (m) {
    case PdmWidth: return qRound(m_size.width() * m_dpr);
    case PdmHeight: return qRound(m_size.height() * m_dpr);
    case PdmWidthMM: return qRound(m_size.width() * m_dpr * 25.4 / dpi);
    case PdmHeightMM: return qRound(m_size.height() * m_dpr * 25.4 / dpi);
    case PdmNumColors: return 1 << 24;
    case PdmDepth: return 32;
    case PdmDpiX:
    case PdmDpiY:
    case PdmPhysicalDpiX:
    case PdmPhysicalDpiY: return dpi;
    case PdmDevicePixelRatio: return qRound(m_dpr);
    case PdmDevicePixelRatioScaled: return qRound(m_dpr * QPaintDevice::devicePixelRatioFScale());
    default: return QPaintDevice::metric(m);
  }
}

bool looksElided(const QString& text) { return text.contains(QChar(0x2026)) || text.contains("..."); }

bool textsOverlap(const DrawnText& a, const DrawnText& b, qreal tolerance) {
  if (a.visible.isEmpty() || b.visible.isEmpty()) return false;
  const QRectF both = a.visible & b.visible;
  return both.width() > tolerance && both.height() > tolerance;
}

}  // namespace atlas::uitest
