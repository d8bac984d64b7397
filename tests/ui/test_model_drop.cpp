// Opening model files from the window the way a user does: dropping a llama.cpp .gguf file
// (written byte by byte by tests/core/gguf_model_writer.h, with the tokenizer it carries) loads
// it; the tokens are the file's tokenizer's and the heatmap shows its first layer's traced map
// by value. Files that are not models are not taken as models.
#include <catch2/catch.hpp>

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QSignalSpy>
#include <QUrl>
#include <cmath>
#include <filesystem>

#include "core/model/attention_map.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

// Sends a drag-enter and, when accepted, a drop of `path` onto the window; returns whether the
// window accepted the drag.
bool dropFile(MainWindow& w, const std::filesystem::path& path) {
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(path.string()))});
  const QPoint at(w.width() / 2, w.height() / 2);
  QDragEnterEvent enter(at, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&w, &enter);
  if (!enter.isAccepted()) return false;
  QDropEvent drop(QPointF(at), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&w, &drop);
  return true;
}

}  // namespace

TEST_CASE("a dropped .gguf file opens with the tokenizer it carries", "[ui][window][gguf]") {
  uitest::ensureApp();
  gguf_test::Arch a;
  a.vocab = 259;  // the byte-level vocabulary's 256 bytes, "12", "123" and BOS
  gguf_test::File f = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(f);
  const std::filesystem::path path = gguf_test::write(f, "ui-drop");

  MainWindow w;
  w.resize(1100, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("123 hi");
  w.loadModel("preset:tiny-encoder");
  REQUIRE(shown.wait(30000));

  // Not a model: a stray binary file is neither taken nor loaded.
  const std::filesystem::path stray = path.parent_path() / "weights.bin";
  gguf_test::write_file(stray, {1, 2, 3});
  CHECK_FALSE(dropFile(w, stray));

  shown.clear();
  REQUIRE(dropFile(w, path));
  REQUIRE(shown.wait(60000));
  INFO(w.lastError().toStdString());
  REQUIRE(w.lastError().isEmpty());
  CHECK(w.modelSpec() == QString::fromStdString(path.string()));

  // The file's tokenizer: BOS, "123" (merges 1+2, 12+3), then " hi" as byte symbols.
  const Trace& t = *w.trace();
  std::vector<int32_t> ids;
  for (const TokenInfo& tok : t.source_tokens) ids.push_back(tok.id);
  CHECK(ids == std::vector<int32_t>{258, 257, 32, 104, 105});

  // The heatmap shows the first layer's self-attention, head by head, as traced; the map
  // records the file's grouped-query heads (4 query heads on 2 key/value heads).
  const AttentionMap* first = nullptr;
  for (const AttentionMap& m : t.attention_maps)
    if (m.layer == 0 && m.dense && !first) first = &m;
  REQUIRE(first);
  CHECK(first->heads == a.heads);
  CHECK(first->kv_heads == a.kv_heads);
  const Tensor& traced = t.find(first->array)->tensor;
  for (int h = 0; h < a.heads; ++h) {
    INFO("head " << h);
    AttentionSelection sel = w.selection();
    sel.stack = QString::fromStdString(first->stack);
    sel.kind = QString::fromStdString(first->sublayer);
    sel.layer = 0;
    sel.head = h;
    w.setSelection(sel);
    const HeatmapData& d = uitest::heatmapView(w)->data();
    REQUIRE(d.rows == 5);
    REQUIRE(d.cols == 5);
    int mismatches = 0;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j)
        if (std::abs(d.at(i, j) - traced.data[size_t((h * 5 + i) * 5 + j)]) > 1e-6f) ++mismatches;
    CHECK(mismatches == 0);
  }
  std::filesystem::remove_all(path.parent_path());
}
