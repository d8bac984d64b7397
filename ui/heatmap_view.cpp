#include "ui/heatmap_view.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace atlas::ui {

HeatmapView::HeatmapView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(200, 160);
}

void HeatmapView::setData(HeatmapData data) {
  const bool sameShape = data.rows == m_data.rows && data.cols == m_data.cols;
  m_data = std::move(data);
  if (!sameShape) m_window = QRectF(0, 0, std::max(1, m_data.cols), std::max(1, m_data.rows));
  if (m_pinnedRow >= m_data.rows) m_pinnedRow = -1;
  if (m_hover.y() >= m_data.rows || m_hover.x() >= m_data.cols) m_hover = {-1, -1};
  rebuildRaster();
  update();
}

void HeatmapView::setStyle(const HeatmapStyle& style) {
  m_style = style;
  m_style.vectorCells = false;
  rebuildRaster();
  update();
}

void HeatmapView::setMapping(const ColorMapping& mapping) {
  m_style.mapping = mapping;
  rebuildRaster();
  update();
}

void HeatmapView::rebuildRaster() {
  m_raster.build(m_data, m_style.mapping, m_style.maskColor);
  m_mapper = std::make_unique<ValueMapper>(m_data, m_style.mapping);
  m_measures = measureHeatmap(this, m_data, m_style, *m_mapper);
}

int HeatmapView::rowAt(const QPointF& pos) const {
  const QPoint cell = currentLayout().cellAt(pos);
  return cell.y() >= 0 && cell.y() < m_data.rows && cell.x() >= 0 && cell.x() < m_data.cols ? cell.y() : -1;
}

void HeatmapView::setPinnedRow(int row) {
  if (row < -1 || row >= m_data.rows) row = -1;
  if (row == m_pinnedRow) return;
  m_pinnedRow = row;
  update();
  emit rowPinned(row);
}

void HeatmapView::setViewWindow(const QRectF& window) {
  m_window = window;
  clampWindow();
  update();
}

void HeatmapView::resetZoom() {
  m_window = QRectF(0, 0, std::max(1, m_data.cols), std::max(1, m_data.rows));
  update();
}

void HeatmapView::clampWindow() {
  const qreal cols = std::max(1, m_data.cols), rows = std::max(1, m_data.rows);
  // Never show fewer than ~3 cells across, nor more than the whole matrix.
  const qreal minW = std::min<qreal>(3, cols), minH = std::min<qreal>(3, rows);
  qreal w = std::clamp(m_window.width(), minW, cols);
  qreal h = std::clamp(m_window.height(), minH, rows);
  qreal x = std::clamp(m_window.x(), 0.0, cols - w);
  qreal y = std::clamp(m_window.y(), 0.0, rows - h);
  m_window = QRectF(x, y, w, h);
}

HeatmapLayout HeatmapView::currentLayout() const {
  return layoutHeatmap(this, QRectF(rect()), m_data, m_style, m_window, m_mapper.get(), &m_measures);
}

void HeatmapView::zoomBy(double factor, QPointF anchor) {
  if (m_data.empty() || factor <= 0) return;
  const HeatmapLayout L = currentLayout();
  const QPointF a(std::clamp(anchor.x(), L.cells.left(), L.cells.right()),
                  std::clamp(anchor.y(), L.cells.top(), L.cells.bottom()));
  // Keep the cell under the anchor where it is.
  const qreal cx = m_window.x() + (a.x() - L.cells.x()) / L.cellW;
  const qreal cy = m_window.y() + (a.y() - L.cells.y()) / L.cellH;
  const qreal w = m_window.width() / factor, h = m_window.height() / factor;
  const qreal cols = std::max(1, m_data.cols), rows = std::max(1, m_data.rows);
  const qreal minSide = std::min<qreal>(3, std::min(cols, rows));
  if (w < minSide || h < minSide) {
    const qreal s = minSide / std::min(w, h);
    m_window = QRectF(cx - (cx - m_window.x()) * (w * s) / m_window.width(),
                      cy - (cy - m_window.y()) * (h * s) / m_window.height(), w * s, h * s);
  } else {
    m_window = QRectF(cx - (cx - m_window.x()) / factor, cy - (cy - m_window.y()) / factor, w, h);
  }
  clampWindow();
  update();
}

void HeatmapView::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  QPainter p(this);
  const HeatmapLayout L = currentLayout();
  paintHeatmap(p, L, m_data, m_style, &m_raster, m_mapper.get());
  if (!m_data.empty()) {
    p.setClipRect(L.cells);
    p.setBrush(Qt::NoBrush);
    auto outline = [&](const QRectF& r) {
      p.setPen(QPen(QColor(255, 255, 255, 230), 3));
      p.drawRect(r);
      p.setPen(QPen(QColor(0, 0, 0, 230), 1.2));
      p.drawRect(r);
    };
    if (m_pinnedRow >= 0) {
      QRectF a = L.cellRect(m_pinnedRow, 0);
      outline(QRectF(L.cells.left(), a.top(), L.cells.width(), a.height()));
    }
    if (m_hover.x() >= 0) outline(L.cellRect(m_hover.y(), m_hover.x()));
  }
  m_lastPaintMs = timer.nsecsElapsed() / 1e6;
  emit painted();
}

void HeatmapView::wheelEvent(QWheelEvent* e) {
  const double delta = e->angleDelta().y() != 0 ? e->angleDelta().y() : e->angleDelta().x();
  zoomBy(std::pow(1.2, delta / 120.0), e->position());
  e->accept();
}

void HeatmapView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
  m_pressed = true;
  m_dragging = false;
  m_pressPos = e->position();
  m_pressWindow = m_window;
}

void HeatmapView::mouseMoveEvent(QMouseEvent* e) {
  const HeatmapLayout L = currentLayout();
  if (m_pressed) {
    const QPointF d = e->position() - m_pressPos;
    if (!m_dragging && d.manhattanLength() > 4) m_dragging = true;
    if (m_dragging) {
      m_window = m_pressWindow.translated(-d.x() / L.cellW, -d.y() / L.cellH);
      clampWindow();
      setCursor(Qt::ClosedHandCursor);
      update();
      return;
    }
  }
  QPoint cell = L.cellAt(e->position());
  if (cell.x() >= m_data.cols || cell.y() >= m_data.rows) cell = {-1, -1};
  if (cell != m_hover) {
    m_hover = cell;
    update();
    if (cell.x() >= 0) {
      emit cellHovered(cell.y(), cell.x());
      QToolTip::showText(e->globalPosition().toPoint(), describeCell(cell.y(), cell.x()), this);
    } else {
      QToolTip::hideText();
    }
  }
}

void HeatmapView::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || !m_pressed) return QWidget::mouseReleaseEvent(e);
  m_pressed = false;
  unsetCursor();
  if (m_dragging) {
    m_dragging = false;
    return;
  }
  const QPoint cell = currentLayout().cellAt(e->position());
  if (cell.y() < 0 || cell.y() >= m_data.rows) {
    setPinnedRow(-1);
    return;
  }
  if (cell.x() >= 0 && cell.x() < m_data.cols) emit cellClicked(cell.y(), cell.x());
  setPinnedRow(cell.y() == m_pinnedRow ? -1 : cell.y());
}

void HeatmapView::mouseDoubleClickEvent(QMouseEvent*) { resetZoom(); }

void HeatmapView::keyPressEvent(QKeyEvent* e) {
  const QPointF centre = currentLayout().cells.center();
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomBy(1.25, centre); break;
    case Qt::Key_Minus: zoomBy(0.8, centre); break;
    case Qt::Key_0: resetZoom(); break;
    case Qt::Key_Escape: setPinnedRow(-1); break;
    case Qt::Key_Up:
      if (m_data.rows > 0) setPinnedRow(std::max(0, m_pinnedRow - 1));
      break;
    case Qt::Key_Down:
      if (m_data.rows > 0) setPinnedRow(std::min(m_data.rows - 1, m_pinnedRow + 1));
      break;
    default: QWidget::keyPressEvent(e);
  }
}

void HeatmapView::leaveEvent(QEvent*) {
  if (m_hover.x() >= 0) {
    m_hover = {-1, -1};
    update();
  }
}

bool HeatmapView::event(QEvent* e) {
  // Tooltips are shown from mouseMoveEvent as the hovered cell changes; swallow Qt's own
  // delayed tooltip request so it does not hide ours.
  if (e->type() == QEvent::ToolTip) return true;
  return QWidget::event(e);
}

QString HeatmapView::describeCell(int row, int col) const {
  const QString q = row < m_data.rowLabels.size() ? m_data.rowLabels[row] : QString::number(row);
  const QString k = col < m_data.colLabels.size() ? m_data.colLabels[col] : QString::number(col);
  // Multi-argument arg() substitutes in one pass, so a label containing "%1" stays literal.
  const QString text = QString("%1 %2 <b>\u201C%3\u201D</b> &nbsp;\u2192&nbsp; %4 %5 <b>\u201C%6\u201D</b><br>")
                           .arg(m_data.rowAxis, QString::number(row), q.toHtmlEscaped(), m_data.colAxis,
                                QString::number(col), k.toHtmlEscaped());
  if (m_data.masked(row, col)) return text + "masked (this query may not see this key)";
  if (m_data.categories > 0)  // ids have no rank
    return text + QString("%1 %2").arg(m_data.valueName).arg(static_cast<int>(std::lround(m_data.at(row, col))));
  int allowed = 0;
  for (int j = 0; j < m_data.cols; ++j) allowed += m_data.masked(row, j) ? 0 : 1;
  return text + QString("%1: %2<br>rank %3 of %4 in its row")
                    .arg(m_data.valueName)
                    .arg(static_cast<double>(m_data.at(row, col)), 0, 'g', 4)
                    .arg(m_data.rankInRow(row, col))
                    .arg(allowed);
}

}  // namespace atlas::ui
