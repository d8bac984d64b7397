#include "ui/views/heatmap_painter.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

#include <QFontMetricsF>
#include <QLineF>
#include <QPaintDevice>
#include <QPainter>
#include <QPainterPath>
#include <QSet>
#include <QVector>
#include <algorithm>
#include <cmath>

namespace atlas::ui {

// The token search's colours (the token chips use the same).
const QColor kQueryMarkColor(230, 120, 20);
const QColor kKeyMarkColor(20, 150, 140);

HeatmapStyle HeatmapStyle::light() { return HeatmapStyle{}; }

HeatmapStyle HeatmapStyle::dark() {
  HeatmapStyle s;
  s.background = QColor(37, 37, 40);
  s.foreground = QColor(225, 225, 225);
  s.maskColor = QColor(92, 92, 96);
  s.hatchColor = QColor(150, 150, 150);
  return s;
}

QFont figureFont(const QPaintDevice* device, qreal unitSize, bool bold) {
  QFont f;
  const int dpi = device ? device->logicalDpiY() : 96;
  f.setPointSizeF(unitSize * 72.0 / (dpi > 0 ? dpi : 96));
  f.setBold(bold);
  return f;
}

QString elideChars(const QString& text, int maxChars) {
  if (text.size() <= maxChars) return text;
  return text.left(std::max(1, maxChars - 1)) + QChar(0x2026);
}

// ---------------------------------------------------------------------------------------------

void HeatmapRaster::build(const HeatmapData& data, const ColorMapping& mapping, QColor maskColor) {
  m_levels.clear();
  if (data.empty()) return;
  const CellColours colour(data, mapping, maskColor);
  QImage img(data.cols, data.rows, QImage::Format_RGB32);
#pragma omp parallel for schedule(static) if (static_cast<long long>(data.rows) * data.cols > 65536)
  for (int r = 0; r < data.rows; ++r) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(r));
    for (int c = 0; c < data.cols; ++c) line[c] = colour(r, c);
  }
  m_levels.push_back(std::move(img));
  // Halve until the image is small; each level pixel averages up to 2x2 pixels of the last.
  while (std::max(m_levels.back().width(), m_levels.back().height()) > 16) {
    const QImage& src = m_levels.back();
    const int w = (src.width() + 1) / 2, h = (src.height() + 1) / 2;
    QImage dst(w, h, QImage::Format_RGB32);
#pragma omp parallel for schedule(static) if (static_cast<long long>(w) * h > 65536)
    for (int y = 0; y < h; ++y) {
      const int y0 = 2 * y, y1 = std::min(2 * y + 1, src.height() - 1);
      const auto* a = reinterpret_cast<const QRgb*>(src.constScanLine(y0));
      const auto* b = reinterpret_cast<const QRgb*>(src.constScanLine(y1));
      auto* out = reinterpret_cast<QRgb*>(dst.scanLine(y));
      for (int x = 0; x < w; ++x) {
        const int x0 = 2 * x, x1 = std::min(2 * x + 1, src.width() - 1);
        const QRgb p[4] = {a[x0], a[x1], b[x0], b[x1]};
        int r = 0, g = 0, bl = 0;
        for (QRgb q : p) r += qRed(q), g += qGreen(q), bl += qBlue(q);
        out[x] = qRgb((r + 2) / 4, (g + 2) / 4, (bl + 2) / 4);
      }
    }
    m_levels.push_back(std::move(dst));
  }
}

int HeatmapRaster::levelFor(qreal devicePixelsPerCell) const {
  if (m_levels.empty() || devicePixelsPerCell >= 1.0 || devicePixelsPerCell <= 0.0) return 0;
  const int k = static_cast<int>(std::floor(std::log2(1.0 / devicePixelsPerCell)));
  return std::clamp(k, 0, levelCount() - 1);
}

void HeatmapRaster::draw(QPainter& p, const QRectF& target, const QRectF& window) const {
  if (m_levels.empty() || window.isEmpty()) return;
  const qreal dpr = p.device() ? p.device()->devicePixelRatioF() : 1.0;
  const qreal scale = p.worldTransform().m11() * dpr;  // device pixels per figure unit
  const qreal pxPerCell = std::min(target.width() / window.width(), target.height() / window.height()) * scale;
  const int k = levelFor(pxPerCell);
  const qreal f = std::ldexp(1.0, -k);
  const QImage& img = m_levels[static_cast<size_t>(k)];
  const QRectF src(window.x() * f, window.y() * f, window.width() * f, window.height() * f);
  p.save();
  // Nearest-neighbour when zoomed in (crisp cells); the pyramid already did the averaging.
  p.setRenderHint(QPainter::SmoothPixmapTransform, false);
  p.drawImage(target, img, src);
  p.restore();
}

// ---------------------------------------------------------------------------------------------

QPoint HeatmapLayout::cellAt(const QPointF& pos) const {
  if (!cells.contains(pos) || cellW <= 0 || cellH <= 0) return {-1, -1};
  const int c = static_cast<int>(std::floor(window.x() + (pos.x() - cells.x()) / cellW));
  const int r = static_cast<int>(std::floor(window.y() + (pos.y() - cells.y()) / cellH));
  return {c, r};
}

QRectF HeatmapLayout::cellRect(int row, int col) const {
  return QRectF(cells.x() + (col - window.x()) * cellW, cells.y() + (row - window.y()) * cellH,
                cellW, cellH);
}

namespace {

// The characters of a label drawn before it is cut: the style's, or more where the data asks.
int labelCharsOf(const HeatmapStyle& style, const HeatmapData& data) {
  return std::max(style.maxLabelChars, data.labelChars);
}

// Widest of up to ~512 labels (sampled evenly): measuring 4096 labels on every layout would
// cost more than the repaint it serves.

qreal widestLabel(const QFontMetricsF& fm, const QStringList& labels, int maxChars) {
  qreal w = 0;
  const int n = static_cast<int>(labels.size());
  const int step = std::max(1, n / 512);
  for (int i = 0; i < n; i += step) w = std::max(w, fm.horizontalAdvance(elideChars(labels[i], maxChars)));
  return w;
}

bool labelsRepeat(const QStringList& labels) {
  QSet<QString> seen;
  for (const QString& l : labels) {
    if (seen.contains(l)) return true;
    seen.insert(l);
  }
  return false;
}

}  // namespace

QStringList colorBarTitleLines(const QString& title, const QFontMetricsF& fm, qreal barHeight) {
  if (fm.horizontalAdvance(title) <= barHeight) return {title};
  return titleLines(title, fm, barHeight);
}

qreal colorBarExtraWidth(const QFontMetricsF& fm, const ValueMapper& mapper, qreal barHeight) {
  qreal w = 0;
  for (const auto& t : mapper.colorBarTicks()) w = std::max(w, fm.horizontalAdvance(t.text));
  // Tick marks, gap, rotated title; a title longer than the bar takes a line more per wrap.
  const qsizetype lines = barHeight > 0 ? colorBarTitleLines(mapper.colorBarTitle(), fm, barHeight).size() : 1;
  return w + fm.height() * (0.6 + qreal(lines));
}

HeatmapMeasures measureHeatmap(const QPaintDevice* device, const HeatmapData& data,
                               const HeatmapStyle& style, const ValueMapper& mapper) {
  HeatmapMeasures m;
  const QFontMetricsF fm(figureFont(device, style.fontSize), const_cast<QPaintDevice*>(device));
  const qreal pad = 0.6 * style.fontSize;
  if (style.showTokenLabels) {
    m.rowLabelWidth = widestLabel(fm, data.rowLabels, labelCharsOf(style, data)) + pad;
    m.colLabelHeight = widestLabel(fm, data.colLabels, labelCharsOf(style, data)) + pad;
    m.rowLabelsRepeat = labelsRepeat(data.rowLabels);
    m.colLabelsRepeat = labelsRepeat(data.colLabels);
  }
  if (style.showColorBar && !data.empty()) m.colorBarExtra = 1.5 * style.fontSize + colorBarExtraWidth(fm, mapper);
  return m;
}

HeatmapLayout layoutHeatmap(const QPaintDevice* device, const QRectF& bounds,
                            const HeatmapData& data, const HeatmapStyle& style,
                            const QRectF& window, const ValueMapper* mapper,
                            const HeatmapMeasures* measures) {
  HeatmapLayout L;
  L.bounds = bounds;
  L.window = window.isEmpty() ? QRectF(0, 0, std::max(1, data.cols), std::max(1, data.rows)) : window;
  L.font = figureFont(device, style.fontSize);
  L.titleFont = figureFont(device, style.fontSize * 1.25, true);
  const QFontMetricsF fm(L.font, const_cast<QPaintDevice*>(device));
  const QFontMetricsF tfm(L.titleFont, const_cast<QPaintDevice*>(device));
  const qreal u = style.fontSize;
  const qreal pad = 0.6 * u;

  const HeatmapMeasures M = measures ? *measures
                                     : measureHeatmap(device, data, style,
                                                      mapper ? *mapper : ValueMapper(data, style.mapping));
  const qreal titleH = style.showTitle ? titleHeight(data.title, tfm, bounds.width()) : pad;
  const qreal axisT = style.showAxisTitles ? fm.height() * 1.4 : 0;
  const qreal barW = style.showColorBar && !data.empty() ? 1.2 * u : 0;
  qreal barExtra = barW > 0 ? M.colorBarExtra : 0;

  auto place = [&](qreal rowW, qreal colH) {
    const qreal left = bounds.left() + pad + axisT + rowW;
    const qreal top = bounds.top() + titleH;
    qreal availW = bounds.right() - pad - barW - barExtra - left;
    qreal availH = bounds.bottom() - pad - axisT - colH - top;
    availW = std::max<qreal>(availW, 8);
    availH = std::max<qreal>(availH, 8);
    qreal w = availW, h = availH;
    // Square matrices (attention over one sequence) keep square cells so the diagonal is one.
    if (data.rows == data.cols && L.window.width() == L.window.height()) w = h = std::min(availW, availH);
    const qreal shiftX = (availW - w) / 2;
    L.cells = QRectF(left + shiftX, top, w, h);
    L.cellW = w / L.window.width();
    L.cellH = h / L.window.height();
    L.title = QRectF(bounds.left(), bounds.top(), bounds.width(), titleH);
    L.rowLabels = QRectF(L.cells.left() - rowW, top, rowW, h);
    L.colLabels = QRectF(L.cells.left(), L.cells.bottom() + pad * 0.5, w, colH);
    if (barW > 0) L.colorBar = QRectF(L.cells.right() + 1.5 * u, top, barW, h);
    L.rowLabelStep = std::max(1, static_cast<int>(std::ceil(fm.height() * 0.95 / L.cellH)));
    L.colLabelStep = std::max(1, static_cast<int>(std::ceil(fm.height() * 0.95 / L.cellW)));
  };
  qreal rowW = M.rowLabelWidth, colH = M.colLabelHeight;
  place(rowW, colH);
  // A thinned axis whose labels repeat gets their positions: room for the widest "<position> " in
  // front, then the cells placed again (smaller cells can only thin further). A pooled
  // overview's labels are position ranges already.
  if (style.showTokenLabels && !data.pooled() && (L.rowLabelStep > 1 || L.colLabelStep > 1)) {
    L.rowLabelPositions = L.rowLabelStep > 1 && M.rowLabelsRepeat;
    L.colLabelPositions = L.colLabelStep > 1 && M.colLabelsRepeat;
  }
  if (L.rowLabelPositions || L.colLabelPositions) {
    auto positionWidth = [&](int last) { return fm.horizontalAdvance(QString::number(last) + ' '); };
    rowW += L.rowLabelPositions ? positionWidth(data.rowOrigin + data.rows - 1) : 0;
    colH += L.colLabelPositions ? positionWidth(data.colOrigin + data.cols - 1) : 0;
    place(rowW, colH);
  }
  // A colour-bar title longer than the bar wraps onto lines beside it: room for them, then the
  // cells placed again (a narrower matrix can only shorten the bar, hence a second round).
  if (barW > 0) {
    const QString barTitle = (mapper ? *mapper : ValueMapper(data, style.mapping)).colorBarTitle();
    for (int round = 0; round < 2; ++round) {
      const qsizetype lines = colorBarTitleLines(barTitle, fm, L.colorBar.height()).size();
      const qreal wanted = M.colorBarExtra + qreal(lines - 1) * fm.height();
      if (wanted <= barExtra) break;
      barExtra = wanted;
      place(rowW, colH);
    }
  }
  return L;
}

QString axisLabelText(const HeatmapLayout& L, const HeatmapData& data, bool rows, int index, int maxChars) {
  const QStringList& labels = rows ? data.rowLabels : data.colLabels;
  const QString text = elideChars(labels[index], maxChars);
  if (!(rows ? L.rowLabelPositions : L.colLabelPositions)) return text;
  return QString::number((rows ? data.rowOrigin : data.colOrigin) + index) + ' ' + text;
}

void drawCellRects(QPainter& p, const HeatmapLayout& L, const HeatmapData& data, const CellColours& colour,
                   int r0, int r1, int c0, int c1) {
  p.save();
  p.setPen(Qt::NoPen);
  p.setRenderHint(QPainter::Antialiasing, false);
  for (int r = r0; r < r1; ++r) {
    int c = c0;
    while (c < c1) {
      // Merge runs of equal colour: fewer, seam-free rectangles in SVG/PDF.
      const QRgb col = colour(r, c);
      int e = c + 1;
      while (e < c1 && colour(r, e) == col) ++e;
      QRectF a = L.cellRect(r, c), b = L.cellRect(r, e - 1);
      // Each run reaches half a cell into the next run and the next row, which are drawn after
      // it and cover the overlap: an SVG renderer that antialiases shape edges shows no seam.
      // The last row and column stay inside the matrix (SVG ignores the clip).
      QPointF end = b.bottomRight();
      if (e < c1) end.rx() += 0.5 * L.cellW;
      if (r + 1 < r1) end.ry() += 0.5 * L.cellH;
      p.fillRect(QRectF(a.topLeft(), end), QColor::fromRgb(col));
      c = e;
    }
  }
  p.restore();
}

// Diagonal hatching over the masked cells, drawn as line segments cut to each masked run by
// geometry instead of a clip path: QSvgGenerator ignores clip paths, so a clipped hatch covered
// the whole SVG figure. The lines lie on one lattice x + y = k * spacing, so runs that touch
// continue each other's lines.
void drawMaskHatch(QPainter& p, const HeatmapLayout& L, const HeatmapData& data,
                   const HeatmapStyle& style, int r0, int r1, int c0, int c1) {
  const qreal spacing = std::clamp(std::min(L.cellW, L.cellH) / 2.5, 3.0, 8.0);
  const QRectF visible = L.cells;
  QVector<QLineF> lines;
  for (int r = r0; r < r1; ++r) {
    int c = c0;
    while (c < c1) {
      if (!data.masked(r, c)) {
        ++c;
        continue;
      }
      int e = c + 1;
      while (e < c1 && data.masked(r, e)) ++e;
      const QRectF run = QRectF(L.cellRect(r, c).topLeft(), L.cellRect(r, e - 1).bottomRight())
                             .intersected(visible);
      c = e;
      if (run.isEmpty()) continue;
      const qreal left = run.left(), right = run.right(), top = run.top(), bottom = run.bottom();
      for (qreal k = std::ceil((left + top) / spacing) * spacing; k <= right + bottom; k += spacing) {
        const qreal x0 = std::max(left, k - bottom), x1 = std::min(right, k - top);
        if (x1 > x0) lines.push_back(QLineF(x0, k - x0, x1, k - x1));
      }
    }
  }
  if (lines.isEmpty()) return;
  p.save();
  p.setPen(QPen(style.hatchColor, std::max(0.5, spacing / 6)));
  p.drawLines(lines);
  p.restore();
}


std::vector<ValueMapper::Tick> colorBarTicksThatFit(const ValueMapper& mapper, qreal barHeight, qreal lineHeight) {
  const std::vector<ValueMapper::Tick> ticks = mapper.colorBarTicks();
  std::vector<ValueMapper::Tick> out;
  if (ticks.empty()) return out;
  const qreal gap = lineHeight * 0.95;
  const qreal top = ticks.back().position * barHeight;
  for (size_t k = 0; k < ticks.size(); ++k) {
    const qreal y = ticks[k].position * barHeight;  // up from the bottom
    const bool last = k + 1 == ticks.size();
    if (!out.empty() && y - out.back().position * barHeight < gap) continue;
    if (!last && !out.empty() && top - y < gap) continue;  // keep room for the top tick
    out.push_back(ticks[k]);
  }
  return out;
}

CellColours::CellColours(const HeatmapData& data, const ColorMapping& mapping, QColor mask)
    : m_data(&data), m_mapper(data, mapping), m_lut(mapping.colormap), m_mask(mask.rgb()) {
  for (int id = 0; id < std::min(data.categories, 4096); ++id) m_palette.push_back(categoryColor(id));
}

void paintColorBar(QPainter& p, const QRectF& bar, const ValueMapper& mapper,
                   const ColorMapping& mapping, const HeatmapStyle& style, const QFont& font) {
  p.save();
  p.setPen(Qt::NoPen);
  if (const int n = mapper.categories(); n > 0) {
    // A legend of ids: one block per id, id 0 at the bottom.
    for (int id = 0; id < n; ++id)
      p.fillRect(QRectF(bar.left(), bar.bottom() - (id + 1) * bar.height() / n, bar.width(), bar.height() / n),
                 QColor::fromRgb(categoryColor(id)));
  } else {
    // Strips of the colour map's own entries rather than a gradient, which PDF and SVG viewers
    // interpolate each their own way. Each strip reaches up to the bar's top and the next one
    // covers it, so no viewer shows a seam between strips.
    const ColorLut lut(mapping.colormap);
    constexpr int kStrips = 128;
    p.setRenderHint(QPainter::Antialiasing, false);
    for (int k = 0; k < kStrips; ++k) {
      const qreal bottom = bar.bottom() - k * bar.height() / kStrips;
      p.fillRect(QRectF(bar.left(), bar.top(), bar.width(), bottom - bar.top()), lut.color((k + 0.5f) / kStrips));
    }
  }
  p.setPen(QPen(style.foreground, 0.6));
  p.setBrush(Qt::NoBrush);
  p.drawRect(bar);
  p.setFont(font);
  const QFontMetricsF fm(font, p.device());
  qreal textRight = bar.right();
  for (const auto& t : colorBarTicksThatFit(mapper, bar.height(), fm.height())) {
    const qreal y = bar.bottom() - t.position * bar.height();
    p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 3, y));
    const QRectF tr(bar.right() + 5, y - fm.height() / 2, fm.horizontalAdvance(t.text) + 2, fm.height());
    p.drawText(tr, Qt::AlignLeft | Qt::AlignVCenter, t.text);
    textRight = std::max(textRight, tr.right());
  }
  // Title rotated along the bar.
  // A title longer than the bar wraps: its further lines stand outward, away from the bar.
  p.translate(textRight + fm.height() * 0.3 + fm.ascent(), bar.center().y());
  p.rotate(-90);
  const QStringList lines = colorBarTitleLines(mapper.colorBarTitle(), fm, bar.height());
  for (qsizetype k = 0; k < lines.size(); ++k)
    p.drawText(QRectF(-bar.height() / 2, -fm.ascent() + qreal(k) * fm.height(), bar.height(), fm.height()),
               Qt::AlignCenter, lines[k]);
  p.restore();
}

void paintHeatmap(QPainter& p, const HeatmapLayout& L, const HeatmapData& data,
                  const HeatmapStyle& style, const HeatmapRaster* raster, const ValueMapper* mapper) {
  p.save();
  p.fillRect(L.bounds, style.background);
  p.setPen(style.foreground);
  if (style.showTitle && !data.title.isEmpty()) {
    p.setFont(L.titleFont);
    drawTitle(p, L.title, data.title);
  }
  if (data.empty()) {
    p.setFont(L.font);
    p.drawText(L.bounds, Qt::AlignCenter, data.emptyText.isEmpty() ? QString("no data") : data.emptyText);
    p.restore();
    return;
  }
  const QRectF& W = L.window;
  const int r0 = std::max(0, static_cast<int>(std::floor(W.top())));
  const int r1 = std::min(data.rows, static_cast<int>(std::ceil(W.bottom())));
  const int c0 = std::max(0, static_cast<int>(std::floor(W.left())));
  const int c1 = std::min(data.cols, static_cast<int>(std::ceil(W.right())));

  // Cells.
  p.save();
  p.setClipRect(L.cells);
  if (style.vectorCells || !raster || raster->isNull())
    drawCellRects(p, L, data, CellColours(data, style.mapping, style.maskColor), r0, r1, c0, c1);
  else
    raster->draw(p, L.cells, W);
  const qreal scale = p.worldTransform().m11() * (p.device() ? p.device()->devicePixelRatioF() : 1.0);
  if (!data.mask.empty() && std::min(L.cellW, L.cellH) * scale >= 5.0)
    drawMaskHatch(p, L, data, style, r0, r1, c0, c1);
  p.restore();
  p.setPen(QPen(style.foreground, 0.6));
  p.setBrush(Qt::NoBrush);
  p.drawRect(L.cells);

  // Token labels: every k-th when the cells are smaller than a line of text.
  p.setFont(L.font);
  const QFontMetricsF fm(L.font, p.device());
  if (style.showTokenLabels) {
    const int rowStep = L.rowLabelStep;
    // Marked labels (the token search's matches) are drawn even between the thinned ones.
    for (int r = std::max(0, r0); r < r1; ++r) {
      if (r >= data.rowLabels.size()) continue;
      const bool marked = r < static_cast<int>(data.rowMarks.size()) && data.rowMarks[size_t(r)];
      if (r % rowStep != 0 && !marked) continue;
      const qreal y = L.cells.top() + (r + 0.5 - W.top()) * L.cellH;
      if (marked) {
        p.setPen(kQueryMarkColor);
        QFont bold = L.font;
        bold.setBold(true);
        p.setFont(bold);
      }
      p.drawText(QRectF(L.rowLabels.left(), y - fm.height() / 2, L.rowLabels.width() - 0.3 * style.fontSize,
                        fm.height()),
                 Qt::AlignRight | Qt::AlignVCenter, axisLabelText(L, data, true, r, labelCharsOf(style, data)));
      if (marked) {
        p.setPen(style.foreground);
        p.setFont(L.font);
      }
    }
    const int colStep = L.colLabelStep;
    for (int c = std::max(0, c0); c < c1; ++c) {
      if (c >= data.colLabels.size()) continue;
      const bool marked = c < static_cast<int>(data.colMarks.size()) && data.colMarks[size_t(c)];
      if (c % colStep != 0 && !marked) continue;
      const qreal x = L.cells.left() + (c + 0.5 - W.left()) * L.cellW;
      p.save();
      p.translate(x, L.colLabels.top());
      p.rotate(-90);
      // After the rotation +x points up: the text ends at the matrix and reads upwards.
      if (marked) {
        p.setPen(kKeyMarkColor);
        QFont bold = L.font;
        bold.setBold(true);
        p.setFont(bold);
      }
      p.drawText(QRectF(-L.colLabels.height(), -fm.height() / 2, L.colLabels.height(), fm.height()),
                 Qt::AlignRight | Qt::AlignVCenter, axisLabelText(L, data, false, c, labelCharsOf(style, data)));
      p.restore();
    }
  }
  if (style.showAxisTitles) {
    // Centred on the cells, but as wide as the title needs: a small matrix must not clip it.
    const qreal colW = std::max(L.cells.width(), fm.horizontalAdvance(data.colAxis) + fm.height());
    const QRectF below(L.cells.center().x() - colW / 2, L.colLabels.bottom(), colW, fm.height() * 1.4);
    p.drawText(below, Qt::AlignCenter, data.colAxis);
    p.save();
    p.translate(L.rowLabels.left() - fm.height() * 0.9, L.cells.center().y());
    p.rotate(-90);
    const qreal rowW = std::max(L.cells.height(), fm.horizontalAdvance(data.rowAxis) + fm.height());
    p.drawText(QRectF(-rowW / 2, -fm.height() / 2, rowW, fm.height()), Qt::AlignCenter, data.rowAxis);
    p.restore();
  }
  if (!L.colorBar.isEmpty())
    paintColorBar(p, L.colorBar, mapper ? *mapper : ValueMapper(data, style.mapping), style.mapping, style, L.font);
  p.restore();
}

QStringList titleLines(const QString& title, const QFontMetricsF& fm, qreal width) {
  constexpr int kMaxTitleLines = 3;
  const qreal room = std::max<qreal>(width * 0.94, 1);
  QStringList lines;
  QString line;
  const QStringList words = title.split(' ');
  for (int i = 0; i < words.size(); ++i) {
    const QString candidate = line.isEmpty() ? words[i] : line + ' ' + words[i];
    if (line.isEmpty() || fm.horizontalAdvance(candidate) <= room) {
      line = candidate;
      continue;
    }
    lines << line;
    line = words[i];
    if (lines.size() == kMaxTitleLines - 1) {  // the rest on the last line, elided if need be
      line = QStringList(words.mid(i)).join(' ');
      break;
    }
  }
  if (!line.isEmpty() || lines.isEmpty()) lines << line;
  for (QString& l : lines) l = fm.elidedText(l, Qt::ElideRight, room);
  return lines;
}

qreal titleHeight(const QString& title, const QFontMetricsF& fm, qreal width) {
  return fm.height() * (qreal(std::max<qsizetype>(1, titleLines(title, fm, width).size())) + 0.6);
}

void drawTitle(QPainter& p, const QRectF& rect, const QString& title) {
  const QFontMetricsF fm(p.font(), p.device());
  const QStringList lines = titleLines(title, fm, rect.width());
  const qreal lineH = fm.height();
  qreal y = rect.top() + (rect.height() - lineH * qreal(lines.size())) / 2;
  for (const QString& l : lines) {
    p.drawText(QRectF(rect.left(), y, rect.width(), lineH), Qt::AlignCenter, l);
    y += lineH;
  }
}

}  // namespace atlas::ui
