// atlas patch --site path and --site q|k|v|pattern (app/cli/cmd_patch.cpp, cmd_path_patch.cpp):
// the files written against core/analysis/path_patching.h run in this process on the same model,
// and the refusals of bad input, each naming the problem with a non-zero exit.
#include <catch2/catch.hpp>

#include "core/analysis/path_patching.h"
#include "core/formats/model_io.h"
#include "tests/app/cli_runner.h"

using namespace atlas_test;

TEST_CASE("atlas patch --site path writes the sender grid; its cells equal the core function's",
          "[cli][patch][path]") {
  const std::string args = " preset:tiny-decoder --clean abcabcab --corrupted abcabxab --metric logit-diff --tokens c,x";
  const fs::path dir = fresh_dir("path-patch");
  Output o = run_atlas("patch" + args + " --site path --receivers 1.0,1.3 --receiver-input v --direction noise --out " +
                       dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("noise path patching into the receivers' v (1.0,1.3)") &&
                        Catch::Contains("strongest cells:"));
  const Npy grid = read_npy(dir / "grid.npy"), raw = read_npy(dir / "raw.npy");
  CHECK(grid.shape == "2, 4");  // sender layers x heads
  const std::string csv = read_all(dir / "grid.csv");
  CHECK_THAT(csv, Catch::StartsWith("sender_layer,sender_head,metric,normalised\n0,0,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 8);

  const atlas::Model model = atlas::load_model("preset:tiny-decoder");
  atlas::PathPatchSpec spec;
  spec.patch.direction = atlas::PatchDirection::Noise;
  spec.patch.token_a = model.tokenizer().encode("c").front().id;
  spec.patch.token_b = model.tokenizer().encode("x").front().id;
  spec.receivers = {{1, 0}, {1, 3}};
  spec.input = atlas::ReceiverInput::V;
  const auto clean = model.tokenize("abcabcab", "").first, corrupted = model.tokenize("abcabxab", "").first;
  const atlas::PathPatchResult r = atlas::path_patching(model, clean, corrupted, spec, atlas::RunOptions{});
  for (size_t cell = 0; cell < r.raw.size(); ++cell) {
    CAPTURE(cell);
    CHECK(raw.data[cell] == Approx(r.raw[cell]).epsilon(1e-6));
  }

  o = run_atlas("patch" + args + " --site path --receivers all --receiver-input k --out " + (dir / "all").string());
  REQUIRE(o.code == 0);
  CHECK(read_npy(dir / "all" / "grid.npy").shape == "2, 4, 2, 4");
  o = run_atlas("patch" + args + " --site pattern --out " + (dir / "pattern").string());
  REQUIRE(o.code == 0);
  CHECK(read_npy(dir / "pattern" / "grid.npy").shape == "2, 4");
  CHECK_THAT(read_all(dir / "pattern" / "grid.csv"), Catch::StartsWith("layer,row,head,metric,normalised\n0,decoder.layer0.self_attn,0,"));
  fs::remove_all(dir);
}

TEST_CASE("atlas patch --site path refuses bad input naming the problem", "[cli][patch][path]") {
  const std::string m = "patch preset:tiny-decoder --metric kl --clean abcd --corrupted abce ";
  auto refused = [](const std::string& args, const std::string& says) {
    const Output o = run_atlas(args);
    INFO(args << "\n" << o.err);
    CHECK(o.code != 0);
    CHECK_THAT(o.err, Catch::Contains(says));
  };
  refused(m + "--site path --receiver-input q", "--site path needs --receivers");
  refused(m + "--site path --receivers 1.0", "--receiver-input q, k or v");
  refused(m + "--site head --receivers 1.0", "--receivers and --receiver-input are for --site path");
  refused(m + "--site path --receivers 1-0 --receiver-input q", "\"1-0\" is not a head as layer.head");
  refused(m + "--site path --receivers 1.0 --receiver-input z", "q, k, v");
  refused(m + "--site path --receivers 4.0 --receiver-input q", "receiver 4.0 is outside the model's 2 layers");
  refused(m + "--site path --receivers 1.9 --receiver-input q", "receiver 1.9 is outside the model's 4 heads");
  refused("patch preset:tiny-xl --metric kl --clean abcd --corrupted abce --site path --receivers all --receiver-input q",
          "Transformer-XL");
  refused("patch preset:tiny-shaw --metric kl --clean abcd --corrupted abce --site pattern", "does not expose them");
}
