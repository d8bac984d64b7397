// Model > Properties: a quantized GGUF model's tensors listed with the encoding each is held in
// (the file's Q8_0 matrices, float32 vectors) and their bytes, checked by value against the
// file written here; reached through the Model menu of the window.
#include <catch2/catch.hpp>

#include <QAction>
#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <filesystem>

#include "core/formats/gguf_model.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/ui/ui_test_support.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/model_properties_dialog.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("Model > Properties lists every tensor with the encoding it is held in", "[ui][gguf]") {
  uitest::ensureApp();
  gguf_test::Arch a;
  a.vocab = 259;
  a.matrix_type = gguf_test::T_Q8_0;
  gguf_test::File f = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(f);
  const std::filesystem::path path = gguf_test::write(f, "ui-properties");

  MainWindow w;
  w.resize(1100, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("hi");
  w.loadModel(QString::fromStdString(path.string()));
  REQUIRE(shown.wait(30000));

  QAction* properties = nullptr;
  for (QAction* action : w.findChildren<QAction*>())
    if (action->text().startsWith("P&roperties")) properties = action;
  REQUIRE(properties);
  properties->trigger();
  auto* dialog = w.findChild<QDialog*>("modelProperties");
  REQUIRE(dialog);
  CHECK(dialog->windowModality() == Qt::WindowModal);  // no model switch under it
  auto* table = dialog->findChild<QTableWidget*>("tensors");
  REQUIRE(table);
  const GgufLoadOptions no_tokenizer{false};
  const Model model = load_gguf_model(path.string(), no_tokenizer);
  REQUIRE(table->rowCount() == int(model.params().size()));
  int q8 = 0;
  for (int r = 0; r < table->rowCount(); ++r) {
    const std::string name = table->item(r, 0)->text().toStdString();
    INFO(name);
    const Tensor& t = model.params().at(name);
    CHECK(table->item(r, 1)->text().toStdString() == shape_str(t.shape));
    // The file's encodings, as written: Q8_0 projections, F16 embedding, float32 vectors.
    const gguf_test::Weight* w_in_file = nullptr;
    if (name == "decoder.layer0.self_attn.wq") w_in_file = &f.w.at("blk.0.attn_q.weight");
    if (name == "embed.tokens") w_in_file = &f.w.at("token_embd.weight");
    if (w_in_file) {
      CHECK(table->item(r, 2)->text() == ggml_type_info(w_in_file->type).name);
      CHECK(table->item(r, 3)->text().toDouble() ==
            Approx(double(w_in_file->bytes.size()) / (1024.0 * 1024.0)).margin(0.005));
    }
    if (t.shape.size() == 1) CHECK(table->item(r, 2)->text() == "F32");
    q8 += table->item(r, 2)->text() == "Q8_0";
  }
  CHECK(q8 >= 5 * a.layers);
  const QString summary = dialog->findChild<QLabel*>("summary")->text();
  CHECK(summary.contains("Q8_0"));
  CHECK(summary.contains("weights as held"));
  dialog->close();
  std::filesystem::remove_all(path.parent_path());
}
