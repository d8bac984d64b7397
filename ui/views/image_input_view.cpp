// The input image of image mode (image_input_view.h).
#include "ui/views/image_input_view.h"

#include <QComboBox>
#include <QContextMenuEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QSignalBlocker>
#include <QTextStream>
#include <algorithm>

#include "core/tensor/error.h"
#include "ui/export/export_dialog.h"
#include "ui/views/heatmap_painter.h"

namespace atlas::ui {

namespace {

constexpr int kMargin = 4;
constexpr qreal kOverlayAlpha = 0.55;  // the picture stays readable under the colours
constexpr qreal kLegendBarWidth = 12;

QImage toQImage(const RgbImage& r) {
  QImage image(int(r.width), int(r.height), QImage::Format_RGB888);
  for (int64_t y = 0; y < r.height; ++y)
    for (int64_t x = 0; x < r.width; ++x) {
      const uint8_t* p = &r.rgb[size_t((y * r.width + x) * 3)];
      image.setPixel(int(x), int(y), qRgb(p[0], p[1], p[2]));
    }
  return image;
}

}  // namespace

ImageInputView::ImageInputView(QWidget* parent) : QWidget(parent) {
  m_bar = new QWidget(this);
  auto* bar = new QHBoxLayout(m_bar);
  bar->setContentsMargins(0, 0, 0, 0);
  m_modeCombo = new QComboBox;
  m_modeCombo->setObjectName("overlayMode");
  m_modeCombo->addItems({"Attention of query", "Attention rollout"});  // PatchOverlayMode order
  m_modeCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_modeCombo->setToolTip("Overlay: the query's attention row in the selected layer and head, or the "
                          "attention rollout up to the selected layer");
  m_clsButton = new QPushButton("[CLS]");
  m_clsButton->setObjectName("selectCls");
  m_clsButton->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Fixed);
  m_clsButton->setToolTip("Select the [CLS] token as the query (it has no patch on the image)");
  m_clsLabel = new QLabel;
  m_clsLabel->setObjectName("clsValue");
  bar->addWidget(m_modeCombo);
  bar->addWidget(m_clsButton);
  bar->addWidget(m_clsLabel, 1);
  m_bar->hide();
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(kMargin, kMargin, kMargin, kMargin);
  v->addWidget(m_bar);
  v->addStretch(1);
  connect(m_modeCombo, &QComboBox::currentIndexChanged, this,
          [this](int i) { setOverlayMode(static_cast<PatchOverlayMode>(i)); });
  connect(m_clsButton, &QPushButton::clicked, this, [this] { emit tokenPicked(0); });
  // Room under the overlay controls for an image whose legend can say what it shows: the
  // legend's bar is the image's height, and its rotated title (eight lines of text) would be
  // cut to "attenti…" in the 90 pixels a crowded dock area left the view.
  setMinimumSize(120, m_bar->sizeHint().height() + 3 * kMargin + 8 * fontMetrics().height());
}

void ImageInputView::setInput(const ImageInput& in) {
  m_image = toQImage(in.resampled);
  if (in.channels == 1)  // a grey model sees the luma: draw exactly the token values
    for (int64_t i = 0; i < in.rows * in.cols; ++i) {
      const int grey = in.tokens[size_t(i)].id;
      m_image.setPixel(int(i % in.cols), int(i / in.cols), qRgb(grey, grey, grey));
    }
  m_channels = int(in.channels);
  m_grid = 0;
  m_tokenLabels.clear();
  m_overlay = {};
  m_bar->hide();
  setToolTip(QString());
  m_selected = -1;
  update();
}

void ImageInputView::setPatchInput(const PatchInput& in) {
  m_image = toQImage(in.resized);
  m_channels = 3;  // the image fallback of figure() exports R, G, B
  m_grid = int(in.grid);
  m_cls = int64_t(in.tokens.size()) == in.grid * in.grid + 1;
  m_tokenLabels.clear();
  for (const TokenInfo& t : in.tokens) m_tokenLabels.push_back(t.label);
  m_clsButton->setVisible(m_cls);
  m_bar->show();
  m_selected = -1;
  refreshOverlay();
}

void ImageInputView::setOverlayMode(PatchOverlayMode mode) {
  m_mode = mode;
  const QSignalBlocker block(m_modeCombo);
  m_modeCombo->setCurrentIndex(int(mode));
  refreshOverlay();
}

void ImageInputView::refreshOverlay() {
  if (!patchMode()) return;
  m_overlay = {};
  m_overlayError.clear();
  const PatchAttention a = m_source ? m_source() : PatchAttention{};
  // Until the image's own run is on screen the window still shows the previous input's trace.
  bool ours = a.trace && a.trace->source_tokens.size() == m_tokenLabels.size();
  for (size_t i = 0; ours && i < m_tokenLabels.size(); ++i) ours = a.trace->source_tokens[i].label == m_tokenLabels[i];
  if (!ours) {
    m_overlayError = "waiting for the run of this image";
  } else {
    const int query = m_selected >= 0 && m_selected < int(m_tokenLabels.size()) ? m_selected : 0;
    try {
      m_overlay = m_mode == PatchOverlayMode::Rollout
                      ? rolloutOverlay(*a.trace, a.layer, query, m_grid, m_cls)
                      : queryAttentionOverlay(*a.trace, a.layer, a.head, query, m_grid, m_cls);
    } catch (const std::exception& e) {
      m_overlayError = QString::fromStdString(e.what());
    }
  }
  m_clsLabel->setText(overlayStatus());
  setToolTip(m_overlay.title);
  update();
}

QString ImageInputView::overlayStatus() const {
  if (!m_overlayError.isEmpty()) return m_overlayError;
  if (m_overlay.empty() || !m_cls) return QString();
  return QString("[CLS] column: %1").arg(double(m_overlay.clsValue), 0, 'g', 3);
}

void ImageInputView::setSelectedToken(int token) {
  m_selected = token;
  if (patchMode()) refreshOverlay();  // the overlay is the selected query's row
  update();
}

int ImageInputView::selectedPixel() const {
  if (m_selected < 0 || m_image.isNull()) return -1;
  if (patchMode()) return tokenPatch(m_selected, m_grid, m_cls);
  const int pixel = m_selected / m_channels;
  return pixel < m_image.width() * m_image.height() ? pixel : -1;
}

QRectF ImageInputView::imageRect() const {
  if (m_image.isNull()) return {};
  QRectF area = rect();
  if (patchMode()) {  // below the controls, left of the legend
    const qreal legend = kLegendBarWidth + 2 * kMargin +
                         (m_overlay.empty() ? 50 : legendExtraWidth(const_cast<ImageInputView*>(this), m_overlay, font()));
    area.adjust(kMargin, 2 * kMargin + m_bar->sizeHint().height(), -legend, -kMargin);
  }
  const double s = std::min(area.width() / m_image.width(), area.height() / m_image.height());
  const QSizeF size(m_image.width() * s, m_image.height() * s);
  return QRectF(QPointF(area.center().x() - size.width() / 2, area.center().y() - size.height() / 2), size);
}

QRectF ImageInputView::legendRect() const {
  const QRectF r = imageRect();
  return QRectF(r.right() + 2 * kMargin, r.top(), kLegendBarWidth, r.height());
}

int ImageInputView::tokenAt(QPointF pos) const {
  const QRectF r = imageRect();
  if (r.isEmpty() || !r.contains(pos)) return -1;
  const int x = std::min(cellsAcross() - 1, int((pos.x() - r.left()) / r.width() * cellsAcross()));
  const int y = std::min(cellsDown() - 1, int((pos.y() - r.top()) / r.height() * cellsDown()));
  return patchMode() ? patchToken(y, x, m_grid, m_cls) : (y * m_image.width() + x) * m_channels;
}

void ImageInputView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  if (m_image.isNull()) return;
  const QRectF r = imageRect();
  p.drawImage(r, m_image);  // no smoothing: one block per pixel
  const double cell = r.width() / cellsAcross();
  if (patchMode()) {
    paintPatchOverlay(p, r, m_overlay, kOverlayAlpha);
    HeatmapStyle style = HeatmapStyle::light();
    style.foreground = palette().color(QPalette::WindowText);
    paintPatchLegend(p, legendRect(), m_overlay, style, font());
  }
  if (patchMode() || cell >= 6) {  // the token grid, when cells are big enough to show it
    p.setPen(QPen(QColor(0, 0, 0, patchMode() ? 110 : 60), 0));
    for (int x = 1; x < cellsAcross(); ++x) p.drawLine(QPointF(r.left() + x * cell, r.top()), QPointF(r.left() + x * cell, r.bottom()));
    for (int y = 1; y < cellsDown(); ++y) p.drawLine(QPointF(r.left(), r.top() + y * cell), QPointF(r.right(), r.top() + y * cell));
  }
  const int selected = selectedPixel();
  if (selected >= 0) {
    const int x = selected % cellsAcross(), y = selected / cellsAcross();
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
  if (patchMode() && !m_overlay.empty()) return patchOverlayFigure(m_image, m_overlay);
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
    runExportDialog(this, "Export the input image", patchMode() ? "patch-attention.svg" : "input-image.svg",
                    [this](const QString& path, int dpi) { exportTo(path, dpi); });
  });
  menu.exec(e->globalPos());
}

}  // namespace atlas::ui
