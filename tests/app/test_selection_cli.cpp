// Every index the CLI takes (layer, step, segment, head, query, plot, position, dropped layer
// or head, corpus layer or head) is checked against the run or the model: a value out of
// range, negative, beyond 64 bits (2^63) or not a number is refused with exit 1 and one line
// naming the flag and the valid range, never clamped to a neighbour or ignored.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::run_atlas;
using Catch::Matchers::Contains;

namespace {

const std::string kTwoTo63 = "9223372036854775808";

// Exit 1, one line on stderr containing every one of `parts`, no internal error; and the
// figure was not written.
void check_index_refused(const std::string& args, const std::vector<std::string>& parts,
                         const fs::path& never = {}) {
  const Output o = run_atlas(args);
  INFO("atlas " << args << "\nstderr: " << o.err);
  CHECK(o.code == 1);
  for (const std::string& p : parts) CHECK_THAT(o.err, Contains(p));
  CHECK_THAT(o.err, !Contains("internal error"));
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  if (!never.empty()) CHECK_FALSE(fs::exists(never));
}

// `attention-atlas WORKSPACE --quit-after-run` headless (offscreen), with its exit code and stderr.
Output run_atlas_gui(const fs::path& gui, const fs::path& workspace) {
  const fs::path err = fs::temp_directory_path() / ("atlas-selection-gui-err-" + std::to_string(::getpid()));
  const std::string cmd = "QT_QPA_PLATFORM=offscreen timeout -s KILL 120 " + gui.string() + " " + workspace.string() +
                          " --quit-after-run 2>" + err.string();
  const int status = std::system(cmd.c_str());
  const std::string e = atlas_test::read_all(err);
  fs::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, "", e};
}

bool export_missing() {
  static const bool missing = atlas_test::no_ui(run_atlas("export preset:tiny-decoder --text a --out /nonexistent/x.npy"));
  return missing;
}

}  // namespace

TEST_CASE("atlas export refuses an attention view's layer, step, segment, head or query out of range",
          "[cli][selection]") {
  if (export_missing()) return;
  const fs::path dir = fresh_dir("selection-views");
  fs::create_directories(dir);
  const fs::path out = dir / "x.svg";
  // tiny-decoder: 2 layers of 4 heads; "abc" is 3 tokens.
  const std::string dec = "export preset:tiny-decoder --text abc --out " + out.string() + " ";
  const std::string layers = "the decoder self-attention has 2 layers (0 to 1)";
  check_index_refused(dec + "--layer 99", {"--layer 99 is out of range: " + layers}, out);
  check_index_refused(dec + "--layer -1", {"--layer -1 is out of range: " + layers}, out);
  check_index_refused(dec + "--layer " + kTwoTo63, {"--layer " + kTwoTo63 + " is out of range: " + layers}, out);
  check_index_refused(dec + "--layer two", {"--layer must be an integer, got \"two\""}, out);
  const std::string heads = "the decoder self-attention has 4 heads (0 to 3, or mean, max, rollout, flow)";
  check_index_refused(dec + "--head 4", {"--head 4 is out of range: " + heads}, out);
  check_index_refused(dec + "--head -1", {"--head -1 is out of range: " + heads}, out);
  check_index_refused(dec + "--head " + kTwoTo63, {"--head " + kTwoTo63 + " is out of range: " + heads}, out);
  check_index_refused(dec + "--head average", {"--head 'average' is not a head number or one of mean, max"}, out);
  const std::string queries = "the decoder self-attention has 3 queries (0 to 2, or -1 for all)";
  check_index_refused(dec + "--view tokens --query 3", {"--query 3 is out of range: " + queries}, out);
  check_index_refused(dec + "--view tokens --query -5", {"--query -5 is out of range: " + queries}, out);
  check_index_refused(dec + "--view tokens --query " + kTwoTo63, {"--query " + kTwoTo63 + " is out of range"}, out);
  check_index_refused(dec + "--view tokens --query x", {"--query must be an integer, got \"x\""}, out);
  // A Universal Transformer's steps count from 1; a Transformer-XL's segments from 0.
  const std::string ut = "export preset:tiny-ut-act --text abc --out " + out.string() + " ";
  check_index_refused(ut + "--step 0", {"--step 0 is out of range: the ", " steps (1 to "},
                      out);
  check_index_refused(ut + "--step " + kTwoTo63, {"--step " + kTwoTo63 + " is out of range"}, out);
  const std::string xl = "export preset:tiny-xl --text abc --out " + out.string() + " ";
  check_index_refused(xl + "--segment 5", {"--segment 5 is out of range: this run has 1 segments", "(0 to 0)"}, out);
  check_index_refused(xl + "--segment -1", {"--segment -1 is out of range", "(0 to 0)"}, out);
  // In range, the same flags draw.
  REQUIRE(run_atlas(dec + "--view tokens --layer 1 --head 3 --query 2").code == 0);
  CHECK(fs::exists(out));
  fs::remove_all(dir);
}

TEST_CASE("atlas export --panel refuses a layer, head or query the panel does not have or follow",
          "[cli][selection][panels]") {
  if (export_missing()) return;
  const fs::path dir = fresh_dir("selection-panels");
  fs::create_directories(dir);
  const fs::path out = dir / "x.svg";
  const std::string o = " --out " + out.string();
  // Each panel that follows a part of the selection: the range named is what it draws from.
  check_index_refused("export preset:tiny-span --text abcd --panel span --layer 2" + o,
                      {"--layer 2 is out of range: the mask curves have 2 layers (0 to 1)"}, out);
  check_index_refused("export preset:tiny-span --text abcd --panel span --layer -1" + o,
                      {"--layer -1 is out of range: the mask curves have 2 layers (0 to 1)"}, out);
  check_index_refused("export preset:tiny-ut-act --text abcd --panel act --head 4" + o,
                      {"--head 4 is out of range: the steps' attention has 4 heads (0 to 3, or mean)"}, out);
  check_index_refused("export preset:tiny-ut-act --text abcd --panel act --head max" + o,
                      {"--head 'max' is not a head number or one of mean"}, out);
  check_index_refused("export preset:tiny-reformer --text abcd --panel lsh --head " + kTwoTo63 + o,
                      {"--head " + kTwoTo63 + " is out of range: the LSH layers have ", " heads (0 to "}, out);
  check_index_refused("export preset:tiny-xl --text abcd --panel xl --layer 2" + o,
                      {"--layer 2 is out of range: the segments have 2 layers (0 to 1)"}, out);
  check_index_refused("export preset:tiny-xl --text abcd --panel xl --head 4" + o,
                      {"--head 4 is out of range: the segments' attention has 4 heads (0 to 3)"}, out);
  check_index_refused("export preset:tiny-gtrxl --text abcd --panel gates --query 4" + o,
                      {"--query 4 is out of range: the gates cover 4 positions (0 to 3, or -1 for the panel's default)"},
                      out);
  check_index_refused("export preset:tiny-gtrxl --text abcd --panel gates --query -2" + o,
                      {"--query -2 is out of range: the gates cover 4 positions (0 to 3"}, out);
  check_index_refused("export preset:tiny-decoder --text abcd --panel predictions --query 40" + o,
                      {"--query 40 is out of range: the logits have 4 positions (0 to 3"}, out);
  check_index_refused("export preset:tiny-decoder --text abcd --panel qk --layer 2" + o,
                      {"--layer 2 is out of range: the self-attention has 2 layers (0 to 1)"}, out);
  check_index_refused("export preset:tiny-decoder --text abcd --panel qk --head 4" + o,
                      {"--head 4 is out of range: the self-attention has 4 heads (0 to 3)"}, out);
  check_index_refused("export preset:tiny-rope --text abcd --panel rope --layer 9" + o,
                      {"--layer 9 is out of range: the self-attention has ", " layers (0 to "}, out);
  check_index_refused("export preset:tiny-rope --text abcd --panel rope --layer x" + o,
                      {"--layer must be an integer, got \"x\""}, out);
  // A part the panel does not follow is refused too: its plots are the same whatever it is.
  check_index_refused("export preset:tiny-decoder --text abcd --panel heads --layer 0" + o,
                      {"--layer 0: the Head statistics panel follows no layer", "leave --layer out"}, out);
  check_index_refused("export preset:tiny-decoder --text abcd --panel heads --query 99" + o,
                      {"--query 99: the Head statistics panel follows no position"}, out);
  check_index_refused("export preset:tiny-span --text abcd --panel span --head 0" + o,
                      {"--head 0: the Adaptive span panel follows no head"}, out);
  // --plot by number.
  check_index_refused("export preset:tiny-decoder --text abcd --panel heads --plot 99" + o,
                      {"--plot 99 is out of range: the Head statistics panel has ", " plots for this run (0 to "}, out);
  check_index_refused("export preset:tiny-decoder --text abcd --panel heads --plot -1" + o,
                      {"--plot -1 is out of range"}, out);
  check_index_refused("export preset:tiny-decoder --text abcd --panel heads --plot " + kTwoTo63 + o,
                      {"--plot " + kTwoTo63 + " is out of range"}, out);
  // In range, the selection is the one drawn: span's layer 1 mask curve is named by its layer.
  REQUIRE(run_atlas("export preset:tiny-span --text abcd --panel span --layer 1 --list-plots").out.find(
              "mask curve m_z(x), layer 1") != std::string::npos);
  REQUIRE(run_atlas("export preset:tiny-gtrxl --text abcd --panel gates --query 3 --list-plots").out.find(
              "at position 3") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("atlas compare, scores, ablate and the ablation flags name the valid range", "[cli][selection]") {
  const fs::path dir = fresh_dir("selection-verbs");
  fs::create_directories(dir);
  if (!export_missing()) {
    const fs::path out = dir / "c.svg";
    const std::string cmp = "compare preset:tiny-decoder --text abc --text-b abd --out " + out.string() + " ";
    check_index_refused(cmp + "--layer 2", {"--layer 2 is out of range: the decoder self-attention has 2 layers (0 to 1)"},
                        out);
    check_index_refused(cmp + "--head -3", {"--head -3 is out of range: the decoder self-attention has 4 heads (0 to 3"},
                        out);
  }
  const std::string scores = "scores preset:tiny-decoder --text abc ";
  check_index_refused(scores + "--layer 2", {"--layer: layer 2 is out of range: the attention layers are 0 to 1"});
  check_index_refused(scores + "--layer -1", {"layer -1 is out of range: the attention layers are 0 to 1"});
  check_index_refused(scores + "--layer " + kTwoTo63, {"is out of range: the attention layers are 0 to 1"});
  check_index_refused(scores + "--layer one", {"--layer must be an integer, got \"one\""});
  check_index_refused(scores + "--head 4", {"--head must be between 0 and 3, got 4"});
  const std::string ablate =
      "ablate preset:tiny-decoder --text abc --sweep heads --metric logit-diff --token-a a --token-b b ";
  check_index_refused(ablate + "--position 3", {"position 3 is outside the 3 output positions (0..2, or -1 for the last)"});
  check_index_refused(ablate + "--position -5", {"position -5 is outside the 3 output positions (0..2"});
  check_index_refused(ablate + "--position " + kTwoTo63, {"is outside the 3 output positions (0..2"});
  check_index_refused(ablate + "--position last", {"--position must be an integer, got \"last\""});
  const std::string drop = "ablate preset:tiny-decoder --text abc --sweep heads ";
  if (!export_missing()) {
    const std::string panel = "export preset:tiny-decoder --text abc --panel ablation --out " + (dir / "a.npy").string() + " ";
    check_index_refused(panel + "--drop-heads 2:0", {"--drop-heads: layer 2 does not exist; the model has 2 layers (0..1)"});
    check_index_refused(panel + "--drop-heads 0:4", {"--drop-heads: head 4 does not exist; layers have 4 heads (0..3)"});
    check_index_refused(panel + "--drop-layers 99999999999999999999",
                        {"--drop-layers: layer 9223372036854775807 does not exist; the model has 2 layers (0..1)"});
  }
  fs::remove_all(dir);
}

TEST_CASE("atlas corpus-query refuses a layer or head its index does not hold, for links and heads",
          "[cli][selection][corpus]") {
  const fs::path dir = fresh_dir("selection-corpus");
  fs::create_directories(dir);
  std::ofstream(dir / "corpus.txt") << "abcabc\nxyzxyz\n";
  const Output made = run_atlas("corpus demo:induction --file " + (dir / "corpus.txt").string() + " --out " +
                                (dir / "index").string());
  INFO(made.err);
  REQUIRE(made.code == 0);
  const std::string q = "corpus-query " + (dir / "index").string() + " ";
  for (const std::string mode : {"", "--heads "}) {
    check_index_refused(q + mode + "--layer 2", {"--layer 2: the index holds no map of that layer (layers 0 to 1)"});
    check_index_refused(q + mode + "--layer -1", {"--layer -1: the index holds no map of that layer (layers 0 to 1)"});
    check_index_refused(q + mode + "--head 4", {"--head 4: the index's maps have heads 0 to 3"});
    check_index_refused(q + mode + "--head " + kTwoTo63, {": the index's maps have heads 0 to 3"});
    check_index_refused(q + mode + "--head h", {"--head must be an integer, got \"h\""});
  }
  fs::remove_all(dir);
}

TEST_CASE("the desktop app refuses a workspace naming a layer, head or query its run does not have",
          "[cli][selection][gui]") {
  const fs::path gui = fs::path(ATLAS_CLI).parent_path() / "attention-atlas";
  if (!fs::exists(gui)) {
    WARN("no attention-atlas in this build (ATLAS_GUI=OFF): skipped");
    return;
  }
  const fs::path dir = fresh_dir("selection-workspace");
  fs::create_directories(dir);
  // tiny-decoder: decoder self-attention, 2 layers of 4 heads; "abc" is 3 queries.
  const auto workspace = [&](const std::string& selection, int query) {
    const fs::path p = dir / "w.atlas";
    std::ofstream(p) << R"({"format": "attention-atlas-workspace", "version": 1, "model": "preset:tiny-decoder",
                           "source": "abc", "selection": )" << selection << R"(, "query": )" << query << "}";
    return run_atlas_gui(gui, p);
  };
  const std::string self = R"("stack": "decoder", "kind": "self_attn")";
  for (const auto& [selection, query, says] : std::vector<std::tuple<std::string, int, std::string>>{
           {"{" + self + R"(, "layer": 99})", -1,
            "layer 99 is out of range: the decoder self-attention has 2 layers (0 to 1)"},
           {"{" + self + R"(, "head": 4})", -1,
            "head 4 is out of range: the decoder self-attention has 4 heads (0 to 3, or mean, max, rollout, flow)"},
           {"{" + self + R"(, "segment": 2})", -1, "segment 2: the decoder self-attention has no segments"},
           {"{" + self + "}", 40, "query 40 is out of range: the decoder self-attention has 3 queries (tokens 0 to 2)"},
           {R"({"stack": "encoder", "kind": "attn"})", -1,
            "the workspace shows the encoder attn attention, which this run does not have (it has: decoder self-attention)"}}) {
    const Output o = workspace(selection, query);
    INFO(selection << " query " << query << "\nstderr: " << o.err);
    CHECK(o.code == 1);
    CHECK_THAT(o.err, Contains("attention-atlas: the workspace's selection: " + says));
  }
  // In range it opens.
  CHECK(workspace("{" + self + R"(, "layer": 1, "head": 3})", 2).code == 0);
  fs::remove_all(dir);
}
