#include "ui/views/token_view.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

namespace atlas::ui {

QColor headColor(int index, int count) {
  if (count <= 1) return QColor(31, 119, 180);
  // Golden-angle hue steps keep neighbouring heads apart even for 16 heads.
  const int hue = static_cast<int>(std::fmod(210.0 + index * 137.508, 360.0));
  return QColor::fromHsv(hue, 200, 200);
}

QPointF TokenLinesLayout::leftAnchor(int i) const { return {left.right() + 4, left.top() + (i + 0.5) * rowH}; }

QPointF TokenLinesLayout::rightAnchor(int j) const {
  const qreal h = cols > 0 ? right.height() / cols : 0;
  return {right.left() - 4, right.top() + (j + 0.5) * h};
}

int TokenLinesLayout::queryAt(const QPointF& pos) const {
  const QRectF zone = left.adjusted(0, 0, (right.left() - left.right()) * 0.25, 0);
  if (!zone.contains(pos) || rowH <= 0) return -1;
  const int i = static_cast<int>((pos.y() - left.top()) / rowH);
  return i >= 0 && i < rows ? i : -1;
}

TokenLinesLayout layoutTokenLines(const QPaintDevice* device, const QRectF& bounds,
                                  const TokenLinesData& data, const HeatmapStyle& style) {
  TokenLinesLayout L;
  L.bounds = bounds;
  L.font = figureFont(device, style.fontSize);
  L.titleFont = figureFont(device, style.fontSize * 1.25, true);
  const QFontMetricsF fm(L.font, const_cast<QPaintDevice*>(device));
  const QFontMetricsF tfm(L.titleFont, const_cast<QPaintDevice*>(device));
  const qreal titleH = style.showTitle ? titleHeight(data.title, tfm, bounds.width()) : 0.6 * style.fontSize;
  L.title = QRectF(bounds.left(), bounds.top(), bounds.width(), titleH);
  if (data.heads.empty()) return L;
  const HeatmapData& h = data.heads.front();
  L.rows = h.rows;
  L.cols = h.cols;
  qreal lw = 0, rw = 0;
  for (const auto& s : h.rowLabels) lw = std::max(lw, fm.horizontalAdvance(elideChars(s, style.maxLabelChars)));
  for (const auto& s : h.colLabels) rw = std::max(rw, fm.horizontalAdvance(elideChars(s, style.maxLabelChars)));
  const qreal top = bounds.top() + titleH + fm.height() * 1.3;  // room for column headers
  const qreal height = bounds.bottom() - 0.6 * style.fontSize - top;
  const qreal rowH = height / std::max(1, std::max(L.rows, L.cols));
  L.rowH = rowH;
  const qreal pad = 0.6 * style.fontSize;
  L.left = QRectF(bounds.left() + pad, top, lw, rowH * L.rows);
  L.right = QRectF(bounds.right() - pad - rw, top, rw, rowH * L.cols);
  return L;
}

void paintTokenLines(QPainter& p, const TokenLinesLayout& L, const TokenLinesData& data,
                     int selectedQuery, const HeatmapStyle& style) {
  p.save();
  p.fillRect(L.bounds, style.background);
  p.setPen(style.foreground);
  if (style.showTitle) {
    p.setFont(L.titleFont);
    drawTitle(p, L.title, data.title);
  }
  if (data.heads.empty() || L.rows == 0) {
    p.restore();
    return;
  }
  p.setFont(L.font);
  const QFontMetricsF fm(L.font, p.device());
  const HeatmapData& first = data.heads.front();
  p.drawText(QRectF(L.left.left(), L.left.top() - fm.height() * 1.3, L.left.width() + 40, fm.height()),
             Qt::AlignLeft | Qt::AlignVCenter, first.rowAxis);
  p.drawText(QRectF(L.right.left() - 40, L.right.top() - fm.height() * 1.3, L.right.width() + 40, fm.height()),
             Qt::AlignRight | Qt::AlignVCenter, first.colAxis);

  p.setRenderHint(QPainter::Antialiasing, true);
  const int nHeads = static_cast<int>(data.heads.size());
  const qreal maxWidth = std::clamp(L.rowH * 0.5, 1.0, 5.0);
  for (int k = 0; k < nHeads; ++k) {
    const HeatmapData& h = data.heads[static_cast<size_t>(k)];
    QColor base = nHeads == 1 ? QColor(31, 119, 180) : headColor(data.headIndex[static_cast<size_t>(k)], 16);
    if (style.background.lightness() < 128 && nHeads == 1) base = QColor(100, 170, 255);
    // With no query selected every query's links are drawn, only the strong ones, and at most
    // ~20k lines in all: 512 x 512 antialiased lines would take seconds and show nothing.
    const float threshold = selectedQuery >= 0 ? 0.02f : (h.rows > 64 ? 0.5f : 0.1f);
    const int stride = selectedQuery >= 0 ? 1 : std::max(1, h.rows * h.cols / (20000 * nHeads) + 1);
    for (int i = 0; i < h.rows; ++i) {
      if (selectedQuery >= 0 && i != selectedQuery) continue;
      if (selectedQuery < 0 && i % stride != 0) continue;
      float rowMax = 0.0f;
      for (int j = 0; j < h.cols; ++j)
        if (!h.masked(i, j)) rowMax = std::max(rowMax, h.at(i, j));
      if (rowMax <= 0.0f) continue;
      const QPointF a = L.leftAnchor(i);
      for (int j = 0; j < h.cols; ++j) {
        if (h.masked(i, j)) continue;
        const float w = h.at(i, j) / rowMax;  // relative to the row's strongest link
        if (w < threshold) continue;
        QColor c = base;
        c.setAlphaF(std::clamp((selectedQuery >= 0 ? 0.9f : 0.3f) * w, 0.03f, 1.0f));
        p.setPen(QPen(c, 0.4 + maxWidth * w, Qt::SolidLine, Qt::RoundCap));
        p.drawLine(a, L.rightAnchor(j));
      }
    }
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setPen(style.foreground);
  // Labels on top of the lines; the selected query and its strongest key in bold.
  const int labelStep = std::max(1, static_cast<int>(std::ceil(fm.height() * 0.9 / L.rowH)));
  QFont bold = L.font;
  bold.setBold(true);
  for (int i = 0; i < first.rows; i += labelStep) {
    p.setFont(i == selectedQuery ? bold : L.font);
    const QPointF a = L.leftAnchor(i);
    p.drawText(QRectF(L.left.left(), a.y() - fm.height() / 2, L.left.width() + 4, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, elideChars(first.rowLabels.value(i), style.maxLabelChars));
  }
  p.setFont(L.font);
  for (int j = 0; j < first.cols; j += labelStep) {
    const QPointF b = L.rightAnchor(j);
    p.drawText(QRectF(L.right.left(), b.y() - fm.height() / 2, L.right.width() + 4, fm.height()),
               Qt::AlignLeft | Qt::AlignVCenter, elideChars(first.colLabels.value(j), style.maxLabelChars));
  }
  // Head legend when several heads share the picture.
  if (nHeads > 1) {
    qreal x = L.bounds.left() + 0.6 * style.fontSize;
    const qreal y = L.title.bottom();
    for (int k = 0; k < nHeads && k < 16; ++k) {
      const QString t = headShortName(data.headIndex[static_cast<size_t>(k)]);
      p.fillRect(QRectF(x, y + fm.height() * 0.25, fm.height() * 0.6, fm.height() * 0.6),
                 headColor(data.headIndex[static_cast<size_t>(k)], 16));
      x += fm.height() * 0.8;
      p.drawText(QPointF(x, y + fm.ascent() * 0.95), t);
      x += fm.horizontalAdvance(t) + fm.height() * 0.5;
    }
  }
  p.restore();
}

TokenView::TokenView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(160, 160);
}

void TokenView::setData(TokenLinesData data) {
  m_data = std::move(data);
  const int rows = m_data.heads.empty() ? 0 : m_data.heads.front().rows;
  if (m_pinned >= rows) m_pinned = -1;
  if (m_hover >= rows) m_hover = -1;
  update();
}

void TokenView::setStyle(const HeatmapStyle& style) {
  m_style = style;
  update();
}

void TokenView::setPinnedQuery(int row) {
  if (row == m_pinned) return;
  m_pinned = row;
  update();
  emit queryPinned(row);
}

void TokenView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const TokenLinesLayout L = layoutTokenLines(this, QRectF(rect()), m_data, m_style);
  paintTokenLines(p, L, m_data, selectedQuery(), m_style);
}

void TokenView::mouseMoveEvent(QMouseEvent* e) {
  const int q = layoutTokenLines(this, QRectF(rect()), m_data, m_style).queryAt(e->position());
  if (q != m_hover) {
    m_hover = q;
    update();
  }
}

void TokenView::mouseReleaseEvent(QMouseEvent* e) {
  const int q = layoutTokenLines(this, QRectF(rect()), m_data, m_style).queryAt(e->position());
  setPinnedQuery(q == m_pinned ? -1 : q);
}

void TokenView::leaveEvent(QEvent*) {
  m_hover = -1;
  update();
}

}  // namespace atlas::ui
