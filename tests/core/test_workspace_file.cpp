// The workspace format without Qt (core/formats/workspace_file.h): what encode writes, parse
// reads back; every integer is checked against its range on the JSON value itself, before any
// conversion, and other bad values are refused naming the key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/formats/workspace_file.h"
#include "core/tensor/error.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

std::string refused(const std::string& json) {
  try {
    parse_workspace(json, "w.atlas");
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "accepted";
}

std::string workspace_with(const std::string& fields) {
  return R"({"format": "attention-atlas-workspace", "version": 1, "model": "demo:induction")" +
         (fields.empty() ? "" : ", " + fields) + "}";
}

}  // namespace

TEST_CASE("a workspace file round-trips every field, bytes included", "[workspace]") {
  WorkspaceFile w;
  w.model = "preset:tiny-decoder";
  w.source = "a \"quoted\" text\nwith a line";
  w.target = "ziel";
  w.stack = "decoder";
  w.kind = "cross_attn";
  w.layer = 3;
  w.head = -5;
  w.segment = 2;
  w.query = 7;
  w.colormap = "magma";
  w.scale = "log";
  w.normalization = "row";
  w.value_weighted = w.shared_grid_scale = true;
  w.open_panels = {"sweepDock", "headsDock"};
  for (int i = 0; i < 256; ++i) w.window_state += char(i);  // every byte value, 256 % 3 == 1
  w.geometry = "ab";                                       // 2 % 3 == 2: one '=' of padding
  // A tool's state as nlohmann writes it (sorted keys, no spaces), nulls and nesting included.
  w.tools["patching"] = R"({"result":{"raw":[0.5,null,-1.25],"shape":[1,3]},"site":"head"})";
  w.tools["dla"] = R"({"token":" Mary"})";
  const std::string text = encode_workspace(w);
  CHECK(text.find(R"("geometry": "YWI=")") != std::string::npos);  // base64 of "ab", by hand
  CHECK(parse_workspace(text, "w.atlas") == w);
  const WorkspaceFile defaults = parse_workspace(workspace_with(""), "w.atlas");
  CHECK((defaults.stack == "encoder" && defaults.kind == "attn" && defaults.query == -1 &&
         defaults.head == 0 && defaults.window_state.empty()));
}

TEST_CASE("workspace integers out of their range are refused before any conversion",
          "[workspace]") {
  CHECK_THAT(refused(workspace_with(R"("selection": {"layer": 4611686018427387904})")),
             Catch::Contains("w.atlas: \"layer\" must be an integer from 0 to 1048576, got "
                             "4611686018427387904"));
  CHECK_THAT(refused(workspace_with(R"("selection": {"head": 18446744073709551615})")),
             Catch::Contains("\"head\" must be an integer from -5 to 1048576"));
  CHECK_THAT(refused(workspace_with(R"("selection": {"head": -6})")),
             Catch::Contains("\"head\" must be an integer from -5 to 1048576, got -6"));
  // Doubles as Qt wrote them: whole ones within range are integers; 1e300 (whose cast to an
  // integer is undefined behaviour) and 2.5 are refused.
  CHECK(parse_workspace(workspace_with(R"("query": 3.0)"), "w.atlas").query == 3);
  CHECK_THAT(refused(workspace_with(R"("query": 1e300)")),
             Catch::Contains("\"query\" must be an integer from -1 to 16777216, got 1e+300"));
  CHECK_THAT(refused(workspace_with(R"("query": 2.5)")), Catch::Contains("\"query\" must be an integer"));
  CHECK_THAT(refused(workspace_with(R"("query": 16777217)")), Catch::Contains("got 16777217"));
  CHECK_THAT(refused(workspace_with(R"("selection": {"segment": -1})")), Catch::Contains("\"segment\""));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 1e300, "model": "x"})"),
             Catch::Contains("\"version\" must be an integer"));
}

TEST_CASE("workspace files of other formats, keys, types or bytes are refused by name",
          "[workspace]") {
  CHECK_THAT(refused("{not json"), Catch::Contains("w.atlas: not a workspace (malformed JSON"));
  CHECK_THAT(refused(std::string(100, '[')), Catch::Contains("not a workspace (") &&
                                                  Catch::Contains("nesting deeper than 8"));
  CHECK_THAT(refused("[1]"), Catch::Contains("not a workspace (the JSON is not an object)"));
  CHECK_THAT(refused(R"({"format": "x", "version": 1, "model": "m"})"), Catch::Contains("\"format\""));
  CHECK_THAT(refused(workspace_with(R"("zoom": 2)")), Catch::Contains("unknown key \"zoom\""));
  CHECK_THAT(refused(workspace_with(R"("selection": {"row": 2})")),
             Catch::Contains("unknown key \"selection.row\""));
  CHECK_THAT(refused(workspace_with(R"("model": "again")")), Catch::Contains("duplicate key"));
  CHECK_THAT(refused(workspace_with(R"("colormap": "jet")")), Catch::Contains("viridis, magma, diverging"));
  CHECK_THAT(refused(workspace_with(R"("open_panels": [1])")), Catch::Contains("\"open_panels\""));
  CHECK_THAT(refused(workspace_with(R"("tools": [])")), Catch::Contains("\"tools\" must be an object"));
  CHECK_THAT(refused(workspace_with(R"("tools": {"training": {}})")), Catch::Contains("unknown key \"tools.training\""));
  CHECK(refused(workspace_with(R"("tools": {"corpus": {}, "ablation": {}})")) == "accepted");
  CHECK_THAT(refused(workspace_with(R"("tools": {"dla": 3})")), Catch::Contains("\"tools.dla\" must be an object"));
  CHECK_THAT(refused(workspace_with(R"("geometry": "ab!c")")), Catch::Contains("\"geometry\" is not base64"));
  CHECK_THAT(refused(R"({"format": "attention-atlas-workspace", "version": 2, "model": "x"})"),
             Catch::Contains("workspace version 2; this Attention Atlas reads version 1"));
  const fs::path big = fs::temp_directory_path() / ("atlas-ws-" + std::to_string(::getpid()) + ".atlas");
  std::ofstream(big, std::ios::binary) << std::string(5 << 20, ' ');
  CHECK_THROWS_WITH(read_workspace_file(big.string()), Catch::Contains("over the 4.0 MB limit for a workspace"));
  fs::remove(big);
  CHECK_THROWS_WITH(read_workspace_file(big.string()), Catch::Contains("no such file"));
}
