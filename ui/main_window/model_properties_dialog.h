#pragma once
// Model > Properties: what the loaded model is and how its weights are held (per encoding and per
// tensor: a quantized GGUF or 16-bit checkpoint stays as the file stores it), as `atlas info`
// prints it.
#include <QDialog>

namespace atlas {
class Model;
}

namespace atlas::ui {

// A window-modal dialog (deleted on close; the window cannot load another model under it) with
// the summary (objectName "summary") and one row per
// tensor: name, shape, encoding, MB (objectName "tensors").
QDialog* createModelPropertiesDialog(const Model& model, const QString& source, QWidget* parent);

}  // namespace atlas::ui
