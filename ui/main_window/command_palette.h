#pragma once
// The command palette (Ctrl+K): every action of the window's menus (views, panels, presets,
// demos, exports, settings) in one list filtered as you type; Enter or a click runs the first
// (or chosen) match. Entries are gathered when the palette opens, so panels and presets added
// later are in it.
#include <QDialog>
#include <QPointer>
#include <QString>
#include <vector>

class QAction;
class QLineEdit;
class QListWidget;
class QMenuBar;

namespace atlas::ui {

class CommandPalette : public QDialog {
  Q_OBJECT
 public:
  struct Entry {
    QString text;  // "View › Variant panels › Ablation sweep"
    QPointer<QAction> action;
  };
  // Every enabled, non-separator action of the bar's menus, with its menu path.
  static std::vector<Entry> menuEntries(const QMenuBar* bar);
  // Whether every word of `query` occurs in `text`, ignoring case.
  static bool matches(const QString& text, const QString& query);

  CommandPalette(std::vector<Entry> entries, QWidget* parent = nullptr);
  QLineEdit* filterEdit() const { return m_filter; }
  QListWidget* list() const { return m_list; }
  // Runs the current entry (as Enter does) and closes; false when nothing matches.
  bool runCurrent();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void refilter();
  std::vector<Entry> m_entries;
  QLineEdit* m_filter;
  QListWidget* m_list;
};

}  // namespace atlas::ui
