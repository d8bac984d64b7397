// atlas attribute (app/cli/cmd_attribute.cpp): the files it writes against
// core/analysis/attribution_patching.h run in this process on the same model, the exact column of
// --exact-top K against atlas patch's core function, and the refusals of bad input.
#include <catch2/catch.hpp>

#include <sstream>

#include "core/analysis/attribution_patching.h"
#include "core/formats/model_io.h"
#include "tests/app/cli_runner.h"

using namespace atlas_test;

namespace {

std::vector<std::vector<std::string>> attribute_csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream l(line);
    for (std::string c; std::getline(l, c, ',');) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST_CASE("atlas attribute writes the estimate grid and the exact top cells; both equal the core functions'",
          "[cli][attribute]") {
  const fs::path dir = fresh_dir("attribute");
  fs::create_directories(dir);
  const std::string args = "attribute preset:tiny-decoder --clean abcabcab --corrupted abcabxab --metric logit-diff "
                           "--tokens c,x --site resid --exact-top 3 --out-npy " + (dir / "grid.npy").string() +
                           " --csv " + (dir / "grid.csv").string();
  const Output o = run_atlas(args);
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("attribution patching (AtP) of resid, denoise, metric logit-diff") &&
                        Catch::Contains("Spearman rank correlation over these 3 cells"));
  const Npy grid = read_npy(dir / "grid.npy");
  CHECK(grid.shape == "2, 8");

  const atlas::Model model = atlas::load_model("preset:tiny-decoder");
  atlas::PatchSpec spec;
  spec.metric = atlas::PatchMetric::LogitDiff;
  spec.token_a = model.tokenizer().encode("c").front().id;
  spec.token_b = model.tokenizer().encode("x").front().id;
  const auto clean = model.tokenize("abcabcab", "").first, corrupted = model.tokenize("abcabxab", "").first;
  const atlas::PatchResult atp = atlas::attribution_patching(model, clean, corrupted, spec);
  const atlas::PatchResult exact = atlas::activation_patching(model, clean, corrupted, spec, atlas::RunOptions{});
  for (size_t i = 0; i < atp.normalised.size(); ++i) CHECK(grid.data[i] == Approx(atp.normalised[i]).margin(1e-6));

  const auto rows = attribute_csv_rows(read_all(dir / "grid.csv"));
  REQUIRE(rows.size() == 1 + 16);
  CHECK(rows[0] == std::vector<std::string>{"layer", "position", "estimate", "normalised", "exact", "exact_normalised"});
  const std::vector<int64_t> top = atlas::cells_by_effect(atp);
  int with_exact = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const int64_t cell = int64_t(i - 1);
    CAPTURE(cell);
    CHECK(std::stod(rows[i][2]) == Approx(atp.raw[size_t(cell)]).margin(1e-6));
    const bool in_top = std::find(top.begin(), top.begin() + 3, cell) != top.begin() + 3;
    CHECK(rows[i][4].empty() == !in_top);
    if (in_top) {
      CHECK(std::stod(rows[i][4]) == Approx(exact.raw[size_t(cell)]).margin(1e-6));
      ++with_exact;
    }
  }
  CHECK(with_exact == 3);
  fs::remove_all(dir);
}

TEST_CASE("atlas attribute --exact-all reports the rank correlation and top-k overlap; --ig-steps runs N passes",
          "[cli][attribute]") {
  const std::string m = "attribute preset:tiny-decoder --clean abcabcab --corrupted abcabxab --metric loss --tokens c ";
  Output o = run_atlas(m + "--site head-pos --exact-all --top 4");
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("Spearman rank correlation over all 64 cells") &&
                        Catch::Contains("top-4 overlap"));
  o = run_atlas(m + "--site head --ig-steps 5 --direction noise");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("integrated gradients, 5 steps") && Catch::Contains("7 tape passes"));
}

TEST_CASE("atlas attribute refuses bad input naming the problem", "[cli][attribute]") {
  const std::string m = "attribute preset:tiny-decoder --metric kl ";
  auto refused = [](const std::string& args, const std::string& says) {
    const Output o = run_atlas(args);
    INFO(args << "\n" << o.err);
    CHECK(o.code != 0);
    CHECK_THAT(o.err, Catch::Contains(says));
  };
  refused(m + "--site resid --clean abcd --corrupted abcde", "the clean input is 4 tokens and the corrupted input 5");
  refused(m + "--site resid --clean abcd --corrupted abce --ig-steps 0", "--ig-steps");
  refused(m + "--site resid --clean abcd --corrupted abce --max-memory 0.01", "backward needs about");
  refused(m + "--site resid --clean abcd --corrupted abce --max-memory 1x", "megabytes");
  refused(m + "--site resid --clean abcd --corrupted abce --exact-top 2 --exact-all", "give one");
  refused(m + "--site resid --clean abcd --corrupted abce --csv /dev/null", "/dev/null");
  refused("attribute preset:tiny-xl --metric kl --site head --clean abcd --corrupted abce", "standard layers");
  refused(m + "--clean abcd --corrupted abce", "attribute needs --site");
}
