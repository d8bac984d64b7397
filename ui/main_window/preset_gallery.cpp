#include "ui/main_window/preset_gallery.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

#include "core/model/demos.h"
#include "core/model/presets.h"

namespace atlas::ui {

PresetGallery::PresetGallery(const QString& current, QWidget* parent) : QDialog(parent) {
  setWindowTitle("Preset gallery");
  resize(720, 420);
  m_tree = new QTreeWidget;
  m_tree->setColumnCount(2);
  m_tree->setHeaderLabels({"Preset", "Description"});
  m_tree->setRootIsDecorated(true);
  m_tree->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  std::map<QString, QTreeWidgetItem*> families;
  for (const PresetInfo& p : list_presets()) {
    const QString fam = p.family.empty() ? QString("other") : QString::fromStdString(p.family);
    auto& group = families[fam];
    if (!group) {
      group = new QTreeWidgetItem(m_tree, {fam});
      QFont f = group->font(0);
      f.setBold(true);
      group->setFont(0, f);
      group->setFlags(Qt::ItemIsEnabled);
      group->setExpanded(true);
    }
    auto* item = new QTreeWidgetItem(group, {QString::fromStdString(p.name), QString::fromStdString(p.description)});
    item->setToolTip(1, QString::fromStdString(p.description));
    item->setData(0, Qt::UserRole, "preset:" + QString::fromStdString(p.name));
    if ("preset:" + item->text(0) == current) m_tree->setCurrentItem(item);
  }
  // Trained demos first: they show learned attention, not random weights.
  auto* trained = new QTreeWidgetItem({"trained demos"});
  m_tree->insertTopLevelItem(0, trained);
  QFont bold = trained->font(0);
  bold.setBold(true);
  trained->setFont(0, bold);
  trained->setFlags(Qt::ItemIsEnabled);
  for (const DemoInfo& d : list_demos()) {
    const QString tip = QString::fromStdString(d.description + "\nSample input: " + d.sample +
                                               "\nTrained by: " + d.command);
    auto* item = new QTreeWidgetItem(trained, {QString::fromStdString(d.name), QString::fromStdString(d.description)});
    item->setToolTip(1, tip);
    item->setData(0, Qt::UserRole, "demo:" + QString::fromStdString(d.name));
    if ("demo:" + item->text(0) == current) m_tree->setCurrentItem(item);
  }
  trained->setExpanded(true);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(m_tree, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
    if (item->data(0, Qt::UserRole).isValid()) accept();
  });
  m_search = new QLineEdit;
  m_search->setObjectName("presetSearch");
  m_search->setPlaceholderText("Search presets and demos (name or description)");
  m_search->setClearButtonEnabled(true);
  connect(m_search, &QLineEdit::textChanged, this, &PresetGallery::filter);
  connect(m_search, &QLineEdit::returnPressed, this, [this] {
    if (!selectedSpec().isEmpty()) accept();
  });
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(new QLabel("Built-in models: trained demos, and presets with weights initialised from the preset's seed. "
                               "Double-click to open, or type a name and press Enter."));
  layout->addWidget(m_search);
  layout->addWidget(m_tree);
  layout->addWidget(buttons);
  m_search->setFocus();  // typing starts a search
}

void PresetGallery::filter(const QString& text) {
  const QString needle = text.trimmed();
  QTreeWidgetItem* exact = nullptr;
  QTreeWidgetItem* prefix = nullptr;
  QTreeWidgetItem* first = nullptr;
  for (int g = 0; g < m_tree->topLevelItemCount(); ++g) {
    QTreeWidgetItem* group = m_tree->topLevelItem(g);
    int shown = 0;
    for (int i = 0; i < group->childCount(); ++i) {
      QTreeWidgetItem* item = group->child(i);
      const QString name = item->text(0);
      const bool match = needle.isEmpty() || name.contains(needle, Qt::CaseInsensitive) ||
                         item->text(1).contains(needle, Qt::CaseInsensitive);
      item->setHidden(!match);
      if (!match) continue;
      ++shown;
      if (!first) first = item;
      if (!exact && name.compare(needle, Qt::CaseInsensitive) == 0) exact = item;
      if (!prefix && name.startsWith(needle, Qt::CaseInsensitive)) prefix = item;
    }
    group->setHidden(shown == 0);
  }
  if (needle.isEmpty()) return;  // keep the current model selected
  QTreeWidgetItem* best = exact ? exact : prefix ? prefix : first;
  if (best) m_tree->setCurrentItem(best);
  else m_tree->setCurrentItem(nullptr);
}

QString PresetGallery::selectedSpec() const {
  const QTreeWidgetItem* item = m_tree->currentItem();
  return item && !item->isHidden() ? item->data(0, Qt::UserRole).toString() : QString();
}

}  // namespace atlas::ui
