// atlas dla (app/cli/cmd_dla.cpp) as a user runs it: the files it writes, read back by hand
// (tests/app/cli_runner.h), sum to the logit it writes, which is the logit `atlas run --dump`
// writes for the same text; bad input exits non-zero naming the problem.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::read_npy;

namespace {

Output dla_cli(const std::string& args) { return atlas_test::run_atlas(args); }

}  // namespace

TEST_CASE("atlas dla writes parts that sum to the logit it writes, which is the run's logit", "[cli][dla]") {
  const fs::path dir = fresh_dir("dla");
  const std::string text = " --text atlasofheadsatlasofheads";
  Output o = dla_cli("dla demo:induction" + text + " --out " + (dir / "all").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("position 23 ") && Catch::Contains("sum of parts"));
  const fs::path all = dir / "all";
  const auto heads = read_npy(all / "heads.npy");
  CHECK(heads.shape == "24, 2, 4");
  const auto mlp = read_npy(all / "mlp.npy"), bias = read_npy(all / "attn_bias.npy");
  const auto et = read_npy(all / "embed_tokens.npy"), ep = read_npy(all / "embed_positions.npy");
  const auto nb = read_npy(all / "norm_bias.npy"), ob = read_npy(all / "output_bias.npy");
  const auto logit = read_npy(all / "logit.npy"), tokens = read_npy(all / "tokens.npy");
  REQUIRE(logit.data.size() == 24);
  for (size_t i = 0; i < 24; ++i) {
    double s = double(et.data[i]) + ep.data[i] + nb.data[i] + ob.data[i];
    for (size_t l = 0; l < 2; ++l) {
      s += double(mlp.data[i * 2 + l]) + bias.data[i * 2 + l];
      for (size_t h = 0; h < 4; ++h) s += heads.data[(i * 2 + l) * 4 + h];
    }
    CHECK(std::fabs(s - logit.data[i]) <= 1e-4 * std::max(1.0, std::fabs(double(logit.data[i]))));
  }
  CHECK_THAT(read_all(all / "dla.csv"), Catch::StartsWith("position,token,against,component,layer,head,value\n0,"));

  // The logit written is the model's: the same cell of `atlas run --dump`'s logits.
  o = dla_cli("run demo:induction" + text + " --dump " + (dir / "dump").string());
  REQUIRE(o.code == 0);
  const auto run_logits = read_npy(dir / "dump" / "logits.npy");
  const size_t V = run_logits.data.size() / 24;
  for (size_t i = 0; i < 24; ++i)
    CHECK(logit.data[i] == run_logits.data[i * V + size_t(tokens.data[i])]);

  // One position, a logit difference, the per-source split: each head's keys sum to its part.
  o = dla_cli("dla preset:tiny-llama --text 'The fox' --position 6 --tokens a,#98 --per-source --out " +
              (dir / "one").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const auto ps = read_npy(dir / "one" / "per_source.npy"), one = read_npy(dir / "one" / "heads.npy");
  CHECK(ps.shape == "2, 4, 1, 7");
  CHECK(read_npy(dir / "one" / "positions.npy").data == std::vector<float>{6});
  for (size_t lh = 0; lh < 8; ++lh) {
    double s = 0;
    for (size_t j = 0; j < 7; ++j) s += ps.data[lh * 7 + j];
    CHECK(s == Approx(one.data[lh]).epsilon(1e-4).margin(1e-5));
  }
  o = dla_cli("dla preset:tiny-llama --text 'The fox' --position 6 --token a --csv");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("\n6,97,,head,1,3,") && Catch::Contains("\n6,97,,logit,,,"));
  fs::remove_all(dir);
}

TEST_CASE("atlas dla refuses bad input naming the problem", "[cli][dla]") {
  const std::string text = " --text atlas";
  auto err_of = [](const std::string& args) {
    const Output o = dla_cli(args);
    CHECK(o.code != 0);
    return o.err;
  };
  CHECK_THAT(err_of("dla demo:induction" + text + " --position 5"),
             Catch::Contains("--position 5 is out of range: this input has 5 tokens (0 to 4)"));
  CHECK_THAT(err_of("dla demo:induction" + text + " --position x"), Catch::Contains("--position must be an integer"));
  CHECK_THAT(err_of("dla demo:induction" + text + " --token ab"), Catch::Contains("--token") && Catch::Contains("2 tokens"));
  CHECK_THAT(err_of("dla demo:induction" + text + " --token '#999'"), Catch::Contains("outside the vocabulary"));
  CHECK_THAT(err_of("dla demo:induction" + text + " --tokens a"), Catch::Contains("--tokens takes two tokens as A,B"));
  CHECK_THAT(err_of("dla demo:induction" + text + " --token a --tokens a,b"), Catch::Contains("one of --token"));
  CHECK_THAT(err_of("dla preset:tiny-encoder" + text), Catch::Contains("post-norm") && Catch::Contains("supported: pre-norm"));
  CHECK_THAT(err_of("dla preset:tiny-encoder-decoder" + text), Catch::Contains("encoder-decoder"));
  CHECK_THAT(err_of("dla preset:tiny-xl" + text), Catch::Contains("not made of standard layers"));
  CHECK_THAT(err_of("dla demo:induction"), Catch::Contains("--text"));
}
