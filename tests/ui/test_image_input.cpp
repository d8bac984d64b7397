// Image input in the window (ui/main_window/image_mode.cpp) on a real pixel model: the run's tokens
// are the grey values of the nearest source pixels, worked out here from the image's own
// pixel values; typing returns to text; a text model refuses images with a clear message.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QPlainTextEdit>
#include <QTest>

#include "ui/main_window/input_area.h"
#include "ui/views/image_input_view.h"
#include "core/formats/npy.h"
#include "tests/core/image_test_util.h"
#include "tests/ui/run_window.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("an image becomes the pixel model's input; typing returns to text", "[ui][image]") {
  uitest::RunWindow win("preset:tiny-local2d", "abc");
  // 16 x 8 pixels, grey value 3 x + 20 y (R = G = B, so the luma is the value itself).
  QImage img(16, 8, QImage::Format_RGB888);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x) img.setPixel(x, y, qRgb(3 * x + 20 * y, 3 * x + 20 * y, 3 * x + 20 * y));
  win.shown.clear();
  REQUIRE(win.w.setImage(img, "gradient"));
  REQUIRE(win.shown.wait(60000));
  win.settle();
  CHECK(uitest::imageMode(win.w));
  CHECK(uitest::sourceText(win.w).isEmpty());
  CHECK(win.w.findChild<QPlainTextEdit*>("sourceEdit")->placeholderText().contains("512 tokens"));
  // 32 pixels across (image_width 32, grey), 16 rows keep the 2:1 aspect; pixel (y, x) shows
  // the nearest source pixel (y / 2, x / 2).
  const auto& tokens = win.w.trace()->source_tokens;
  REQUIRE(tokens.size() == 16u * 32u);
  int bad = 0;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 32; ++x)
      if (tokens[size_t(y * 32 + x)].id != 3 * (x / 2) + 20 * (y / 2)) ++bad;
  CHECK(bad == 0);
  CHECK(tokens[33].label == "1,1");
  CHECK(win.array("decoder.layer0.self_attn").shape[1] == 512);
  // The input image dock shows exactly the token values, and follows the selected query.
  ImageInputView* view = uitest::imageView(win.w);
  REQUIRE(view);
  REQUIRE(view->image().size() == QSize(32, 16));
  int wrong = 0;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 32; ++x)
      if (qGray(view->image().pixel(x, y)) != tokens[size_t(y * 32 + x)].id) ++wrong;
  CHECK(wrong == 0);
  win.w.selectQuery(33);
  CHECK(view->selectedPixel() == 33);
  // A click on a pixel selects its token (the view's centre pixel here).
  view->resize(320, 160);
  const int centre = view->tokenAt(QPointF(160.5, 80.5));
  CHECK(centre == 8 * 32 + 16);
  // Export: figures and the token values.
  QTemporaryDir dir;
  view->exportTo(dir.filePath("input.svg"));
  view->exportTo(dir.filePath("input.pdf"));
  view->exportTo(dir.filePath("input.png"), 72);
  view->exportTo(dir.filePath("input.npy"));
  view->exportTo(dir.filePath("input.csv"));
  QFile pdf(dir.filePath("input.pdf"));
  REQUIRE(pdf.open(QIODevice::ReadOnly));
  CHECK(pdf.read(5) == "%PDF-");
  QFile svg(dir.filePath("input.svg"));
  REQUIRE(svg.open(QIODevice::ReadOnly));
  CHECK(svg.readAll().contains("<svg"));
  CHECK_FALSE(QImage(dir.filePath("input.png")).isNull());
  const Tensor values = read_npy(dir.filePath("input.npy").toStdString());
  REQUIRE(values.shape == Shape{16, 32});
  CHECK(values.data[33] == float(tokens[33].id));

  // Typing takes the input back.
  auto* edit = win.w.findChild<QPlainTextEdit*>("sourceEdit");
  REQUIRE(edit);
  edit->setFocus();
  edit->moveCursor(QTextCursor::End);
  win.shown.clear();
  QTest::keyClicks(edit, "d");
  REQUIRE(win.shown.wait(30000));
  win.settle();
  CHECK_FALSE(uitest::imageMode(win.w));
  CHECK(win.w.trace()->source_tokens.size() == 1u);  // "d": the box was emptied for the image
  CHECK(win.w.findChild<QPlainTextEdit*>("sourceEdit")->placeholderText() == kSourcePlaceholder);
}

TEST_CASE("a text model refuses an image with a message naming what it needs", "[ui][image]") {
  uitest::RunWindow win("preset:tiny-encoder", "the cat");
  QImage img(4, 4, QImage::Format_RGB888);
  img.fill(Qt::gray);
  CHECK_FALSE(win.w.setImage(img, "grey"));
  CHECK(win.w.lastError().contains("takes text, not images"));
  CHECK_FALSE(uitest::imageMode(win.w));
  CHECK_FALSE(win.w.openImage("/nonexistent/atlas.png"));
  CHECK(win.w.lastError().contains("/nonexistent/atlas.png: no such file"));
}

TEST_CASE("opening a named pipe as an image is refused without blocking the window", "[ui][image]") {
  uitest::RunWindow win("preset:tiny-encoder", "the cat");
  const QString fifo = QDir::temp().filePath(QString("atlas-ui-fifo-%1.png").arg(::getpid()));
  ::unlink(fifo.toLocal8Bit().constData());
  REQUIRE(::mkfifo(fifo.toLocal8Bit().constData(), 0644) == 0);
  CHECK_FALSE(win.w.openImage(fifo));  // without the check, QImage would wait for a writer
  CHECK(win.w.lastError().contains("is a named pipe (FIFO), not a regular file"));
  ::unlink(fifo.toLocal8Bit().constData());
}

TEST_CASE("an image header claiming 100000 x 100000 pixels, or a JPEG cut short, is refused "
          "before Qt decodes it", "[ui][image]") {
  uitest::RunWindow win("preset:tiny-local2d", "ab");
  QTemporaryDir dir;
  auto write = [&](const QString& name, const std::string& bytes) {
    QFile f(dir.filePath(name));
    REQUIRE(f.open(QIODevice::WriteOnly));
    f.write(bytes.data(), qint64(bytes.size()));
    return f.fileName();
  };
  CHECK_FALSE(win.w.openImage(write("huge.png", image_test::png_claiming(100000, 100000))));
  CHECK(win.w.lastError().contains("the PNG header claims 100000 x 100000 pixels, over the limit"));
  const std::string jpeg = image_test::grey_jpeg(32, 16);
  CHECK_FALSE(win.w.openImage(write("cut.jpg", jpeg.substr(0, jpeg.size() - 6))));
  CHECK(win.w.lastError().contains("the JPEG image is truncated"));
  CHECK(win.w.openImage(write("whole.jpg", jpeg)));  // the same file whole opens
}
