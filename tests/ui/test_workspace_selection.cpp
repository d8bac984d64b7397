// A workspace whose selection its run does not have (layer 99 of a 2-layer model, head 4 of 4,
// a query past the input) is refused naming the valid range, and the window keeps the run's
// own first map: never the clamped neighbour (layer 1) the user did not choose.
#include <catch2/catch.hpp>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "tests/ui/ui_test_support.h"
#include "ui/main_window/main_window.h"
#include "ui/workspace.h"
#include "ui/workspace_selection.h"

using namespace atlas;
using namespace atlas::ui;

TEST_CASE("workspaceSelectionProblem names what the run lacks and the valid range", "[ui][workspace][selection]") {
  const Trace t = uitest::handTrace();  // encoder attn: 2 layers, 2 heads, 3 tokens; a decoder of 2 tokens
  const auto families = attentionFamilies(t);
  CHECK(workspaceSelectionProblem({"encoder", "attn", 1, 1, 0}, 2, families, t).isEmpty());
  CHECK(workspaceSelectionProblem({"encoder", "attn", 0, HeadMean, 0}, -1, families, t).isEmpty());
  CHECK(workspaceSelectionProblem({"encoder", "attn", 2, 0, 0}, -1, families, t) ==
        "layer 2 is out of range: the encoder self-attention has 2 layers (0 to 1)");
  CHECK(workspaceSelectionProblem({"encoder", "attn", -1, 0, 0}, -1, families, t).startsWith("layer -1 is out of range"));
  CHECK(workspaceSelectionProblem({"encoder", "attn", 0, 2, 0}, -1, families, t).startsWith(
      "head 2 is out of range: the encoder self-attention has 2 heads (0 to 1, or mean, max"));
  CHECK(workspaceSelectionProblem({"encoder", "attn", 0, 0, 0}, 3, families, t) ==
        "query 3 is out of range: the encoder self-attention has 3 queries (tokens 0 to 2)");
  CHECK(workspaceSelectionProblem({"encoder", "attn", 0, 0, 1}, -1, families, t).startsWith("segment 1: the encoder"));
  CHECK(workspaceSelectionProblem({"decoder", "nope", 0, 0, 0}, -1, families, t).contains("which this run does not have"));
}

TEST_CASE("a workspace naming layer 99 opens on the run's first map with the valid range named",
          "[ui][workspace][selection]") {
  uitest::ensureApp();
  QTemporaryDir dir;
  Workspace ws;
  ws.model = "preset:tiny-decoder";
  ws.source = "abcab";
  ws.selection = {"decoder", "self_attn", 99, 3, 0};
  const QString path = dir.filePath("far.atlas");
  saveWorkspaceFile(ws, path);
  MainWindow w;
  w.setHeadless(true);
  w.resize(1000, 700);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  REQUIRE(w.openWorkspace(path));
  REQUIRE(shown.wait(60000));
  while (shown.wait(300)) {
  }
  INFO(w.workspaceError().toStdString());
  CHECK(w.workspaceError().contains("layer 99 is out of range: the decoder self-attention has 2 layers (0 to 1)"));
  const Workspace after = w.workspace();
  CHECK(after.selection.layer == 0);  // the default, not 1 (a clamp)
  CHECK(after.selection.head == 0);   // nothing of the refused selection was applied
  // A valid selection clears the error.
  ws.selection = {"decoder", "self_attn", 1, 3, 0};
  saveWorkspaceFile(ws, path);
  REQUIRE(w.openWorkspace(path));
  REQUIRE(shown.wait(60000));
  while (shown.wait(300)) {
  }
  CHECK(w.workspaceError().isEmpty());
  CHECK(w.workspace().selection.layer == 1);
  CHECK(w.workspace().selection.head == 3);
}
