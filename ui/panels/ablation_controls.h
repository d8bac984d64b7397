#pragma once
// The ablation panel's inputs: layers and heads to drop (the CLI's --drop-layers /
// --drop-heads syntax) and a LayerDrop rate; "Compare" emits the parsed spec, a parse error
// is shown under the fields with the core's message.
#include <QJsonObject>
#include <QWidget>

#include "core/analysis/ablation.h"

class QLineEdit;
class QDoubleSpinBox;
class QLabel;

namespace atlas::ui {

class AblationControls : public QWidget {
  Q_OBJECT
 public:
  explicit AblationControls(QWidget* parent = nullptr);
  AblationSpec spec() const;  // throws AtlasError on bad text
  void setInput(const QString& layers, const QString& heads, double rate = 0.0);
  // As the Compare button: the parsed spec emitted by applied(), or the problem shown.
  void apply();
  // The fields as typed, for a workspace: {"drop_layers", "drop_heads", "layerdrop_rate"}; a
  // state with another key or a value of the wrong type is refused (AtlasError, naming it).
  QJsonObject inputs() const;
  void setInputs(const QJsonObject& state);
  void setMessage(const QString& text);
  QString message() const;

 signals:
  void applied(const atlas::AblationSpec& spec);
  void cleared();

 private:
  QLineEdit* m_layers;
  QLineEdit* m_heads;
  QDoubleSpinBox* m_rate;
  QLabel* m_message;
};

}  // namespace atlas::ui
