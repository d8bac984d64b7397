// atlas patch on an encoder-decoder model (app/cli/cmd_patch.cpp): --target and
// --corrupted-target, the grid's rows named by attention sub-layer on stdout and in the CSV, two
// cells against core/analysis/patching.h run in this process on the same model, and the
// refusals of bad input (mismatched sources or targets, layer sites, a target on a decoder,
// attribution patching), each naming the problem with a non-zero exit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <tuple>

#include "core/analysis/patching.h"
#include "core/formats/model_io.h"
#include "tests/app/cli_runner.h"

using namespace atlas_test;

TEST_CASE("atlas patch on an encoder-decoder model takes the targets and names the grid's rows", "[cli][patch][encdec]") {
  const std::string args = " preset:tiny-encoder-decoder --clean \"abcab c\" --corrupted \"abxab c\" --target bca"
                           " --corrupted-target bcb --metric logit-diff --tokens c,b";
  const fs::path dir = fresh_dir("patch-encdec");
  Output o = run_atlas("patch" + args + " --site head --out " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("at target position 3") &&
                        Catch::Contains("rows: 0 encoder.layer0.attn, 1 encoder.layer1.attn, 2 decoder.layer0.self_attn, "
                                        "3 decoder.layer0.cross_attn, 4 decoder.layer1.self_attn, 5 decoder.layer1.cross_attn") &&
                        Catch::Contains("(attention sub-layers x heads)"));
  const Npy grid = read_npy(dir / "grid.npy"), raw = read_npy(dir / "raw.npy");
  CHECK(grid.shape == "6, 4");  // sub-layers x heads
  const std::string csv = read_all(dir / "grid.csv");
  CHECK_THAT(csv, Catch::StartsWith("layer,row,head,metric,normalised\n0,encoder.layer0.attn,0,"));
  CHECK_THAT(csv, Catch::Contains("\n3,decoder.layer0.cross_attn,2,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 24);

  const atlas::Model model = atlas::load_model("preset:tiny-encoder-decoder");
  atlas::PatchSpec spec;
  spec.site = atlas::PatchSite::Head;
  spec.metric = atlas::PatchMetric::LogitDiff;
  spec.token_a = 'c';
  spec.token_b = 'b';
  atlas::PatchingInput clean, corrupted;
  std::tie(clean.source, clean.target) = model.tokenize("abcab c", "bca");
  std::tie(corrupted.source, corrupted.target) = model.tokenize("abxab c", "bcb");
  const atlas::PatchResult r = atlas::activation_patching(model, clean, corrupted, spec, atlas::RunOptions{});
  for (const auto& [row, h] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {3, 2}, {5, 0}}) {
    CAPTURE(row, h);
    const size_t cell = size_t(atlas::patch_cell(r, row, h));
    CHECK(raw.data[cell] == Approx(r.raw[cell]).epsilon(1e-6));
  }

  // head-pos: the position axis is the longer side (the source's 7); decoder rows stop at the
  // target's 4 positions, the rest empty in the CSV
  o = run_atlas("patch" + args + " --site head-pos --out " + (dir / "hp").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("source positions on encoder rows, target positions on decoder rows"));
  CHECK(read_npy(dir / "hp" / "grid.npy").shape == "6, 4, 7");
  CHECK_THAT(read_all(dir / "hp" / "grid.csv"), Catch::Contains("\n2,decoder.layer0.self_attn,0,5,,\n"));
  // resid: rows the encoder's layers then the decoder's
  o = run_atlas("patch" + args + " --site resid --out " + (dir / "resid").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("rows: 0 encoder.layer0, 1 encoder.layer1, 2 decoder.layer0, 3 decoder.layer1\n"));
  CHECK(read_npy(dir / "resid" / "grid.npy").shape == "4, 7");
  fs::remove_all(dir);
}

TEST_CASE("atlas patch refuses bad encoder-decoder input naming the problem", "[cli][patch][encdec]") {
  auto refused = [](const std::string& args, const std::string& says) {
    const Output o = run_atlas(args);
    INFO(args << "\n" << o.err);
    CHECK(o.code != 0);
    CHECK_THAT(o.err, Catch::Contains(says));
  };
  const std::string m = "patch preset:tiny-encoder-decoder --metric kl ";
  refused(m + "--site head --clean abcd --corrupted abcde --target xy",
          "the clean source is 4 tokens and the corrupted source 5");
  refused(m + "--site head --clean abcd --corrupted abce --target xy --corrupted-target xyz",
          "the clean target is 3 tokens and the corrupted target 4");
  refused(m + "--site attn --clean abcd --corrupted abce --target xy", "has two attention sub-layers (self and cross)");
  refused(m + "--site head --clean abcd --corrupted abce --target xy --position 3",
          "--position 3 is out of range: the clean target has 3 tokens");
  refused("patch preset:tiny-decoder --metric kl --site head --clean abcd --corrupted abce --target xy",
          "--target is an encoder-decoder model's decoder input; this model is a decoder");
  refused("patch preset:tiny-decoder --metric kl --site head --clean abcd --corrupted abce --corrupted-target xy",
          "--corrupted-target is an encoder-decoder model's decoder input");
  refused("attribute preset:tiny-encoder-decoder --metric kl --site head --clean abcd --corrupted abce",
          "an encoder-decoder model (a source and a target per run) is supported by activation patching with "
          "targets only (atlas patch --target)");
}
