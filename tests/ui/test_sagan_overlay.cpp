// The SAGAN overlay (ui/panels/sagan/sagan_overlay.h): a click picks the query location under the cursor,
// and the exports are valid files holding that query's attention row.
#include <catch2/catch.hpp>

#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>

#include "ui/panels/sagan/sagan_overlay.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

TEST_CASE("SAGAN overlay: a click on the image chooses the query location", "[ui][sagan]") {
  ensureApp();
  SaganOverlay overlay;
  overlay.resize(800, 420);
  overlay.show();
  REQUIRE(overlay.gridSize() == 32);
  // Left image square: x from 6, y from 24, side min(800/2 - 12, 420 - 36) = 384 -> 12 px a cell.
  QTest::mouseClick(&overlay, Qt::LeftButton, Qt::NoModifier, QPoint(6 + 12 * 5 + 6, 24 + 12 * 20 + 6));
  REQUIRE(overlay.spec().row == 20);
  REQUIRE(overlay.spec().col == 5);
  // The right (overlay) square maps the same way.
  QTest::mouseClick(&overlay, Qt::LeftButton, Qt::NoModifier, QPoint(406 + 12 * 31 + 6, 24 + 6));
  REQUIRE(overlay.spec().row == 0);
  REQUIRE(overlay.spec().col == 31);
}

TEST_CASE("SAGAN overlay exports PNG and the query's attention row as .npy", "[ui][sagan][export]") {
  ensureApp();
  SaganOverlay overlay;
  overlay.setQuery(3, 4);
  QTemporaryDir dir;
  overlay.exportTo(dir.filePath("s.png"));
  const QImage img(dir.filePath("s.png"));
  REQUIRE(img.width() == 1200);
  overlay.exportTo(dir.filePath("s.npy"));
  QFile f(dir.filePath("s.npy"));
  REQUIRE(f.open(QIODevice::ReadOnly));
  const QByteArray bytes = f.readAll();
  REQUIRE(bytes.contains("'shape': (16, 16)"));
  // The payload is the trace's row of query (3, 4): 256 floats after the header.
  const Tensor& att = overlay.trace().find("sagan.attention")->tensor;
  const float* want = att.data.data() + (3 * 32 + 4) * 256;
  const float* got = reinterpret_cast<const float*>(bytes.constData() + bytes.size() - 256 * 4);
  for (int i = 0; i < 256; ++i) REQUIRE(got[i] == want[i]);
  overlay.setPoolKeys(false);
  overlay.exportTo(dir.filePath("full.npy"));
  QFile g(dir.filePath("full.npy"));
  REQUIRE(g.open(QIODevice::ReadOnly));
  REQUIRE(g.readAll().contains("'shape': (32, 32)"));
}
