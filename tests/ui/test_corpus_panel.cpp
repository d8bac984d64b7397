// The corpus panel (ui/tools/corpus_panel.h) writes the same folder as core's run_corpus (manifest
// bytes equal), also when cancelled and run again (resume), and its table lists the index's
// strongest links by rank with their documents.
#include <catch2/catch.hpp>

#include <QSignalSpy>
#include <QTest>
#include <QRegularExpression>
#include <QProgressBar>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <fstream>
#include <sstream>

#include "core/analysis/corpus_index.h"
#include "core/analysis/corpus_query.h"
#include "core/formats/model_io.h"
#include "tests/ui/ui_test_support.h"
#include "ui/tools/corpus_panel.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

std::string readFile(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("corpus panel: the CLI's folder, resumable, links in the table by rank", "[ui][corpus]") {
  uitest::ensureApp();
  QTemporaryDir dir;
  const QString file = dir.filePath("corpus.txt");
  {
    std::ofstream out(file.toStdString());
    for (int i = 0; i < 12; ++i) out << "atlasofheads" << char('a' + i) << "atlasofheads\n";
  }
  auto model = std::make_shared<const Model>(load_model("demo:induction"));
  // The reference: core's run into its own folder.
  CorpusRunOptions o;
  o.model_argument = "demo:induction";
  o.corpus_path = file.toStdString();
  o.out_dir = dir.filePath("reference").toStdString();
  o.settings.top = 20;
  REQUIRE(run_corpus(*model, o).finished);

  CorpusPanel panel;
  panel.setModel(model, "demo:induction");
  QSignalSpy done(&panel, &CorpusPanel::finished);
  // Cancelled at once, then run again: the same folder as one uninterrupted run.
  panel.setPaths(file, dir.filePath("gui"));
  panel.findChild<QSpinBox*>()->setValue(20);
  REQUIRE(panel.start());
  panel.cancel();
  REQUIRE(done.wait(60000));
  INFO(panel.status().toStdString());
  if (panel.status().startsWith("Cancelled")) {
    REQUIRE(panel.start());
    REQUIRE(done.wait(60000));
  }
  CHECK(readFile(dir.filePath("gui/manifest.json")) == readFile(dir.filePath("reference/manifest.json")));
  // A run says how far it is and how long is left, from the documents it has measured.
  QStringList seen;
  auto* bar = panel.findChild<QProgressBar*>();
  REQUIRE(bar);
  QObject::connect(bar, &QProgressBar::valueChanged, &panel, [&] { seen << panel.status(); }, Qt::QueuedConnection);
  panel.setPaths(file, dir.filePath("again"));
  REQUIRE(panel.start());
  REQUIRE(done.wait(60000));
  QTest::qWait(50);
  INFO(seen.join(" | ").toStdString());
  CHECK(seen.filter(QRegularExpression("^Running over the corpus: ([1-9]|1[01]) of 12 documents, about .+ left")).size() >= 1);
  CHECK(readFile(dir.filePath("again/links.csv")) == readFile(dir.filePath("reference/links.csv")));
  CHECK(readFile(dir.filePath("gui/links.csv")) == readFile(dir.filePath("reference/links.csv")));
  // Links of layer 0, head 1, every token: the index's, by rank.
  panel.setSelection(0, 1);
  panel.setQuery("", "", true);
  REQUIRE(panel.query());
  CorpusLinkQuery q;
  q.layer = 0;
  q.head = 1;
  q.top = 50;
  const auto want = find_corpus_links(read_corpus_folder(dir.filePath("reference").toStdString()), q);
  REQUIRE_FALSE(want.empty());
  REQUIRE(panel.table()->rowCount() == static_cast<int>(want.size()));
  for (int r = 0; r < panel.table()->rowCount(); ++r) {
    CHECK(panel.table()->item(r, 3)->text().toLongLong() == want[size_t(r)].link.document);
    CHECK(panel.table()->item(r, 2)->text().toInt() == 1);
  }
  CHECK(panel.table()->item(0, 5)->text().contains("[["));
  // A query token that no link has: an empty table and the reason.
  panel.setQuery("zebra", "", true);
  REQUIRE(panel.query());
  CHECK(panel.table()->rowCount() == 0);
  CHECK(panel.status().contains("No link matches"));
}

TEST_CASE("corpus panel: its inputs round-trip through its saved state; a model switch clears the links",
          "[ui][corpus][workspace]") {
  uitest::ensureApp();
  QTemporaryDir dir;
  const QString file = dir.filePath("corpus.txt");
  {
    std::ofstream out(file.toStdString());
    for (int i = 0; i < 4; ++i) out << "atlasofheads" << char('a' + i) << "atlasofheads\n";
  }
  CorpusPanel saved;
  saved.setPaths(file, dir.filePath("index"));
  saved.findChild<QSpinBox*>()->setValue(37);
  saved.setQuery("atlas", "heads", false);
  const QJsonObject state = saved.saveState();
  CorpusPanel fresh;
  fresh.restoreState(state);
  // By value, against the inputs as typed above.
  CHECK(fresh.saveState()["file"].toString() == file);
  CHECK(fresh.saveState()["out"].toString() == dir.filePath("index"));
  CHECK(fresh.findChild<QSpinBox*>()->value() == 37);
  CHECK(fresh.saveState()["query_token"].toString() == "atlas");
  CHECK(fresh.saveState()["key_token"].toString() == "heads");
  CHECK(fresh.saveState()["selected_only"].toBool() == false);
  CHECK(fresh.saveState() == state);

  // A damaged state is refused naming the key; the panel keeps its inputs.
  QJsonObject damaged = state;
  damaged["top"] = "many";
  fresh.restoreState(damaged);
  CHECK(fresh.status().contains("tools.corpus"));
  CHECK(fresh.status().contains("\"top\""));
  CHECK(fresh.saveState() == state);
  damaged = state;
  damaged["colour"] = 1;
  fresh.restoreState(damaged);
  CHECK(fresh.status().contains("unknown key \"colour\""));
  CHECK(fresh.saveState() == state);

  // The links of one model's run are not shown once another model is on screen.
  auto induction = std::make_shared<const Model>(load_model("demo:induction"));
  fresh.setModel(induction, "demo:induction");
  fresh.setQuery("", "", false);  // every link
  QSignalSpy done(&fresh, &CorpusPanel::finished);
  REQUIRE(fresh.start());
  REQUIRE(done.wait(60000));
  INFO(fresh.status().toStdString());
  REQUIRE(fresh.index().has_value());
  REQUIRE(fresh.table()->rowCount() > 0);
  fresh.setModel(induction, "demo:induction");  // the same model again: the links stay
  CHECK(fresh.table()->rowCount() > 0);
  fresh.setModel(std::make_shared<const Model>(load_model("preset:tiny-decoder")), "preset:tiny-decoder");
  CHECK_FALSE(fresh.index().has_value());
  CHECK(fresh.matches().empty());
  CHECK(fresh.table()->rowCount() == 0);
  CHECK(fresh.status().contains("demo:induction"));
  CHECK(fresh.status().contains("model changed"));
}
