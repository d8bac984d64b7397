// atlas patch (app/cli/cmd_patch.cpp): the files it writes (grid shape, raw values, the clean and
// corrupted metric, CSV rows), two cells against core/analysis/patching.h run in this process on
// the same model, and the refusals of bad input, each naming the problem with a non-zero exit.
#include <catch2/catch.hpp>

#include "core/analysis/patching.h"
#include "core/formats/model_io.h"
#include "tests/app/cli_runner.h"

using namespace atlas_test;

TEST_CASE("atlas patch writes the grid, the raw metric and the runs; two cells equal the core function's",
          "[cli][patch]") {
  const std::string args = " preset:tiny-decoder --clean abcabcab --corrupted abcabxab --metric logit-diff --tokens c,x";
  const fs::path dir = fresh_dir("patch");
  Output o = run_atlas("patch" + args + " --site resid --out " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("denoise patching of resid, metric logit-diff") &&
                        Catch::Contains("strongest cells:"));
  const Npy grid = read_npy(dir / "grid.npy"), raw = read_npy(dir / "raw.npy"), runs = read_npy(dir / "runs.npy");
  CHECK(grid.shape == "2, 8");  // layers x positions
  CHECK(raw.shape == "2, 8");
  CHECK(runs.shape == "2,");
  const std::string csv = read_all(dir / "grid.csv");
  CHECK_THAT(csv, Catch::StartsWith("layer,row,position,metric,normalised\n0,decoder.layer0,0,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 16);

  const atlas::Model model = atlas::load_model("preset:tiny-decoder");
  atlas::PatchSpec spec;
  spec.metric = atlas::PatchMetric::LogitDiff;
  spec.token_a = model.tokenizer().encode("c").front().id;
  spec.token_b = model.tokenizer().encode("x").front().id;
  const auto clean = model.tokenize("abcabcab", "").first, corrupted = model.tokenize("abcabxab", "").first;
  const atlas::PatchResult r = atlas::activation_patching(model, clean, corrupted, spec, atlas::RunOptions{});
  CHECK(runs.data[0] == Approx(r.clean).epsilon(1e-6));
  CHECK(runs.data[1] == Approx(r.corrupted).epsilon(1e-6));
  for (const auto& [l, p] : std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {1, 3}}) {
    CAPTURE(l, p);
    const size_t cell = size_t(atlas::patch_cell(r, l, p));
    CHECK(raw.data[cell] == Approx(r.raw[cell]).epsilon(1e-6));
    CHECK(grid.data[cell] == Approx(r.normalised[cell]).epsilon(1e-6).margin(1e-7));
  }
  // Denoising the one corrupted token's embedding is the clean run.
  CHECK(grid.data[5] == Approx(1.0).margin(1e-6));

  o = run_atlas("patch" + args + " --site head-pos --direction noise --out " + (dir / "hp").string());
  REQUIRE(o.code == 0);
  CHECK(read_npy(dir / "hp" / "grid.npy").shape == "2, 4, 8");
  fs::remove_all(dir);
}

TEST_CASE("atlas patch refuses bad input naming the problem", "[cli][patch]") {
  const std::string m = "patch preset:tiny-decoder --metric kl ";
  auto refused = [](const std::string& args, const std::string& says) {
    const Output o = run_atlas(args);
    INFO(args << "\n" << o.err);
    CHECK(o.code != 0);
    CHECK_THAT(o.err, Catch::Contains(says));
  };
  refused(m + "--site resid --clean abcd --corrupted abcde", "the clean input is 4 tokens and the corrupted input 5");
  refused(m + "--site resid --clean abcd --corrupted abce --position 9", "--position 9 is out of range");
  refused(m + "--site mlps --clean abcd --corrupted abce", "resid, attn, mlp, head, head-pos");
  refused(m + "--site resid --clean abcd --corrupted abce --tokens a", "no --tokens");
  refused("patch preset:tiny-decoder --metric prob --site resid --clean abcd --corrupted abce --tokens ab",
          "2 tokens");
  refused("patch preset:tiny-decoder --metric logit-diff --site resid --clean abcd --corrupted abce --tokens a",
          "two tokens");
  refused("patch preset:tiny-xl --metric kl --site resid --clean abcd --corrupted abce", "no standard layers");
  refused("patch preset:tiny-encoder --metric kl --site mlp --clean abcd --corrupted abce", "pre-norm");
  refused(m + "--clean abcd --corrupted abce", "--site");
}
