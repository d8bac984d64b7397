#pragma once
// The gallery of built-in presets, grouped by family, with each preset's one-line description,
// and a search box: typing filters the list (name or description, any case) and selects the
// best match (the exact name, else a name starting with the text, else the first shown), so
// typing a preset's name and Enter opens it.
#include <QDialog>

class QLineEdit;
class QTreeWidget;

namespace atlas::ui {

class PresetGallery : public QDialog {
  Q_OBJECT
 public:
  explicit PresetGallery(const QString& current, QWidget* parent = nullptr);
  QString selectedSpec() const;  // "preset:NAME" or "demo:NAME"; empty when none

 private:
  void filter(const QString& text);
  QLineEdit* m_search;
  QTreeWidget* m_tree;
};

}  // namespace atlas::ui
