#include "ui/main_window/model_properties_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/backend/backend.h"
#include "core/formats/packed_weights.h"
#include "core/model/estimate.h"
#include "core/model/model.h"
#include "core/model/params.h"

namespace atlas::ui {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

QString summaryText(const Model& model, const QString& source) {
  const HeldWeights held = held_weights(model.params());
  QString text = source.isEmpty() ? QString() : source + "\n\n";
  text += QString::fromStdString(describe_architecture(model.config()));
  text += QString("parameters: %1\n").arg(parameter_count(model.config()));
  text += QString("weights as held: %1 MB").arg(held.total_bytes / kMiB, 0, 'f', 1);
  QStringList parts;
  for (const HeldWeights::Encoding& e : held.by_type)
    parts << QString("%1 %2 MB in %3 tensors")
                 .arg(QString::fromStdString(e.type))
                 .arg(e.bytes / kMiB, 0, 'f', 1)
                 .arg(e.tensors);
  if (!parts.isEmpty()) text += " (" + parts.join(", ") + ")";
  if (held.quantized)
    text += quantized_products() == QuantizedProducts::Exact
                ? "\nquantized products: exact (float32 activations)"
                : "\nquantized products: int8 activations per 32 values, as llama.cpp "
                  "(ATLAS_QUANTIZED_PRODUCTS=exact for float32 arithmetic)";
  return text;
}

}  // namespace

QDialog* createModelPropertiesDialog(const Model& model, const QString& source, QWidget* parent) {
  auto* dialog = new QDialog(parent);
  dialog->setObjectName("modelProperties");
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  // Window-modal: it describes this model, so the window cannot switch models while it is open.
  dialog->setWindowModality(Qt::WindowModal);
  dialog->setWindowTitle("Model properties");
  auto* layout = new QVBoxLayout(dialog);
  auto* summary = new QLabel(summaryText(model, source), dialog);
  summary->setObjectName("summary");
  summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  summary->setWordWrap(true);
  layout->addWidget(summary);

  auto* table = new QTableWidget(int(model.params().size()), 4, dialog);
  table->setObjectName("tensors");
  table->setHorizontalHeaderLabels({"tensor", "shape", "encoding", "MB"});
  table->verticalHeader()->setVisible(false);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  int row = 0;
  for (const auto& [name, t] : model.params()) {
    table->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(name)));
    table->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(shape_str(t.shape))));
    table->setItem(row, 2, new QTableWidgetItem(QString::fromLatin1(held_type_name(t))));
    auto* mb = new QTableWidgetItem(QString::number(double(held_bytes(t)) / kMiB, 'f', 2));
    mb->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table->setItem(row, 3, mb);
    ++row;
  }
  table->resizeColumnsToContents();
  table->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(table, 1);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
  QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
  layout->addWidget(buttons);
  dialog->resize(760, 560);
  return dialog;
}

}  // namespace atlas::ui
