#include "ui/views/heatmap_view.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

namespace atlas::ui {

HeatmapView::HeatmapView(QWidget* parent) : QWidget(parent) {
  connect(&m_fetch, &QFutureWatcher<HeatmapData>::finished, this, &HeatmapView::onWindowComputed);
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(200, 160);
}

void HeatmapView::setData(HeatmapData data) {
  const bool sameShape = data.totalRows() == m_data.totalRows() && data.totalCols() == m_data.totalCols() &&
                         (data.detail != nullptr) == (m_overview.detail != nullptr) &&
                         (data.detail || (data.rows == m_data.rows && data.cols == m_data.cols));
  const QRectF kept = matrixWindow();
  ++m_generation;
  m_overview = data.detail ? data : HeatmapData();
  m_data = std::move(data);
  if (sameShape) setMatrixWindow(kept);
  else m_window = QRectF(0, 0, std::max(1, m_data.cols), std::max(1, m_data.rows));
  if (m_pinnedRow >= m_data.totalRows()) m_pinnedRow = -1;
  if (m_hover.y() >= m_data.rows || m_hover.x() >= m_data.cols) m_hover = {-1, -1};
  m_overviewCache.valid = false;
  rebuildRaster();
  if (sameShape) clampWindow();  // a zoomed-in view of a large map fetches its window again
  update();
}

void HeatmapView::setStyle(const HeatmapStyle& style) {
  m_style = style;
  m_style.vectorCells = false;
  m_overviewCache.valid = false;
  rebuildRaster();
  update();
}

void HeatmapView::setMapping(const ColorMapping& mapping) {
  m_style.mapping = mapping;
  m_overviewCache.valid = false;
  rebuildRaster();
  update();
}

void HeatmapView::showWindow(HeatmapData window) {
  const QRectF t = matrixWindow();
  if (m_data.pooled()) {
    m_overviewCache.raster = std::move(m_raster);
    m_overviewCache.mapper = std::move(m_mapper);
    m_overviewCache.measures = m_measures;
    m_overviewCache.valid = true;
  }
  m_data = std::move(window);
  setMatrixWindow(t);
  m_hover = {-1, -1};
  rebuildRaster();
}

void HeatmapView::showOverview() {
  const QRectF t = matrixWindow();
  m_data = m_overview;
  setMatrixWindow(t);
  m_hover = {-1, -1};
  if (!m_overviewCache.valid) return rebuildRaster();
  m_raster = std::move(m_overviewCache.raster);
  m_mapper = std::move(m_overviewCache.mapper);  // built over m_data, which holds the overview again
  m_measures = m_overviewCache.measures;
  m_overviewCache.valid = false;
}

void HeatmapView::rebuildRaster() {
  m_raster.build(m_data, m_style.mapping, m_style.maskColor);
  m_mapper = std::make_unique<ValueMapper>(m_data, m_style.mapping);
  m_measures = measureHeatmap(this, m_data, m_style, *m_mapper);
}

int HeatmapView::rowAt(const QPointF& pos) const {
  const QPoint cell = currentLayout().cellAt(pos);
  return cell.y() >= 0 && cell.y() < m_data.rows && cell.x() >= 0 && cell.x() < m_data.cols ? fullRow(cell.y()) : -1;
}

int HeatmapView::localRow(int row) const {
  if (row < m_data.rowOrigin) return -1;
  const int local = (row - m_data.rowOrigin) / std::max(1, m_data.rowStep);
  return local < m_data.rows ? local : -1;
}

void HeatmapView::setPinnedRow(int row) {
  if (row < -1 || row >= m_data.totalRows()) row = -1;
  if (row == m_pinnedRow) return;
  m_pinnedRow = row;
  update();
  emit rowPinned(row);
}

QRectF HeatmapView::matrixWindow() const {
  return QRectF(m_data.colOrigin + m_window.x() * m_data.colStep, m_data.rowOrigin + m_window.y() * m_data.rowStep,
                m_window.width() * m_data.colStep, m_window.height() * m_data.rowStep);
}

void HeatmapView::setMatrixWindow(const QRectF& t) {
  const qreal cs = std::max(1, m_data.colStep), rs = std::max(1, m_data.rowStep);
  m_window = QRectF((t.x() - m_data.colOrigin) / cs, (t.y() - m_data.rowOrigin) / rs, t.width() / cs, t.height() / rs);
}

void HeatmapView::setViewWindow(const QRectF& window) {
  m_window = window;
  clampWindow();
  update();
}

void HeatmapView::resetZoom() {
  if (m_overview.detail && !m_data.pooled()) showOverview();
  m_window = QRectF(0, 0, std::max(1, m_data.cols), std::max(1, m_data.rows));
  update();
}

void HeatmapView::clampWindow() {
  // In full-matrix units, so a window of a large map pans across the whole map.
  const qreal cols = std::max(1, m_data.totalCols()), rows = std::max(1, m_data.totalRows());
  const QRectF t = matrixWindow();
  // Never show fewer than ~3 cells across, nor more than the whole matrix.
  const qreal minW = std::min<qreal>(3, cols), minH = std::min<qreal>(3, rows);
  const qreal w = std::clamp(t.width(), minW, cols);
  const qreal h = std::clamp(t.height(), minH, rows);
  const qreal x = std::clamp(t.x(), 0.0, cols - w);
  const qreal y = std::clamp(t.y(), 0.0, rows - h);
  setMatrixWindow(QRectF(x, y, w, h));
  updateDetail();
}

void HeatmapView::updateDetail() {
  if (!m_overview.detail) return;
  const QRectF t = matrixWindow();
  const bool wantExact = t.width() <= kDetailTokens && t.height() <= kDetailTokens;
  if (wantExact) {
    const QRectF have(m_data.colOrigin, m_data.rowOrigin, m_data.cols, m_data.rows);
    if (!m_data.pooled() && have.contains(t)) return;
    if (m_fetchOpen && m_fetchGeneration == m_generation && QRectF(m_fetchRange).contains(t)) return;
    // The visible part grown by half its size on every side: panning stays inside it a while.
    auto range = [](qreal lo, qreal len, int total) {
      const int a = std::clamp(static_cast<int>(std::floor(lo - len / 2)), 0, total);
      const int b = std::clamp(static_cast<int>(std::ceil(lo + len + len / 2)), a, total);
      return std::pair<int, int>(a, b);
    };
    const auto [r0, r1] = range(t.y(), t.height(), m_overview.totalRows());
    const auto [c0, c1] = range(t.x(), t.width(), m_overview.totalCols());
    if (!m_fetchOpen) {  // else the open one starts the next when it is handled (onWindowComputed)
      m_fetchOpen = true;
      m_fetchRange = QRect(QPoint(c0, r0), QPoint(c1 - 1, r1 - 1));
      m_fetchGeneration = m_generation;
      m_fetch.setFuture(QtConcurrent::run([detail = m_overview.detail, r0 = r0, r1 = r1, c0 = c0, c1 = c1] {
        return detail->window(r0, r1, c0, c1);
      }));
    }
    if (m_data.pooled()) return;  // the overview stands in meanwhile
  } else if (m_data.pooled()) {
    return;
  }
  showOverview();
}

void HeatmapView::onWindowComputed() {
  m_fetchOpen = false;
  if (m_fetchGeneration != m_generation) return updateDetail();  // new data: its own window
  const QRectF t = matrixWindow();
  const bool wantExact = t.width() <= kDetailTokens && t.height() <= kDetailTokens;
  HeatmapData window = m_fetch.result();
  if (wantExact && QRectF(window.colOrigin, window.rowOrigin, window.cols, window.rows).contains(t)) {
    showWindow(std::move(window));
    update();
    emit detailReady();
  } else {
    updateDetail();  // the view moved on while this window was computed
  }
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
    if (const int pinned = m_pinnedRow >= 0 ? localRow(m_pinnedRow) : -1; pinned >= 0) {
      QRectF a = L.cellRect(pinned, 0);
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
  m_pressWindow = matrixWindow();
}

void HeatmapView::mouseMoveEvent(QMouseEvent* e) {
  const HeatmapLayout L = currentLayout();
  if (m_pressed) {
    const QPointF d = e->position() - m_pressPos;
    if (!m_dragging && d.manhattanLength() > 4) m_dragging = true;
    if (m_dragging) {
      setMatrixWindow(m_pressWindow.translated(-d.x() / L.cellW * m_data.colStep, -d.y() / L.cellH * m_data.rowStep));
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
      emit cellHovered(fullRow(cell.y()), fullCol(cell.x()));
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
  if (cell.x() >= 0 && cell.x() < m_data.cols) emit cellClicked(fullRow(cell.y()), fullCol(cell.x()));
  const int row = fullRow(cell.y());
  setPinnedRow(row == m_pinnedRow ? -1 : row);
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
      if (m_data.rows > 0) setPinnedRow(std::min(m_data.totalRows() - 1, m_pinnedRow + 1));
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
  if (m_data.pooled()) {  // an overview cell: a block of queries and keys
    const QString block = QString("%1 %2 &nbsp;\u2192&nbsp; %3 %4<br>").arg(m_data.rowAxis, q, m_data.colAxis, k);
    if (m_data.masked(row, col)) return block + "masked (no query of the block may see a key of it)";
    return block + QString("%1: %2<br>zoom in for every weight").arg(m_data.valueName)
                       .arg(static_cast<double>(m_data.at(row, col)), 0, 'g', 4);
  }
  const QString text = QString("%1 %2 <b>\u201C%3\u201D</b> &nbsp;\u2192&nbsp; %4 %5 <b>\u201C%6\u201D</b><br>")
                           .arg(m_data.rowAxis, QString::number(fullRow(row)), q.toHtmlEscaped(), m_data.colAxis,
                                QString::number(fullCol(col)), k.toHtmlEscaped());
  if (m_data.masked(row, col)) return text + "masked (this query may not see this key)";
  if (m_data.categories > 0)  // ids have no rank
    return text + QString("%1 %2").arg(m_data.valueName).arg(static_cast<int>(std::lround(m_data.at(row, col))));
  int allowed = 0;
  for (int j = 0; j < m_data.cols; ++j) allowed += m_data.masked(row, j) ? 0 : 1;
  const bool wholeRow = m_data.cols == m_data.totalCols();
  return text + QString(wholeRow ? "%1: %2<br>rank %3 of %4 in its row" : "%1: %2<br>rank %3 of the %4 keys shown")
                    .arg(m_data.valueName)
                    .arg(static_cast<double>(m_data.at(row, col)), 0, 'g', 4)
                    .arg(m_data.rankInRow(row, col))
                    .arg(allowed);
}

}  // namespace atlas::ui
