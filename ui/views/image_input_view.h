#pragma once
// The "Input image" dock of image mode (ui/main_window/image_mode.cpp): the image as the model sees it
// (resampled, grey or RGB), scaled up with nearest-neighbour pixels, the token grid, and the
// selected token's cell outlined, so a query row of the heatmap can be found on the picture.
// Click a cell to select its token; the context menu exports the figure as SVG/PDF/PNG or its
// values as .npy / .csv.
//   Pixel models (core/input/image_input.h): one cell per pixel; the values are the tokens',
//   [rows, cols(, 3)].
//   Patch models (ViT, core/input/patch_input.h): one cell per patch, with a heatmap overlay of the
//   selected query's attention (default [CLS]) in the window's layer and head, or of the
//   attention rollout up to that layer (image_patch_overlay.h), a legend, and a bar above
//   with the mode, a "[CLS]" button (the [CLS] token has no cell) and the [CLS] column's
//   value; the values are the overlay's, [grid, grid].
#include <QImage>
#include <QWidget>
#include <functional>
#include <memory>

#include "ui/export/figure_export.h"
#include "core/input/image_input.h"
#include "ui/views/image_patch_overlay.h"
#include "core/input/patch_input.h"

class QComboBox;
class QLabel;
class QPushButton;

namespace atlas::ui {

// What the patch overlay reads from the window: the run on screen and its layer/head selector.
struct PatchAttention {
  std::shared_ptr<const Trace> trace;
  int layer = 0;
  int head = 0;  // head index or HeadAggregate
};

class ImageInputView : public QWidget {
  Q_OBJECT
 public:
  explicit ImageInputView(QWidget* parent = nullptr);

  void setInput(const ImageInput& input);        // pixel model: the resampled image
  void setPatchInput(const PatchInput& input);   // patch model: the resized image and grid
  bool patchMode() const { return m_grid > 0; }
  // Asked whenever the overlay is recomputed (new input, query, mode, refreshOverlay()).
  void setAttentionSource(std::function<PatchAttention()> source) { m_source = std::move(source); }
  void refreshOverlay();
  void setOverlayMode(PatchOverlayMode mode);
  PatchOverlayMode overlayMode() const { return m_mode; }
  // Empty until the run of this image is on screen (or when it failed; see overlayStatus()).
  const PatchOverlay& overlay() const { return m_overlay; }
  QString overlayStatus() const;  // what the label above the image says

  void setSelectedToken(int token);  // -1 = none (the overlay then shows token 0)
  int selectedPixel() const;         // raster index of the outlined cell (pixel or patch), or -1
  // The token of the cell at widget position `pos` (a pixel's first token), or -1 outside.
  int tokenAt(QPointF pos) const;
  const QImage& image() const { return m_image; }  // what is drawn, one pixel per image pixel
  QSize sizeHint() const override { return {320, 280}; }
  FigureContent figure() const;  // throws AtlasError without an image
  void exportTo(const QString& path, int dpi = 150) const;

 signals:
  void tokenPicked(int token);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void contextMenuEvent(QContextMenuEvent*) override;

 private:
  int cellsAcross() const { return patchMode() ? m_grid : m_image.width(); }
  int cellsDown() const { return patchMode() ? m_grid : m_image.height(); }
  QRectF imageRect() const;  // where the scaled image sits in the widget
  QRectF legendRect() const;  // the overlay's colour bar, right of the image

  QImage m_image;
  int m_channels = 1;
  int m_selected = -1;  // token
  // Patch models only (m_grid = 0 otherwise).
  int m_grid = 0;
  bool m_cls = false;
  std::vector<std::string> m_tokenLabels;  // to recognise the run of this image
  std::function<PatchAttention()> m_source;
  PatchOverlayMode m_mode = PatchOverlayMode::QueryAttention;
  PatchOverlay m_overlay;
  QString m_overlayError;
  QWidget* m_bar = nullptr;  // the patch controls above the image
  QComboBox* m_modeCombo = nullptr;
  QPushButton* m_clsButton = nullptr;
  QLabel* m_clsLabel = nullptr;
};

}  // namespace atlas::ui
