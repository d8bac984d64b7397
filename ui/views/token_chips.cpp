#include "ui/views/token_chips.h"

#include "ui/views/heatmap_painter.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>

#include "ui/views/heatmap_data.h"

namespace atlas::ui {

TokenChips::TokenChips(QWidget* parent) : QWidget(parent) {
  QSizePolicy sp(QSizePolicy::Preferred, QSizePolicy::Preferred);
  sp.setHeightForWidth(true);
  setSizePolicy(sp);
}

void TokenChips::setTokens(const std::vector<TokenInfo>& tokens) {
  m_labels.clear();
  m_ids.clear();
  for (const auto& t : tokens) {
    m_labels << displayLabel(t.label);
    m_ids << t.id;
  }
  if (m_selected >= m_labels.size()) m_selected = -1;
  m_cachedWidth = -1;
  m_rects = layoutChips(width());
  updateGeometry();
  update();
  emit tokensChanged();
}

void TokenChips::setSelected(int index) {
  if (index >= m_labels.size()) index = -1;
  if (index == m_selected) return;
  m_selected = index;
  update();
}

QVector<QRectF> TokenChips::layoutChips(int width) const {
  if (width == m_cachedWidth) return m_cachedRects;
  QVector<QRectF> rects;
  const QFontMetricsF fm(font());
  const qreal h = fm.height() + 6, gap = 4;
  qreal x = 2, y = 2;
  for (const QString& s : m_labels) {
    const qreal w = std::min<qreal>(fm.horizontalAdvance(s) + 12, std::max(40, width - 4));
    if (x + w > width - 2 && x > 2) {
      x = 2;
      y += h + gap;
    }
    rects << QRectF(x, y, w, h);
    x += w + gap;
  }
  m_cachedWidth = width;
  m_cachedRects = rects;
  return rects;
}

int TokenChips::heightForWidth(int width) const {
  const auto rects = layoutChips(width);
  return rects.isEmpty() ? QFontMetrics(font()).height() + 10 : static_cast<int>(rects.back().bottom()) + 3;
}

QSize TokenChips::sizeHint() const { return {400, heightForWidth(std::max(width(), 400))}; }

void TokenChips::resizeEvent(QResizeEvent*) { m_rects = layoutChips(width()); }

void TokenChips::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QPalette pal = palette();
  const QFontMetricsF fm(font());
  if (m_labels.isEmpty()) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(4, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, "(no tokens yet)");
    return;
  }
  for (int i = 0; i < m_rects.size() && i < m_labels.size(); ++i) {
    const QRectF r = m_rects[i];
    const bool sel = i == m_selected;
    QPainterPath path;
    path.addRoundedRect(r, 5, 5);
    p.fillPath(path, sel ? pal.color(QPalette::Highlight) : pal.color(QPalette::AlternateBase));
    p.setPen(QPen(sel ? pal.color(QPalette::Highlight) : pal.color(QPalette::Mid), 1));
    p.drawPath(path);
    p.setPen(sel ? pal.color(QPalette::HighlightedText) : pal.color(QPalette::Text));
    p.drawText(r, Qt::AlignCenter, fm.elidedText(m_labels[i], Qt::ElideRight, r.width() - 8));
    // Search matches: orange outline for a query match, teal for a key match (both: two rings).
    if (m_queryMarks.contains(i)) {
      p.setPen(QPen(kQueryMarkColor, 2));
      p.drawRoundedRect(r.adjusted(-1, -1, 1, 1), 6, 6);
    }
    if (m_keyMarks.contains(i)) {
      p.setPen(QPen(kKeyMarkColor, 2));
      p.drawRoundedRect(r.adjusted(1.5, 1.5, -1.5, -1.5), 4, 4);
    }
  }
}

void TokenChips::setHighlighted(const QVector<int>& queries, const QVector<int>& keys) {
  m_queryMarks = queries;
  m_keyMarks = keys;
  update();
}

void TokenChips::mouseReleaseEvent(QMouseEvent* e) {
  for (int i = 0; i < m_rects.size(); ++i)
    if (m_rects[i].contains(e->position())) {
      const int idx = i == m_selected ? -1 : i;
      setSelected(idx);
      emit tokenClicked(idx);
      return;
    }
}

TokenChipsArea::TokenChipsArea(TokenChips* chips, int maxRows, QWidget* parent)
    : QScrollArea(parent), m_chips(chips), m_maxRows(maxRows) {
  setWidget(chips);
  setWidgetResizable(true);
  setFrameShape(QFrame::NoFrame);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  connect(chips, &TokenChips::tokensChanged, this, &TokenChipsArea::refit);
  refit();
}

void TokenChipsArea::refit() {
  const int row = QFontMetrics(m_chips->font()).height() + 10;  // chip height + gap
  const int want = m_chips->heightForWidth(std::max(100, viewport()->width()));
  setFixedHeight(std::min(want, row * m_maxRows + 2) + 2 * frameWidth());
}

void TokenChipsArea::resizeEvent(QResizeEvent* e) {
  QScrollArea::resizeEvent(e);
  refit();
}

}  // namespace atlas::ui
