#pragma once
// "Self-Attention GAN explorer": runs the SAGAN block (core/variants/sagan/sagan.h, preset sagan-small's
// config and seeded weights) on an image (QImage decodes it here; core never sees Qt) and,
// for the query location clicked on the image, draws the attention over all locations as a
// heat overlay on the input image, as in the paper's Fig. 1. Exportable as PNG/SVG/PDF and
// the attention row as .npy [Hk, Wk].
#include <QImage>
#include <QString>
#include <QWidget>

#include "core/model/model.h"

class QCheckBox;
class QPainter;
class QLabel;
class QSlider;

namespace atlas::ui {

struct SaganOverlaySpec {
  int row = 0, col = 0;  // query location on the image_size grid
  double opacity = 0.65;
};

// Left: the image with the query marked; right: the image with the attention of the query
// (normalised by its maximum) overlaid. Reads sagan.image and sagan.attention of `trace`.
void paintSaganOverlay(QPainter& p, const QRectF& rect, const Trace& trace, SaganOverlaySpec spec);
// .png .svg .pdf, or .npy = the query's attention over key locations [Hk, Wk].
void exportSaganOverlay(const Trace& trace, SaganOverlaySpec spec, const QString& path);

class SaganOverlay : public QWidget {
  Q_OBJECT
 public:
  explicit SaganOverlay(QWidget* parent = nullptr);

  void setImage(const QImage& image);  // a null image = the built-in test card
  void setPoolKeys(bool pool);
  void setQuery(int row, int col);
  void setOpacity(double opacity) {
    m_spec.opacity = opacity;
    update();
  }
  SaganOverlaySpec spec() const { return m_spec; }
  const Trace& trace() const { return m_result.trace; }
  int gridSize() const;
  void exportTo(const QString& path) const { exportSaganOverlay(m_result.trace, m_spec, path); }
  // Image widget coordinates -> query location (used by clicks; public for tests).
  bool queryAt(const QPointF& pos, int* row, int* col) const;

 signals:
  void queryChanged(int row, int col);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* e) override;

 private:
  void rerun();
  QRectF figureRect() const;

  QImage m_image;
  bool m_pool = true;
  SaganOverlaySpec m_spec;
  RunResult m_result;
};

// The window around SaganOverlay: open image / test card, pooling, opacity, export.
QWidget* makeSaganExplorer(QWidget* parent);

}  // namespace atlas::ui
