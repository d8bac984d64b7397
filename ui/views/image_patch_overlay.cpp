// The ViT patch overlay (image_patch_overlay.h).
#include "ui/views/image_patch_overlay.h"

#include <QFontMetricsF>
#include <QImage>
#include <QPainter>
#include <QTextStream>
#include <algorithm>

#include "core/analysis/attention_rollout.h"
#include "ui/views/colormap.h"
#include "core/tensor/error.h"
#include "ui/views/heatmap_painter.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

namespace {

void checkLayout(int64_t tokens, int query, int grid, bool cls) {
  const int64_t expected = int64_t(cls) + int64_t(grid) * grid;
  if (tokens != expected)
    throw AtlasError("the run has " + std::to_string(tokens) + " tokens, the image's patches " +
                     std::to_string(expected));
  if (query < 0 || query >= tokens)
    throw AtlasError("query token " + std::to_string(query) + " is outside the " +
                     std::to_string(tokens) + " tokens");
}

// Splits one attention row [cls + grid * grid] into the [CLS] column and the patch grid.
PatchOverlay fromRow(const float* row, int query, int grid, bool cls) {
  PatchOverlay o;
  o.grid = grid;
  o.cls = cls;
  o.query = query;
  o.clsValue = cls ? row[0] : 0.0f;
  o.values.assign(row + int(cls), row + int(cls) + grid * grid);
  return o;
}

// The overlay's colour scale: the heatmap's default (viridis, linear, [0, global max]).
ColorMapping overlayMapping() { return ColorMapping{}; }

}  // namespace

int patchToken(int row, int col, int grid, bool cls) { return int(cls) + row * grid + col; }

int tokenPatch(int token, int grid, bool cls) {
  const int patch = token - int(cls);
  return patch >= 0 && patch < grid * grid ? patch : -1;
}

QString tokenName(int token, int grid, bool cls) {
  const int patch = tokenPatch(token, grid, cls);
  if (patch < 0) return cls && token == 0 ? "[CLS]" : QString("token %1").arg(token);
  return QString("patch %1,%2").arg(patch / grid).arg(patch % grid);
}

HeatmapData PatchOverlay::heatmap() const {
  HeatmapData d;
  d.rows = d.cols = grid;
  d.values = values;
  d.title = title;
  d.valueName = mode == PatchOverlayMode::Rollout ? "rollout" : "attention weight";
  return d;
}

PatchOverlay queryAttentionOverlay(const Trace& trace, int layer, int head, int query, int grid, bool cls) {
  // The same matrix as the main heatmap for this layer and head (aggregates included).
  const HeatmapData m = attentionHeatmap(trace, {"encoder", "attn", layer, head});
  checkLayout(m.cols, query, grid, cls);
  PatchOverlay o = fromRow(m.values.data() + size_t(query) * size_t(m.cols), query, grid, cls);
  o.title = QString("Attention of %1, layer %2, %3").arg(tokenName(query, grid, cls)).arg(layer).arg(headName(head));
  return o;
}

PatchOverlay rolloutOverlay(const Trace& trace, int layer, int query, int grid, bool cls) {
  const Tensor r = attention_rollout(trace, "encoder", layer);  // [L, L]
  checkLayout(r.dim(1), query, grid, cls);
  PatchOverlay o = fromRow(r.data.data() + size_t(query) * size_t(r.dim(1)), query, grid, cls);
  o.mode = PatchOverlayMode::Rollout;
  o.title = QString("Attention rollout into %1, layers 0-%2").arg(tokenName(query, grid, cls)).arg(layer);
  return o;
}

void paintPatchOverlay(QPainter& p, const QRectF& imageRect, const PatchOverlay& o, qreal alpha) {
  if (o.empty()) return;
  const HeatmapData data = o.heatmap();
  const ValueMapper mapper(data, overlayMapping());
  const ColorLut lut(overlayMapping().colormap);
  const qreal cell = imageRect.width() / o.grid;
  p.save();
  p.setPen(Qt::NoPen);
  for (int r = 0; r < o.grid; ++r)
    for (int c = 0; c < o.grid; ++c) {
      QColor color = lut.color(mapper(r, c));
      color.setAlphaF(float(alpha));
      p.setBrush(color);
      p.drawRect(QRectF(imageRect.left() + c * cell, imageRect.top() + r * cell, cell, cell));
    }
  p.restore();
}

void paintPatchLegend(QPainter& p, const QRectF& bar, const PatchOverlay& o, const HeatmapStyle& style,
                      const QFont& font) {
  if (o.empty()) return;
  const HeatmapData data = o.heatmap();
  paintColorBar(p, bar, ValueMapper(data, overlayMapping()), overlayMapping(), style, font);
}

qreal legendExtraWidth(QPaintDevice* device, const PatchOverlay& o, const QFont& font) {
  const HeatmapData data = o.heatmap();
  return colorBarExtraWidth(QFontMetricsF(font, device), ValueMapper(data, overlayMapping()));
}

FigureContent patchOverlayFigure(const QImage& image, const PatchOverlay& o) {
  FigureContent fig;
  fig.title = o.title;
  fig.sizeInches = QSizeF(5.6, 5.6);
  fig.paint = [image, o](QPainter& p, const QRectF& bounds, bool) {
    const QFont font = figureFont(p.device(), 9.0);
    p.setFont(font);
    const QFontMetricsF fm(font, p.device());
    const qreal lineH = fm.height() * 1.5;
    p.drawText(QRectF(bounds.left(), bounds.top(), bounds.width(), lineH), Qt::AlignCenter, o.title);
    // Square image (the model's input is image_size x image_size), legend to its right, the
    // [CLS] column's value under it.
    const qreal legendW = 12 + 6 + legendExtraWidth(p.device(), o, font);
    const qreal side = std::min(bounds.width() - legendW - 12, bounds.height() - 2 * lineH - 6);
    const QRectF img(bounds.left() + (bounds.width() - side - legendW) / 2, bounds.top() + lineH, side, side);
    p.drawImage(img, image);
    paintPatchOverlay(p, img, o, 0.55);
    p.setPen(QPen(QColor(0, 0, 0, 110), 0.5));
    const qreal cell = side / o.grid;
    for (int k = 1; k < o.grid; ++k) {
      p.drawLine(QPointF(img.left() + k * cell, img.top()), QPointF(img.left() + k * cell, img.bottom()));
      p.drawLine(QPointF(img.left(), img.top() + k * cell), QPointF(img.right(), img.top() + k * cell));
    }
    paintPatchLegend(p, QRectF(img.right() + 6, img.top(), 12, side), o, HeatmapStyle::light(), font);
    if (o.cls) {
      p.setPen(Qt::black);
      p.drawText(QRectF(bounds.left(), img.bottom() + 4, bounds.width(), lineH), Qt::AlignCenter,
                 QString("[CLS] column (not on the grid): %1").arg(double(o.clsValue), 0, 'g', 3));
    }
  };
  fig.data = Tensor({o.grid, o.grid});
  std::copy(o.values.begin(), o.values.end(), fig.data.data.begin());
  fig.csv = [o](QTextStream& out) {
    out << "row,col,token,value\n";
    for (int r = 0; r < o.grid; ++r)
      for (int c = 0; c < o.grid; ++c)
        out << r << ',' << c << ',' << patchToken(r, c, o.grid, o.cls) << ',' << o.at(r, c) << '\n';
  };
  return fig;
}

}  // namespace atlas::ui
