#pragma once
// The "Input image" dock of image mode (main_window_image.cpp): the image as the pixel model
// sees it (resampled, grey or RGB), scaled up with nearest-neighbour pixels, a grid between
// pixels when they are large enough, and the selected token's pixel outlined, so a query row
// of the heatmap can be found on the picture. Click a pixel to select its token; the context
// menu exports the image as SVG/PDF/PNG or its token values as .npy [rows, cols(, 3)] / .csv.
#include <QImage>
#include <QWidget>

#include "figure_export.h"
#include "image_input.h"

namespace atlas::ui {

class ImageInputView : public QWidget {
  Q_OBJECT
 public:
  explicit ImageInputView(QWidget* parent = nullptr);

  void setInput(const ImageInput& input);  // keeps the resampled image and the layout
  void setSelectedToken(int token);        // -1 = none
  int selectedPixel() const;               // raster index of the outlined pixel, or -1
  // The first token of the pixel at widget position `pos`, or -1 outside the image.
  int tokenAt(QPointF pos) const;
  const QImage& image() const { return m_image; }  // what is drawn, one pixel per image pixel
  QSize sizeHint() const override { return {320, 260}; }
  FigureContent figure() const;  // throws AtlasError without an image
  void exportTo(const QString& path, int dpi = 150) const;

 signals:
  void tokenPicked(int token);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void contextMenuEvent(QContextMenuEvent*) override;

 private:
  QRectF imageRect() const;  // where the scaled image sits in the widget

  QImage m_image;
  int m_channels = 1;
  int m_selected = -1;  // token
};

}  // namespace atlas::ui
