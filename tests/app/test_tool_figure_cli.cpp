// --figure of the analysis verbs (app/cli/tool_figure.h) as a user runs it: the plot the verb's
// GUI panel draws (ui/tools/*_figure.h) written as SVG/PDF/PNG, its texts the numbers the verb
// prints; --plot picks by number or name; bad --figure / --plot refused before the run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::run_atlas;

namespace {

// A <text> element holding exactly `s` (QSvgGenerator writes each drawn string as one element).
bool svg_shows(const std::string& svg, const std::string& s) {
  return svg.find(">" + s + "</text>") != std::string::npos;
}

}  // namespace

TEST_CASE("atlas dla --figure draws the panel's plots: heads by default, every part with --plot", "[cli][figure][dla]") {
  const fs::path dir = fresh_dir("tool-figure-dla");
  fs::create_directories(dir);
  const std::string base = "dla demo:induction --text atlasofheadsatlasofheads";
  Output o = run_atlas(base + " --figure " + (dir / "heads.svg").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.err, Catch::Contains("wrote " + (dir / "heads.svg").string() + " (heads' direct contributions)"));
  // One position, the last, whose numbers the table prints.
  CHECK_THAT(o.out, Catch::StartsWith("position 23 \"s\": logit of \"h\" (#8) = 12.5352, sum of parts 12.5352"));
  const std::string heads = read_all(dir / "heads.svg");
  for (const char* s : {"L0", "L1", "H0", "H3", "layer", "head"}) CHECK(svg_shows(heads, s));
  CHECK_THAT(heads, Catch::Contains("parts sum to 12.535"));
  o = run_atlas(base + " --plot part --figure " + (dir / "parts.svg").string());
  REQUIRE(o.code == 0);
  const std::string parts = read_all(dir / "parts.svg");
  for (const char* s : {"total", "logit"}) CHECK(parts.find(s) != std::string::npos);
  for (const char* ext : {"pdf", "png"}) {
    o = run_atlas(base + " --plot 1 --figure " + (dir / (std::string("parts.") + ext)).string());
    REQUIRE(o.code == 0);
    const std::string bytes = read_all(dir / (std::string("parts.") + ext));
    CHECK(bytes.substr(0, 4) == (std::string(ext) == "pdf" ? "%PDF" : "\x89PNG"));
  }
}

TEST_CASE("a bad --figure or --plot is refused, naming it, before the run", "[cli][figure][bad-input]") {
  const fs::path dir = fresh_dir("tool-figure-bad");
  fs::create_directories(dir);
  const std::string base = "dla demo:induction --text abcabc";
  Output o = run_atlas(base + " --figure " + (dir / "x.gif").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("use a file name ending in .svg, .pdf or .png"));
  o = run_atlas(base + " --plot 1");
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--plot picks the plot --figure draws; give --figure FILE too"));
  o = run_atlas(base + " --figure /dev/null");
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--figure /dev/null is a character device"));
  o = run_atlas(base + " --figure " + (dir / "no" / "x.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("the folder " + (dir / "no").string() + " does not exist"));
  o = run_atlas(base + " --plot 7 --figure " + (dir / "y.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--plot 7 is out of range: the Logit attribution panel has 2 plots"));
  CHECK_FALSE(fs::exists(dir / "y.svg"));
  o = run_atlas(base + " --plot nothing --figure " + (dir / "y.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--plot 'nothing' names no plot"));
}
