#pragma once
// The window's input: the source text box (the model re-runs as you type), the target box of an
// encoder-decoder model, and the token chips of the last run under each (click a chip to select
// that query everywhere; the token search's matches are outlined).
#include <QString>
#include <QVector>
#include <QWidget>
#include <vector>

#include "core/tokenizers/tokenizer.h"

class QPlainTextEdit;

namespace atlas::ui {

class TokenChips;

// The source box's hint when it holds text (image mode replaces it, image_input.h).
inline const char* const kSourcePlaceholder = "Type text; the model runs as you type";

class InputArea : public QWidget {
  Q_OBJECT
 public:
  explicit InputArea(QWidget* parent = nullptr);

  QString source() const;
  QString target() const;  // the box's text, shown or not
  // quiet: no edited signal (the window sets a text it then runs itself).
  void setSource(const QString& text, bool quiet = false);
  void setTarget(const QString& text, bool quiet = false);
  void setTargetShown(bool shown);  // encoder-decoder models only
  bool targetShown() const;
  // The source box's hint (empty: kSourcePlaceholder); image mode says what the image became.
  void setSourceHint(const QString& hint);
  void focusSource();

  // The run's tokens under the boxes, the selected query (on the target chips when the map on
  // screen has the decoder's rows), the token search's matches on the source chips.
  void setTokens(const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target);
  void selectToken(int token, bool targetSide);
  void setSearchMatches(const QVector<int>& queries, const QVector<int>& keys);

 signals:
  void sourceEdited();
  void targetEdited();
  void sourceTokenClicked(int token);
  void targetTokenClicked(int token);

 private:
  QPlainTextEdit* m_source;
  QPlainTextEdit* m_target;
  QWidget* m_targetRow;
  TokenChips* m_sourceChips;
  TokenChips* m_targetChips;
  QWidget* m_targetChipsArea;
};

}  // namespace atlas::ui
