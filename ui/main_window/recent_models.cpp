#include "ui/main_window/recent_models.h"

#include <QMenu>
#include <QSettings>

namespace atlas::ui {

namespace {
constexpr int kMaxRecent = 8;
}  // namespace

RecentModels::RecentModels(QMenu* menu, std::function<void(const QString&)> open)
    : QObject(menu), m_menu(menu), m_open(std::move(open)) {
  rebuild();
}

void RecentModels::rebuild() {
  m_menu->clear();
  const QStringList recent = QSettings().value("recentModels").toStringList();
  for (const QString& spec : recent) {
    QAction* a = m_menu->addAction(spec);
    connect(a, &QAction::triggered, this, [this, spec] { m_open(spec); });
  }
  if (recent.isEmpty()) m_menu->addAction("(none yet)")->setEnabled(false);
  m_menu->addSeparator();
  m_menu->addAction("Clear", this, [this] {
    QSettings().remove("recentModels");
    rebuild();
  });
}

void RecentModels::add(const QString& spec) {
  QSettings s;
  QStringList recent = s.value("recentModels").toStringList();
  recent.removeAll(spec);
  recent.prepend(spec);
  while (recent.size() > kMaxRecent) recent.removeLast();
  s.setValue("recentModels", recent);
  rebuild();
}

}  // namespace atlas::ui
