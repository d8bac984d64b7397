#pragma once
// The ViT overlay of the "Input image" dock (image_input_view.h): one value per image patch of
// a patch-embedding model (core/input/patch_input.h), read from the run's Trace. Token k of such a
// model is [CLS] (k = 0, when it has one) or the patch at raster index k - cls; the [CLS]
// column has no place on the grid, so it is kept apart (clsValue). The overlay is either
//   - the attention row of one query token in one layer and head (or head aggregate), or
//   - that row of the attention rollout up to a layer (core/analysis/attention_rollout.h): how much each
//     input token flows into the query through the stack.
#include <QString>
#include <memory>
#include <vector>

#include "ui/export/figure_export.h"
#include "ui/views/heatmap_data.h"
#include "core/model/trace.h"

class QFont;
class QImage;
class QPainter;
class QPaintDevice;
class QRectF;

namespace atlas::ui {

struct HeatmapStyle;

enum class PatchOverlayMode { QueryAttention, Rollout };

struct PatchOverlay {
  PatchOverlayMode mode = PatchOverlayMode::QueryAttention;
  int grid = 0;    // patches per side
  bool cls = false;
  int query = 0;   // the token whose row this is
  std::vector<float> values;  // [grid, grid], patch (r, c) at r * grid + c
  float clsValue = 0.0f;      // the row's [CLS] column (when cls)
  QString title;              // "attention of [CLS], layer 1, head 2"

  bool empty() const { return values.empty(); }
  float at(int row, int col) const { return values[size_t(row) * size_t(grid) + size_t(col)]; }
  // As a [grid, grid] matrix, for the colour scale (ValueMapper) and its legend.
  HeatmapData heatmap() const;
};

// The layout of a patch model's tokens: token of patch (row, col), and patch raster index of a
// token (-1 for [CLS] and for tokens outside the grid).
int patchToken(int row, int col, int grid, bool cls);
int tokenPatch(int token, int grid, bool cls);
QString tokenName(int token, int grid, bool cls);  // "[CLS]" or "patch 1,2"

// Both throw AtlasError when the trace lacks the layer's attention ("encoder.layer<i>.attn"),
// the head does not exist, the query is out of range or the trace's token count is not
// cls + grid * grid. `head` is a head index or a HeadAggregate (attention_selection.h).
PatchOverlay queryAttentionOverlay(const Trace& trace, int layer, int head, int query, int grid,
                                   bool cls);
PatchOverlay rolloutOverlay(const Trace& trace, int layer, int query, int grid, bool cls);

// Fills each patch of `imageRect` with its colour (viridis over [0, max], like the heatmap's
// global scale) at `alpha`, so the picture shows through. Shared by the dock and its figures.
void paintPatchOverlay(QPainter& p, const QRectF& imageRect, const PatchOverlay& overlay, qreal alpha);
// The legend: a vertical colour bar with ticks and the value's name, in `bar` (the ticks and
// title take legendExtraWidth to its right).
void paintPatchLegend(QPainter& p, const QRectF& bar, const PatchOverlay& overlay,
                      const HeatmapStyle& style, const QFont& font);
qreal legendExtraWidth(QPaintDevice* device, const PatchOverlay& overlay, const QFont& font);

// The dock's figure: `image` (the resized input) under the overlay, the patch grid, the legend
// and the [CLS] column's value; its data are the overlay values [grid, grid] (CSV: one line
// per patch with its token index).
FigureContent patchOverlayFigure(const QImage& image, const PatchOverlay& overlay);

}  // namespace atlas::ui
