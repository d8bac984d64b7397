// Hostile user text through `atlas export`, `compare` and `ablate` into SVG: a --title and
// tokens holding "<", "&", "]]>", markup and U+0001 (which XML 1.0 does not allow at all) give
// files that Qt's strict XML reader parses (tests/svg_xml.h, run as tests/tools/svg_text_dump),
// whose <title> and drawn text are
// the strings given, U+0001 shown as its symbol U+2401. Every view and every plot of every
// panel is written. Arguments reach atlas single-quoted, so the shell passes them verbatim.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/app/cli_runner.h"

#if defined(ATLAS_SVG_TEXT_DUMP)

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::run_atlas;

namespace {

// Runs a command line (not atlas) and returns its exit code and stdout.
Output run_atlas_tool(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, ""};
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

const std::string kSoh = "\x01", kSohShown = "\u2401";
const std::string kTitle = "Q & K <layer 0> ]]> " + kSoh;
const std::string kTitleShown = "Q & K <layer 0> ]]> " + kSohShown;
// Words of the hostile model, each one token, and how a figure shows them.
const std::vector<std::string> kWords = {"<", "&", "]]>", "<b>x</b>", kSoh, "a&b<c>"};
const std::vector<std::string> kWordsShown = {"<", "&", "]]>", "<b>x</b>", kSohShown, "a&b<c>"};

std::string hostileText() {
  std::string t;
  for (const std::string& w : kWords) t += (t.empty() ? "" : " ") + w;
  return t;
}

// tiny-decoder with a words tokenizer whose vocabulary holds the hostile words.
fs::path hostileWordsModel(const fs::path& dir) {
  const fs::path model = dir / "words-model";
  const Output o = run_atlas("init --preset tiny-decoder --out " + model.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  nlohmann::json config = nlohmann::json::parse(read_all(model / "config.json"));
  std::vector<std::string> vocab = {"<unk>"};
  vocab.insert(vocab.end(), kWords.begin(), kWords.end());
  for (int i = static_cast<int>(vocab.size()); i < config["vocab_size"].get<int>(); ++i) vocab.push_back("w" + std::to_string(i));
  config["tokenizer"] = {{"type", "words"}, {"vocab", vocab}, {"unk", "<unk>"}};
  std::ofstream(model / "config.json") << config.dump();
  return model;
}

// What Qt's XML reader sees in an SVG (svg_text_dump's lines, unescaped).
struct SvgText {
  std::string error;  // empty: well-formed
  std::string title;
  std::vector<std::string> texts;
  bool showsText(const std::string& t) const { return std::find(texts.begin(), texts.end(), t) != texts.end(); }
  std::string describe() const {
    std::string all;
    for (const std::string& t : texts) all += (all.empty() ? "" : " | ") + t;
    return error.empty() ? "texts: " + all : error;
  }
};

std::string unescaped(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 'r' ? '\r' : c;
  }
  return out;
}

SvgText readSvg(const fs::path& p) {
  const Output o = run_atlas_tool(std::string(ATLAS_SVG_TEXT_DUMP) + " " + quoted(p.string()));
  REQUIRE(o.code == 0);
  SvgText svg;
  std::stringstream lines(o.out);
  std::string line;
  REQUIRE(std::getline(lines, line));
  if (line != "ok") svg.error = line;
  while (std::getline(lines, line)) {
    if (line.rfind("title ", 0) == 0) svg.title = unescaped(line.substr(6));
    if (line.rfind("text ", 0) == 0) svg.texts.push_back(unescaped(line.substr(5)));
  }
  return svg;
}

// Runs `args`, which writes `out`, and reads the SVG, which must parse.
SvgText exportedSvg(const std::string& args, const fs::path& out) {
  const Output o = run_atlas(args + " --out " + quoted(out.string()));
  INFO("atlas " << args << "\n" << o.err);
  REQUIRE(o.code == 0);
  const SvgText svg = readSvg(out);
  INFO(svg.describe());
  REQUIRE(svg.error.empty());
  return svg;
}

}  // namespace

TEST_CASE("atlas export writes every view with a hostile --title and hostile tokens as XML showing them",
          "[cli][export][svg]") {
  if (atlas_test::no_ui(run_atlas("export preset:tiny-decoder --text a --out /nonexistent/x.npy"))) return;
  const fs::path dir = fresh_dir("svg-text-views");
  fs::create_directories(dir);
  const fs::path model = hostileWordsModel(dir);
  const std::string base = "export " + model.string() + " --text " + quoted(hostileText()) + " --title " + quoted(kTitle);
  for (const std::string view : {"heatmap", "model", "tokens", "positional", "similarity"}) {
    INFO("view " << view);
    const SvgText svg = exportedSvg(base + " --view " + view, dir / (view + ".svg"));
    CHECK(svg.title == kTitleShown);
    CHECK(svg.showsText(kTitleShown));
    if (view == "heatmap" || view == "tokens")
      for (const std::string& w : kWordsShown) {
        INFO("token " << w << ": " << svg.describe());
        CHECK(svg.showsText(w));
      }
  }
  // compare and ablate draw through the same writer.
  const std::string text = " --text " + quoted(hostileText());
  const SvgText cmp = exportedSvg("compare " + model.string() + text + " --text-b " +
                                                 quoted("a&b<c> ]]> < & <b>x</b> " + kSoh) + " --view side",
                                             dir / "compare.svg");
  for (const std::string& w : kWordsShown) {  // keys "A token" and "B token"
    INFO("token " << w << ": " << cmp.describe());
    CHECK(cmp.showsText("A " + w));
    CHECK(cmp.showsText("B " + w));
  }
  exportedSvg("ablate " + model.string() + text + " --sweep heads", dir / "ablate.svg");
  fs::remove_all(dir);
}

TEST_CASE("atlas export --panel writes every plot of every panel with hostile text as XML", "[cli][export][svg][panels]") {
  const Output help = run_atlas("export --help");
  if (help.code != 0 || help.out.find("Panels: ") == std::string::npos) return;  // built without the Qt UI
  const fs::path dir = fresh_dir("svg-text-panels");
  fs::create_directories(dir);
  const fs::path words = hostileWordsModel(dir);
  // Where each panel has something to draw; the byte-level presets see "<", "&", ">" and U+0001
  // as tokens of their own (U+0001 labelled <0x01> by the byte tokenizer).
  const std::map<std::string, std::string> modelOf = {
      {"span", "preset:tiny-span"},       {"act", "preset:tiny-ut-act"},   {"lsh", "preset:tiny-reformer"},
      {"xl", "preset:tiny-xl"},           {"gates", "preset:tiny-gtrxl"},  {"rope", "preset:tiny-rope"},
      {"alibi", "preset:alibi-lm"},
      {"performer", "preset:tiny-performer"}, {"lens", words.string()},    {"ablation", words.string()},
      {"predictions", words.string()},    {"heads", words.string()},       {"qk", words.string()}};
  std::string ids = help.out.substr(help.out.find("Panels: ") + 8);
  ids = ids.substr(0, ids.find('\n'));
  std::vector<std::string> panels;
  std::stringstream list(ids);
  for (std::string id; std::getline(list, id, ',');) panels.push_back(id.substr(id.find_first_not_of(' ')));
  REQUIRE(panels.size() >= 12);
  std::vector<std::string> shown;
  for (const std::string& panel : panels) {
    INFO("panel " << panel << " (give it a model above)");
    REQUIRE(modelOf.count(panel));
    const bool byWords = modelOf.at(panel) == words.string();
    const std::string base = "export " + modelOf.at(panel) + " --text " +
                             quoted(byWords ? hostileText() : "a<&]]>" + kSoh + "b") + " --panel " + panel +
                             (panel == "ablation" ? " --drop-heads 0:1" : "");
    const Output plots = run_atlas(base + " --list-plots");
    INFO(plots.err);
    REQUIRE(plots.code == 0);
    const int n = static_cast<int>(std::count(plots.out.begin(), plots.out.end(), '\n'));
    CHECK(n > 0);
    for (int k = 0; k < n; ++k) {
      INFO("plot " << k);
      const SvgText svg =
          exportedSvg(base + " --plot " + std::to_string(k) + " --title " + quoted(kTitle), dir / "plot.svg");
      CHECK(svg.title == kTitleShown);
      CHECK(svg.showsText(kTitleShown));  // charts draw their title as HTML: escaped for it
      if (byWords) shown.insert(shown.end(), svg.texts.begin(), svg.texts.end());
    }
  }
  // The words panels show every hostile token as itself somewhere (bars: "position token").
  for (const std::string& w : kWordsShown) {
    INFO("token " << w);
    CHECK(std::any_of(shown.begin(), shown.end(), [&](const std::string& t) {
      return t == w || (t.size() > w.size() && t.compare(t.size() - w.size() - 1, std::string::npos, " " + w) == 0);
    }));
  }
  fs::remove_all(dir);
}

#else
TEST_CASE("SVG text tests need Qt's XML reader", "[cli][export][svg]") {
  WARN("built without Qt (ATLAS_GUI=OFF): no svg_text_dump, and no atlas export to test");
}
#endif
