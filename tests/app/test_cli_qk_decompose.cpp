// atlas qk-decompose (app/cli/cmd_qk_decompose.cpp) as a user runs it: the matrix it writes
// (.npy, read back by hand) sums to the score its CSV names, which is the cell of the scores
// `atlas run --scores --dump` writes for the same text; bad input exits non-zero naming the
// problem.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::read_npy;

namespace {

// The value of the CSV line starting with `prefix` ("score_traced,,,").
double qk_csv_value(const std::string& csv, const std::string& prefix) {
  const size_t at = csv.find("\n" + prefix);
  REQUIRE(at != std::string::npos);
  return std::stod(csv.substr(at + 1 + prefix.size()));
}

}  // namespace

TEST_CASE("atlas qk-decompose writes a matrix that sums to the head's score in atlas run's dump", "[cli][qk]") {
  const fs::path dir = fresh_dir("qk");
  fs::create_directories(dir);
  const std::string text = " --text atlasofheadsatlasofheads";
  Output o = atlas_test::run_atlas("qk-decompose demo:induction" + text + " --layer 1 --head 2 --query 20 --key 9 --value"
                                   " --out-npy " + (dir / "cells.npy").string() + " --csv " + (dir / "cells.csv").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("layer 1 head 2") && Catch::Contains("score ") && Catch::Contains("layer0.head") &&
                        Catch::Contains("value path"));
  const auto cells = read_npy(dir / "cells.npy");
  // embed.tokens, embed.positions, layer0.head0..3, layer0.attn_bias, layer0.mlp, bias
  CHECK(cells.shape == "9, 9");
  const std::string csv = read_all(dir / "cells.csv");
  CHECK_THAT(csv, Catch::StartsWith("kind,query_component,key_component,value\nscore,embed.tokens,embed.tokens,"));
  double sum = 0;
  for (float v : cells.data) sum += v;
  const double traced = qk_csv_value(csv, "score_traced,,,");
  CHECK(std::fabs(sum - traced) <= 1e-4 * std::max(1.0, std::fabs(traced)));

  // The score is the model's: the same cell of `atlas run --scores --dump`.
  o = atlas_test::run_atlas("run demo:induction" + text + " --scores --dump " + (dir / "dump").string());
  REQUIRE(o.code == 0);
  const auto scores = read_npy(dir / "dump" / "decoder.layer1.self_attn.scores.npy");
  REQUIRE(scores.shape == "4, 24, 24");
  CHECK(float(traced) == Approx(scores.data[(2 * 24 + 20) * 24 + 9]).epsilon(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("atlas qk-decompose on Transformer-XL: a key in the memory, the terms named, the sum is the segment's score",
          "[cli][qk][xl]") {
  const fs::path dir = fresh_dir("qk-xl");
  fs::create_directories(dir);
  // 40 bytes: segments of 16 (tokens 0-15, 16-31, 32-39); query 39 sees keys 16..39, 16..31 the memory.
  const std::string text = " --text abcdefghijklmnopqrstuvwxyz0123456789ABCD";
  Output o = atlas_test::run_atlas("qk-decompose preset:tiny-xl" + text + " --layer 1 --head 3 --query 39 --key 20 --value"
                                   " --out-npy " + (dir / "cells.npy").string() + " --csv " + (dir / "cells.csv").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("Transformer-XL segment 2; the key is in the memory") && Catch::Contains("value path"));
  const auto cells = read_npy(dir / "cells.npy");
  // rows: embed.tokens, layer0.head0..3, layer0.attn_bias, layer0.self_attn_norm.beta, layer0.mlp,
  // layer0.ffn_norm.beta, bias, xl.u, xl.v; columns: the 10 content ones, then xl.relative_position
  CHECK(cells.shape == "12, 11");
  const std::string csv = read_all(dir / "cells.csv");
  CHECK_THAT(csv, Catch::Contains("\nscore,xl.u (global content bias),layer0.head2,") &&
                      Catch::Contains("\nscore,xl.v (global position bias),xl.relative_position,") &&
                      Catch::Contains("\nscore,layer0.mlp,xl.relative_position,"));
  double sum = 0;
  for (float v : cells.data) sum += v;
  const double traced = qk_csv_value(csv, "score_traced,,,");
  CHECK(std::fabs(sum - traced) <= 1e-4 * std::max(1.0, std::fabs(traced)));

  // The score is the model's: segment 2's cell of `atlas run --scores --dump` (8 queries, 16 memory + 8 keys).
  o = atlas_test::run_atlas("run preset:tiny-xl" + text + " --scores --dump " + (dir / "dump").string());
  REQUIRE(o.code == 0);
  const auto scores = read_npy(dir / "dump" / "decoder.seg2.layer1.self_attn.scores.npy");
  REQUIRE(scores.shape == "4, 8, 24");
  CHECK(float(traced) == Approx(scores.data[(3 * 8 + 7) * 24 + 4]).epsilon(1e-6));
  CHECK_THAT(atlas_test::run_atlas("qk-decompose preset:tiny-xl" + text + " --layer 0 --head 0 --query 39 --key 3").err,
             Catch::Contains("key 3 is before the keys query 39 sees"));
  fs::remove_all(dir);
}

TEST_CASE("atlas qk-decompose refuses bad input naming the problem", "[cli][qk]") {
  const std::string text = " --text atlas";
  auto err_of = [](const std::string& args) {
    const Output o = atlas_test::run_atlas(args);
    CHECK(o.code != 0);
    return o.err;
  };
  const std::string base = "qk-decompose demo:induction" + text;
  CHECK_THAT(err_of(base + " --layer 2 --head 0 --query 3 --key 1"), Catch::Contains("layer 2 is outside the model's 2 layers"));
  CHECK_THAT(err_of(base + " --layer 0 --head 4 --query 3 --key 1"), Catch::Contains("head 4 is outside the layer's 4 heads"));
  CHECK_THAT(err_of(base + " --layer 0 --head 0 --query 5 --key 1"),
             Catch::Contains("query position 5 is outside the input's 5 tokens (0 to 4)"));
  CHECK_THAT(err_of(base + " --layer 0 --head 0 --query 2 --key 3"), Catch::Contains("key 3 is after query 2"));
  CHECK_THAT(err_of(base + " --layer 0 --head 0 --query 2"), Catch::Contains("needs --key"));
  CHECK_THAT(err_of(base + " --layer x --head 0 --query 2 --key 1"), Catch::Contains("--layer"));
  CHECK_THAT(err_of("qk-decompose demo:induction --layer 0 --head 0 --query 2 --key 1"), Catch::Contains("--text"));
  CHECK_THAT(err_of("qk-decompose preset:tiny-gtrxl" + text + " --layer 0 --head 0 --query 2 --key 1"),
             Catch::Contains("GTrXL's gates"));
  CHECK_THAT(err_of("qk-decompose preset:tiny-encoder" + text + " --layer 0 --head 0 --query 2 --key 1"),
             Catch::Contains("post-norm"));
  CHECK_THAT(err_of(base + " --layer 0 --head 0 --query 2 --key 1 --csv /dev/null"), Catch::Contains("--csv /dev/null"));
}
