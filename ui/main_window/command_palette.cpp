// Command palette (command_palette.h).
#include "ui/main_window/command_palette.h"

#include <QAction>
#include <QKeyEvent>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QVBoxLayout>
#include <algorithm>

namespace atlas::ui {

namespace {

QString plain(QString text) {
  text.remove('&');
  text.replace("\u2026", "");
  return text.trimmed();
}

void collect(const QMenu* menu, const QString& path, std::vector<CommandPalette::Entry>& out) {
  for (QAction* a : menu->actions()) {
    if (a->isSeparator() || !a->isVisible()) continue;
    const QString here = path + " \u203A " + plain(a->text());
    if (QMenu* sub = a->menu()) {
      collect(sub, here, out);
      continue;
    }
    if (a->isEnabled()) out.push_back({here, a});
  }
}

}  // namespace

std::vector<CommandPalette::Entry> CommandPalette::menuEntries(const QMenuBar* bar) {
  std::vector<Entry> out;
  for (QAction* top : bar->actions())
    if (QMenu* m = top->menu()) collect(m, plain(top->text()), out);
  return out;
}

bool CommandPalette::matches(const QString& text, const QString& query) {
  for (const QString& word : query.split(' ', Qt::SkipEmptyParts))
    if (!text.contains(word, Qt::CaseInsensitive)) return false;
  return true;
}

CommandPalette::CommandPalette(std::vector<Entry> entries, QWidget* parent)
    : QDialog(parent), m_entries(std::move(entries)) {
  setObjectName("commandPalette");
  setWindowTitle("Command palette");
  m_filter = new QLineEdit;
  m_filter->setPlaceholderText("Type to find an action, a panel, a preset\u2026");
  m_list = new QListWidget;
  auto* v = new QVBoxLayout(this);
  v->addWidget(m_filter);
  v->addWidget(m_list);
  resize(560, 420);
  connect(m_filter, &QLineEdit::textChanged, this, &CommandPalette::refilter);
  connect(m_filter, &QLineEdit::returnPressed, this, [this] { runCurrent(); });
  connect(m_list, &QListWidget::itemActivated, this, [this] { runCurrent(); });
  // Up and down move through the matches while typing.
  m_filter->installEventFilter(this);
  refilter();
}

void CommandPalette::refilter() {
  m_list->clear();
  for (size_t i = 0; i < m_entries.size(); ++i)
    if (m_entries[i].action && matches(m_entries[i].text, m_filter->text())) {
      auto* item = new QListWidgetItem(m_entries[i].text, m_list);
      item->setData(Qt::UserRole, static_cast<int>(i));
      if (!m_entries[i].action->shortcut().isEmpty())
        item->setToolTip(m_entries[i].action->shortcut().toString(QKeySequence::NativeText));
    }
  if (m_list->count() > 0) m_list->setCurrentRow(0);
}

bool CommandPalette::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_filter && event->type() == QEvent::KeyPress) {
    const int key = static_cast<QKeyEvent*>(event)->key();
    if ((key == Qt::Key_Down || key == Qt::Key_Up) && m_list->count() > 0) {
      const int row = std::clamp(m_list->currentRow() + (key == Qt::Key_Down ? 1 : -1), 0, m_list->count() - 1);
      m_list->setCurrentRow(row);
      return true;
    }
  }
  return QDialog::eventFilter(watched, event);
}

bool CommandPalette::runCurrent() {
  QListWidgetItem* item = m_list->currentItem();
  if (!item) return false;
  const QPointer<QAction> action = m_entries[size_t(item->data(Qt::UserRole).toInt())].action;
  accept();
  if (action) action->trigger();
  return action != nullptr;
}

}  // namespace atlas::ui
