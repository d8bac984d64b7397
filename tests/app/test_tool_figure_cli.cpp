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

// A build without the Qt UI (the sanitizer stage) refuses --figure with that reason before the
// run: true when `o` is that refusal, and the case stops there.
bool refused_without_ui(const Output& o) {
  if (o.err.find("built without the Qt UI") == std::string::npos) return false;
  CHECK(o.code != 0);
  WARN("atlas was built without the Qt UI: --figure is refused, the figures are not tested");
  return true;
}

}  // namespace

TEST_CASE("atlas dla --figure draws the panel's plots: heads by default, every part with --plot", "[cli][figure][dla]") {
  const fs::path dir = fresh_dir("tool-figure-dla");
  fs::create_directories(dir);
  const std::string base = "dla demo:induction --text atlasofheadsatlasofheads";
  Output o = run_atlas(base + " --figure " + (dir / "heads.svg").string());
  if (refused_without_ui(o)) return;
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
  if (refused_without_ui(o)) return;
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

TEST_CASE("atlas qk-decompose --figure draws the score matrix and the value path, every name whole",
          "[cli][figure][qk]") {
  const fs::path dir = fresh_dir("tool-figure-qk");
  fs::create_directories(dir);
  const std::string base = "qk-decompose demo:induction --text atlasofheadsatlasofheads --layer 1 --head 2 --query 20 --key 9";
  Output o = run_atlas(base + " --value --figure " + (dir / "m.svg").string());
  if (refused_without_ui(o)) return;
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("score 7.36264 (traced), sum of 9 x 9 cells 7.36264"));
  const std::string m = read_all(dir / "m.svg");
  for (const char* s : {"embed.tokens", "embed.positions", "layer0.head3", "layer0.attn_bias", "layer0.mlp", "bias",
                        "query side", "key side"})
    CHECK(svg_shows(m, s));
  CHECK_THAT(m, Catch::Contains("sum 7.3626, score 7.3626"));
  o = run_atlas(base + " --value --plot value --figure " + (dir / "v.svg").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(o.err, Catch::Contains("(value path: what the head moves)"));
  // Without --value there is no value path to draw.
  o = run_atlas(base + " --plot 1 --figure " + (dir / "none.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--plot 1 is out of range: the QK decomposition panel has 1 plots"));
}

TEST_CASE("atlas patch and attribute --figure draw the panel's grid; a head-pos grid at --slice or its strongest cell",
          "[cli][figure][patch]") {
  const fs::path dir = fresh_dir("tool-figure-patch");
  fs::create_directories(dir);
  const std::string inputs = " preset:tiny-llama --clean 'The fox runs' --corrupted 'The cat runs' --metric prob --tokens a";
  Output o = run_atlas("patch" + inputs + " --site head-pos --top 1 --figure " + (dir / "hp.svg").string());
  if (refused_without_ui(o)) return;
  INFO(o.err);
  REQUIRE(o.code == 0);
  // The strongest cell the table names is at position 11: the default slice.
  REQUIRE_THAT(o.out, Catch::Contains("L0H0 pos 11"));
  CHECK_THAT(read_all(dir / "hp.svg"), Catch::Contains("patched position 11 s"));
  o = run_atlas("patch" + inputs + " --site head-pos --slice 2 --figure " + (dir / "hp2.svg").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(read_all(dir / "hp2.svg"), Catch::Contains("patched position 2 "));
  o = run_atlas("patch" + inputs + " --site head-pos --slice 12 --figure " + (dir / "bad.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--slice 12 is out of range: the grid has 12 positions (0 to 11)"));
  o = run_atlas("patch" + inputs + " --site head --slice 2 --figure " + (dir / "bad.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--slice picks the position a head-pos grid's --figure draws"));
  // Path patching: senders x heads into the receivers, the senders with no path masked.
  o = run_atlas("patch" + inputs + " --site path --receivers 1.0 --receiver-input q --figure " + (dir / "path.svg").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.err, Catch::Contains("(path patching grid)"));
  const std::string path = read_all(dir / "path.svg");
  CHECK_THAT(path, Catch::Contains("path patching (denoise) into 1.0 (their q), prob at 11"));
  for (const char* s : {"L0", "L1", "H0", "sender layer", "sender head"}) CHECK(svg_shows(path, s));

  // attribute: the estimate, and with --exact-all the exact grid as a second plot.
  o = run_atlas("attribute" + inputs + " --site head --exact-all --figure " + (dir / "atp.svg").string());
  REQUIRE(o.code == 0);
  const std::string atp = read_all(dir / "atp.svg");
  CHECK_THAT(atp, Catch::Contains("AtP estimate: head patching (denoise)"));
  for (const char* s : {"L0", "L1", "H0", "H3"}) CHECK(svg_shows(atp, s));
  o = run_atlas("attribute" + inputs + " --site head --exact-all --plot exact --figure " + (dir / "ex.svg").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(read_all(dir / "ex.svg"), Catch::Contains("exact: head patching (denoise)"));
  o = run_atlas("attribute" + inputs + " --site head --exact-top 3 --plot exact --figure " + (dir / "bad.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--plot 'exact' names no plot"));

  // An encoder-decoder grid's rows are named by their sub-layers.
  o = run_atlas("patch preset:tiny-encoder-decoder --clean abc --corrupted abd --target xyz --site head --metric prob "
                "--tokens a --figure " + (dir / "ed.svg").string());
  REQUIRE(o.code == 0);
  const std::string ed = read_all(dir / "ed.svg");
  for (const char* s : {"encoder.layer0.attn", "decoder.layer0.self_attn", "decoder.layer1.cross_attn"})
    CHECK(svg_shows(ed, s));
}
