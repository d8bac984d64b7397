#pragma once
// Model > Recent: the last eight models opened (QSettings "recentModels"), newest first, with
// Clear.
#include <QObject>
#include <QString>
#include <functional>

class QMenu;

namespace atlas::ui {

class RecentModels : public QObject {
  Q_OBJECT
 public:
  // Fills `menu`; choosing an entry calls open(spec).
  RecentModels(QMenu* menu, std::function<void(const QString&)> open);
  void add(const QString& spec);

 private:
  void rebuild();

  QMenu* m_menu;
  std::function<void(const QString&)> m_open;
};

}  // namespace atlas::ui
