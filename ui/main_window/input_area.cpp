#include "ui/main_window/input_area.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "ui/views/token_chips.h"

namespace atlas::ui {

namespace {

QPlainTextEdit* makeTextBox(const QString& placeholder, int lines) {
  auto* e = new QPlainTextEdit;
  e->setPlaceholderText(placeholder);
  e->setTabChangesFocus(true);
  const int h = e->fontMetrics().lineSpacing() * lines + 14;
  e->setFixedHeight(h);
  return e;
}

}  // namespace

InputArea::InputArea(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(4);

  auto* srcRow = new QHBoxLayout;
  auto* srcLabel = new QLabel("&Input:");
  m_source = makeTextBox(kSourcePlaceholder, 2);
  m_source->setObjectName("sourceEdit");
  srcLabel->setBuddy(m_source);
  srcRow->addWidget(srcLabel, 0, Qt::AlignTop);
  srcRow->addWidget(m_source, 1);
  v->addLayout(srcRow);

  m_targetRow = new QWidget;
  auto* tgtRow = new QHBoxLayout(m_targetRow);
  tgtRow->setContentsMargins(0, 0, 0, 0);
  auto* tgtLabel = new QLabel("&Target:");
  m_target = makeTextBox("Decoder input of the encoder-decoder model", 1);
  m_target->setObjectName("targetEdit");
  tgtLabel->setBuddy(m_target);
  tgtRow->addWidget(tgtLabel, 0, Qt::AlignTop);
  tgtRow->addWidget(m_target, 1);
  v->addWidget(m_targetRow);
  m_targetRow->hide();

  m_sourceChips = new TokenChips;
  m_sourceChips->setObjectName("sourceChips");
  m_sourceChips->setToolTip("Source tokens; click one to select it in every view");
  m_targetChips = new TokenChips;
  m_targetChips->setObjectName("targetChips");
  m_targetChips->setToolTip("Target tokens; click one to select it in every view");
  v->addWidget(new TokenChipsArea(m_sourceChips));
  m_targetChipsArea = new TokenChipsArea(m_targetChips, 2);
  v->addWidget(m_targetChipsArea);
  m_targetChipsArea->hide();

  connect(m_source, &QPlainTextEdit::textChanged, this, &InputArea::sourceEdited);
  connect(m_target, &QPlainTextEdit::textChanged, this, [this] {
    m_targetChipsArea->setVisible(m_targetRow->isVisible());
    emit targetEdited();
  });
  connect(m_sourceChips, &TokenChips::tokenClicked, this, &InputArea::sourceTokenClicked);
  connect(m_targetChips, &TokenChips::tokenClicked, this, &InputArea::targetTokenClicked);
}

QString InputArea::source() const { return m_source->toPlainText(); }
QString InputArea::target() const { return m_target->toPlainText(); }

void InputArea::setSource(const QString& text, bool quiet) {
  const QSignalBlocker block(quiet ? m_source : nullptr);
  m_source->setPlainText(text);
}

void InputArea::setTarget(const QString& text, bool quiet) {
  const QSignalBlocker block(quiet ? m_target : nullptr);
  m_target->setPlainText(text);
}

void InputArea::setTargetShown(bool shown) {
  m_targetRow->setVisible(shown);
  m_targetChipsArea->setVisible(shown);
}

bool InputArea::targetShown() const { return m_targetRow->isVisible(); }

void InputArea::setSourceHint(const QString& hint) {
  m_source->setPlaceholderText(hint.isEmpty() ? QString(kSourcePlaceholder) : hint);
}

void InputArea::focusSource() { m_source->setFocus(); }

void InputArea::setTokens(const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target) {
  m_sourceChips->setTokens(source);
  m_targetChips->setTokens(target);
}

void InputArea::selectToken(int token, bool targetSide) {
  m_sourceChips->setSelected(targetSide ? -1 : token);
  m_targetChips->setSelected(targetSide ? token : -1);
}

void InputArea::setSearchMatches(const QVector<int>& queries, const QVector<int>& keys) {
  m_sourceChips->setHighlighted(queries, keys);
}

}  // namespace atlas::ui
