// CLI of NTM, SAGAN and SNAIL verbs, driven as a user would: dumps hold the arrays
// with the shapes docs/variants.md gives, hand-computed values arrive intact, and bad input
// fails with a message naming it.
#include "tests/app/cli_runner.h"

using atlas_test::fresh_dir;
using atlas_test::read_all;
using atlas_test::run_atlas;
using Catch::Matchers::Contains;

TEST_CASE("atlas ntm --controls: a hand-worked step, its dump and a bad control", "[ntm][cli]") {
  const auto dir = fresh_dir("ntm");
  std::filesystem::create_directories(dir);
  // One read step: shift +1 from w_0 = slot 0 with g = 0 puts all weight on slot 1.
  std::ofstream(dir / "c.json") << R"({"memory": [[1, 0], [0, 1], [0, 0]], "heads": [{"name": "read0"}],
    "steps": [{"read0": {"key": [1, 0], "gate": 0, "shift": [0, 0, 1]}}]})";
  const auto r = run_atlas("ntm --controls " + (dir / "c.json").string() + " --dump " + (dir / "d").string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE_THAT(r.out, Contains("step 0 read0    w: 0.0000 1.0000 0.0000"));
  const std::string manifest = read_all(dir / "d" / "manifest.json");
  REQUIRE_THAT(manifest, Contains("ntm.step0.read0.sharpened"));
  REQUIRE_THAT(manifest, Contains("ntm.memory"));
  REQUIRE(std::filesystem::exists(dir / "d" / "ntm.read0.weights.npy"));

  std::ofstream(dir / "bad.json") << R"({"memory": [[1, 0]], "heads": [{"name": "read0"}],
    "steps": [{"read0": {"key": [1, 0], "gamma": 0.5, "shift": [1]}}]})";
  const auto bad = run_atlas("ntm --controls " + (dir / "bad.json").string());
  REQUIRE(bad.code == 1);
  REQUIRE_THAT(bad.err, Contains("bad.json") && Contains("head read0") && Contains("gamma"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("atlas run preset:ntm-small traces every stage", "[ntm][cli]") {
  const auto r = run_atlas("run preset:ntm-small --text abc");
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE_THAT(r.out, Contains("ntm.step2.write0.sharpened") && Contains("[4, 16, 8]"));
}

TEST_CASE("atlas sagan: test card, query and dump; bad query named", "[sagan][cli]") {
  const auto dir = fresh_dir("sagan");
  const auto r = run_atlas("sagan --query 3,4 --dump " + dir.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE_THAT(r.out, Contains("query (3,4) attends most to key locations"));
  REQUIRE_THAT(read_all(dir / "manifest.json"), Contains("sagan.attention") && Contains("1024"));
  const auto bad = run_atlas("sagan --query 40,1");
  REQUIRE(bad.code == 1);
  REQUIRE_THAT(bad.err, Contains("--query"));
  const auto missing = run_atlas("sagan --image /nonexistent/x.png");
  REQUIRE(missing.code == 1);
  REQUIRE_THAT(missing.err, Contains("/nonexistent/x.png"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("atlas snail: attention and receptive field arrays", "[snail][cli]") {
  const auto dir = fresh_dir("snail");
  const auto r = run_atlas("snail --text abcdefgh --dump " + dir.string());
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE_THAT(r.out, Contains("dilations 1 2 4") && Contains("reaches 8 of 8"));
  REQUIRE_THAT(read_all(dir / "manifest.json"), Contains("snail.attn2") && Contains("snail.receptive_field"));
  REQUIRE(run_atlas("snail").code == 1);
  std::filesystem::remove_all(dir);
}
