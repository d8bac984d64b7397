#pragma once
// The gallery of built-in presets, grouped by family, with each preset's one-line description.
#include <QDialog>

class QTreeWidget;

namespace atlas::ui {

class PresetGallery : public QDialog {
  Q_OBJECT
 public:
  explicit PresetGallery(const QString& current, QWidget* parent = nullptr);
  QString selectedSpec() const;  // "preset:NAME" or "demo:NAME"; empty when none

 private:
  QTreeWidget* m_tree;
};

}  // namespace atlas::ui
