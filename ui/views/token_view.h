#pragma once
// Token view (after BertViz, Vig 2019): query tokens in a left column, key tokens in a right
// column, a line from the selected query to every key it attends to, its width and opacity
// by the weight. Several heads are drawn together in distinct colours. Hovering a query
// token selects it; clicking pins it.
#include <QWidget>
#include <vector>

#include "ui/views/heatmap_painter.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

struct TokenLinesData {
  std::vector<HeatmapData> heads;  // [Lq, Lk] each, same shape
  std::vector<int> headIndex;      // head number (or HeadAggregate) of each entry
  QString title;
};

struct TokenLinesLayout {
  QRectF bounds, title, left, right;  // label columns
  qreal rowH = 0;
  int rows = 0, cols = 0;
  QFont font, titleFont;
  QPointF leftAnchor(int i) const;
  QPointF rightAnchor(int j) const;
  int queryAt(const QPointF& pos) const;  // -1 outside the left column
};

QColor headColor(int index, int count);  // evenly spaced hues, readable on white and dark
TokenLinesLayout layoutTokenLines(const QPaintDevice* device, const QRectF& bounds,
                                  const TokenLinesData& data, const HeatmapStyle& style);
// selectedQuery < 0 draws every query's lines faintly.
void paintTokenLines(QPainter& p, const TokenLinesLayout& layout, const TokenLinesData& data,
                     int selectedQuery, const HeatmapStyle& style);

class TokenView : public QWidget {
  Q_OBJECT
 public:
  explicit TokenView(QWidget* parent = nullptr);
  void setData(TokenLinesData data);
  const TokenLinesData& data() const { return m_data; }
  void setStyle(const HeatmapStyle& style);
  int selectedQuery() const { return m_pinned >= 0 ? m_pinned : m_hover; }
  void setPinnedQuery(int row);
  QSize sizeHint() const override { return {360, 480}; }

 signals:
  void queryPinned(int row);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void leaveEvent(QEvent*) override;

 private:
  TokenLinesData m_data;
  HeatmapStyle m_style;
  int m_hover = -1, m_pinned = -1;
};

}  // namespace atlas::ui
