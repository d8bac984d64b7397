#pragma once
// The one drawing routine for heatmap figures: the on-screen HeatmapView and the figure
// export (SVG, PDF, PNG) both call paintHeatmap, so an exported figure looks like the view.
// Coordinates are "figure units": device-independent pixels on screen, points in exports.
#include <QColor>
#include <QFont>
#include <QFontMetricsF>
#include <QImage>
#include <QRectF>
#include <cmath>
#include <vector>

#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

class QPainter;
class QPaintDevice;

namespace atlas::ui {

// Labels of rows and columns the token search marks (HeatmapData::rowMarks / colMarks).
extern const QColor kQueryMarkColor;
extern const QColor kKeyMarkColor;

struct HeatmapStyle {
  ColorMapping mapping;
  bool showTitle = true;
  bool showTokenLabels = true;
  bool showAxisTitles = true;
  bool showColorBar = true;
  // Draw every cell as a rectangle (vector output) instead of the cached image.
  bool vectorCells = false;
  qreal fontSize = 9.0;  // figure units
  int maxLabelChars = 14;
  QColor background = Qt::white;
  QColor foreground = Qt::black;
  QColor maskColor = QColor(168, 168, 168);   // masked cells: neutral grey...
  QColor hatchColor = QColor(100, 100, 100);  // ...with a diagonal hatch when large enough

  static HeatmapStyle light();
  static HeatmapStyle dark();
};

// Figure titles are wrapped, never cut: at spaces into at most three lines no wider than most of
// `width` (a margin for SVG renderers whose fonts run wider than Qt's metrics); a word longer than
// a line, or a fourth line, is elided. Every view's layout and painter use these, so the room the
// layout keeps is the room the painter fills.
QStringList titleLines(const QString& title, const QFontMetricsF& fm, qreal width);
// The height the title takes in a band `width` wide: its lines plus 0.6 of a line of margin (one
// line: what titles always took).
qreal titleHeight(const QString& title, const QFontMetricsF& fm, qreal width);
// Draws the title's lines centred in `rect` with the painter's font (the title font).
void drawTitle(QPainter& p, const QRectF& rect, const QString& title);

// A font of `unitSize` figure units on `device` (points are converted through the device's
// logical DPI so the same number means the same size on screen, in SVG/PDF and in PNG).
QFont figureFont(const QPaintDevice* device, qreal unitSize, bool bold = false);

// The colour of each cell of `data`: masked cells in `mask`, ids (HeatmapData::categories) in
// their categoryColor, values through the mapping's colour map. Every view draws through it.
class CellColours {
 public:
  CellColours(const HeatmapData& data, const ColorMapping& mapping, QColor mask);
  QRgb operator()(int r, int c) const {
    if (m_data->masked(r, c)) return m_mask;
    if (m_data->categories > 0) {
      const long id = std::lround(m_data->at(r, c));
      return id >= 0 && id < static_cast<long>(m_palette.size()) ? m_palette[static_cast<size_t>(id)]
                                                                 : categoryColor(static_cast<int>(id));
    }
    return m_lut.rgb(m_mapper(r, c));
  }

 private:
  const HeatmapData* m_data;
  ValueMapper m_mapper;
  ColorLut m_lut;
  QRgb m_mask;
  std::vector<QRgb> m_palette;  // categoryColor of ids 0..categories-1, computed once
};

struct HeatmapLayout;
// Cells [r0, r1) x [c0, c1) of `data` as rectangles (vector output), runs of one colour in a
// row merged, without antialiasing: no seams between cells in SVG and PDF renderers.
void drawCellRects(QPainter& p, const HeatmapLayout& L, const HeatmapData& data, const CellColours& colour,
                   int r0, int r1, int c0, int c1);

// Diagonal hatching over the masked cells in [r0, r1) x [c0, c1), as line segments cut to each
// masked run (no clip path: SVG ignores it). Every view with masked cells draws it.
void drawMaskHatch(QPainter& p, const HeatmapLayout& L, const HeatmapData& data, const HeatmapStyle& style,
                   int r0, int r1, int c0, int c1);

// One colour per cell (masked cells in style.maskColor), then 2x2-averaged levels down to a
// few pixels: a view zoomed out draws from a level with about one image pixel per device
// pixel, so a repaint costs the same for 64 and 4096 tokens.
class HeatmapRaster {
 public:
  void build(const HeatmapData& data, const ColorMapping& mapping, QColor maskColor);
  void clear() { m_levels.clear(); }
  bool isNull() const { return m_levels.empty(); }
  int levelCount() const { return static_cast<int>(m_levels.size()); }
  const QImage& level(int k) const { return m_levels[static_cast<size_t>(k)]; }
  // Draws the cells in `window` (cell coordinates, x = column, y = row) into `target`.
  void draw(QPainter& p, const QRectF& target, const QRectF& window) const;
  int levelFor(qreal devicePixelsPerCell) const;

 private:
  std::vector<QImage> m_levels;
};

struct HeatmapLayout {
  QRectF bounds;
  QRectF title;
  QRectF cells;       // the matrix area
  QRectF rowLabels;   // left of the cells
  QRectF colLabels;   // below the cells (rotated text)
  QRectF colorBar;    // the gradient strip
  QRectF window;      // visible cells, in cell coordinates
  qreal cellW = 0, cellH = 0;  // figure units per cell
  // Labels are drawn every rowLabelStep-th row (colLabelStep-th column) when cells are smaller
  // than a line of text; a thinned axis whose labels repeat also shows each drawn label's
  // position ("12 a"), since every k-th token of a repeating text can read as one token over and
  // over.
  int rowLabelStep = 1, colLabelStep = 1;
  bool rowLabelPositions = false, colLabelPositions = false;
  QFont font;
  QFont titleFont;

  // (column, row) of the cell under `pos`, or (-1, -1).
  QPoint cellAt(const QPointF& pos) const;
  QRectF cellRect(int row, int col) const;
};

// The text of row (or column) label `index` as drawn under layout L: the token label, elided to
// maxChars, after its position where the axis is thinned (HeatmapLayout::rowLabelPositions).
QString axisLabelText(const HeatmapLayout& L, const HeatmapData& data, bool rows, int index, int maxChars);

// Sizes that depend on the data and the font but not on the zoom (label extents, colour bar
// ticks), measured once per data or style change by widgets that repaint often.
struct HeatmapMeasures {
  qreal rowLabelWidth = 0;
  qreal colLabelHeight = 0;
  qreal colorBarExtra = 0;
  // Some label stands more than once on the axis (tokens of a repeating text): thinned, such an
  // axis shows positions too. Index and layer labels never repeat and are left as they are.
  bool rowLabelsRepeat = false, colLabelsRepeat = false;
};
HeatmapMeasures measureHeatmap(const QPaintDevice* device, const HeatmapData& data,
                               const HeatmapStyle& style, const ValueMapper& mapper);

// `mapper` (built for `data` and style.mapping) and `measures` may be passed by callers that
// paint often: the mapper scans the whole matrix, which for 4096 x 4096 costs more than the
// rest of a repaint, and measuring thousands of labels is not free either.
HeatmapLayout layoutHeatmap(const QPaintDevice* device, const QRectF& bounds,
                            const HeatmapData& data, const HeatmapStyle& style,
                            const QRectF& window, const ValueMapper* mapper = nullptr,
                            const HeatmapMeasures* measures = nullptr);
// `raster` may be null (or ignored when style.vectorCells): cells are then drawn as rects.
void paintHeatmap(QPainter& p, const HeatmapLayout& layout, const HeatmapData& data,
                  const HeatmapStyle& style, const HeatmapRaster* raster,
                  const ValueMapper* mapper = nullptr);

// A vertical colour bar with ticks, shared by the heatmap and the model grid figures.
void paintColorBar(QPainter& p, const QRectF& bar, const ValueMapper& mapper,
                   const ColorMapping& mapping, const HeatmapStyle& style, const QFont& font);
// The room right of the bar: tick labels and the rotated title, which wraps (titleLines) when
// longer than a bar of `barHeight` (0: unknown, one line).
qreal colorBarExtraWidth(const QFontMetricsF& fm, const ValueMapper& mapper, qreal barHeight = 0);
// The colour-bar title's lines along a bar of `barHeight`: one when it fits, else wrapped.
QStringList colorBarTitleLines(const QString& title, const QFontMetricsF& fm, qreal barHeight);
// The colour bar's ticks whose labels (lines of `lineHeight`) do not overlap on a bar of
// `barHeight`: the bottom one, then each at least a line above the last kept, and the top one.
std::vector<ValueMapper::Tick> colorBarTicksThatFit(const ValueMapper& mapper, qreal barHeight, qreal lineHeight);

// `text` shortened with an ellipsis to at most `maxChars` characters.
QString elideChars(const QString& text, int maxChars);

}  // namespace atlas::ui
