#pragma once
// The tokenization of the current input as chips (one rounded box per token, wrapping like
// text). Clicking a chip selects that token in every view.
#include <QScrollArea>
#include <QWidget>
#include <vector>

#include "core/model/trace.h"

namespace atlas::ui {

class TokenChips : public QWidget {
  Q_OBJECT
 public:
  explicit TokenChips(QWidget* parent = nullptr);
  void setTokens(const std::vector<TokenInfo>& tokens);
  int tokenCount() const { return static_cast<int>(m_labels.size()); }
  QString label(int i) const { return m_labels.value(i); }
  void setSelected(int index);  // -1 = none
  // Marked chips (the token search's matches): a coloured outline, query and key apart.
  void setHighlighted(const QVector<int>& queries, const QVector<int>& keys);
  QVector<int> highlightedQueries() const { return m_queryMarks; }
  QVector<int> highlightedKeys() const { return m_keyMarks; }
  int selected() const { return m_selected; }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return {100, 24}; }

 signals:
  void tokenClicked(int index);  // -1 when the selection is cleared
  void tokensChanged();

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  QVector<QRectF> layoutChips(int width) const;  // cached per width: layouts ask often
  mutable int m_cachedWidth = -1;
  mutable QVector<QRectF> m_cachedRects;
  QStringList m_labels;
  QVector<int> m_ids;
  QVector<QRectF> m_rects;
  int m_selected = -1;
  QVector<int> m_queryMarks, m_keyMarks;
};

// A scroll area that is exactly as tall as its chips, up to `maxRows` rows, then scrolls.
class TokenChipsArea : public QScrollArea {
  Q_OBJECT
 public:
  explicit TokenChipsArea(TokenChips* chips, int maxRows = 3, QWidget* parent = nullptr);
  void refit();

 protected:
  void resizeEvent(QResizeEvent*) override;

 private:
  TokenChips* m_chips;
  int m_maxRows;
};

}  // namespace atlas::ui
