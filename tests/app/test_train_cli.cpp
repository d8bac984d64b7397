// `atlas train` as a user runs it: --json lines, the checkpoint `atlas run` opens, resume, and
// a clear message with a non-zero exit for each kind of bad input.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::run_atlas;

namespace {

const char* kTiny = "--preset tiny-decoder --d-model 16 --d-ff 32 --batch 4 --length 4 ";

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace

TEST_CASE("atlas train --json prints one parsable object per logged step", "[cli][train]") {
  const fs::path dir = fresh_dir("train-json");
  Output o = run_atlas(std::string("train ") + kTiny + "--task sort --steps 6 --log-every 2 --json --eval 10 --out " + dir.string());
  REQUIRE(o.code == 0);
  const auto lines = json_lines(o.out);
  REQUIRE(lines.size() == 4);  // steps 2, 4, 6 and the held-out evaluation
  for (int i = 0; i < 3; ++i) {
    CHECK(lines[i]["step"] == 2 * (i + 1));
    CHECK(lines[i]["loss"].is_number());
    CHECK(lines[i]["accuracy"].get<double>() >= 0.0);
    CHECK(lines[i]["accuracy"].get<double>() <= 1.0);
    CHECK(lines[i]["lr"].get<double>() > 0.0);
  }
  CHECK(lines[3].contains("eval_accuracy"));
  // The checkpoint opens in `atlas run` with the task's tokenizer.
  Output run = run_atlas("run " + dir.string() + " --text 'dcba|abcd'");
  CHECK(run.code == 0);
  CHECK_THAT(run.out, Catch::Contains("tokens (9)"));
  fs::remove_all(dir);
}

TEST_CASE("atlas train --resume continues a run with the same losses", "[cli][train]") {
  const fs::path whole = fresh_dir("train-whole"), part = fresh_dir("train-part");
  const std::string common = std::string("train ") + kTiny + "--task copy --log-every 1 --json --eval 0 ";
  Output a = run_atlas(common + "--steps 6 --out " + whole.string());
  Output b = run_atlas(common + "--steps 3 --out " + part.string());
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  Output c = run_atlas("train --resume " + part.string() + " --steps 6 --json --eval 0 --log-every 1");
  REQUIRE(c.code == 0);
  const auto la = json_lines(a.out), lc = json_lines(c.out);
  REQUIRE(la.size() == 6);
  REQUIRE(lc.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(lc[i]["step"] == la[3 + i]["step"]);
    CHECK(lc[i]["loss"] == la[3 + i]["loss"]);
  }
  SECTION("a different config is refused") {
    Output d = run_atlas("train --resume " + part.string() + " --preset tiny-encoder --steps 9");
    CHECK(d.code != 0);
    CHECK_THAT(d.err, Catch::Contains("different config"));
  }
  fs::remove_all(whole);
  fs::remove_all(part);
}

TEST_CASE("atlas train on a Universal Transformer with ACT reports the ponder cost", "[cli][train][act]") {
  const fs::path dir = fresh_dir("train-act");
  Output o = run_atlas("train --preset tiny-ut-act --d-model 16 --d-ff 32 --batch 4 --length 4 --task copy "
                       "--steps 4 --log-every 2 --json --eval 0 --ponder-weight 0.5 --out " + dir.string());
  REQUIRE(o.code == 0);
  const auto lines = json_lines(o.out);
  REQUIRE(lines.size() == 2);
  for (const auto& j : lines) {
    // N(t) >= 1 and R(t) in (0, 1]: the mean of N + R is in (1, M + 1]; the cost is weighted.
    CHECK(j["ponder"].get<double>() > 1.0);
    CHECK(j["ponder"].get<double>() <= 7.0);
    CHECK(j["ponder_cost"].get<double>() == Approx(0.5 * j["ponder"].get<double>()).epsilon(1e-6));
  }
  // The checkpoint runs in the engine, which traces the ponder counts it learned.
  Output run = run_atlas("run " + dir.string() + " --text 'abcd|abcd'");
  CHECK(run.code == 0);
  fs::remove_all(dir);
}

TEST_CASE("atlas train rejects bad input with a clear message", "[cli][train]") {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases{
      {"--preset tiny-decoder --task copi", "unknown task \"copi\""},
      {"--preset tiny-decodr --task copy", "tiny-decoder"},  // nearest preset suggested
      {"--preset tiny-decoder --task copy --steps 0", "--steps must be between 1"},
      {"--preset tiny-decoder --task copy --steps -5", "--steps must be between 1"},
      {"--preset tiny-decoder --task copy --batch 1000000", "--batch must be between 1 and 4096"},
      {"--preset tiny-decoder --task copy --steps 1 --out /proc/atlas-no", "--out /proc/atlas-no"},
      {"--preset tiny-encoder --task char-lm --text-file " ATLAS_SOURCE_DIR "/README.md",
       "needs a decoder"},
      {"--preset tiny-decoder --task char-lm --text-file /nonexistent-atlas.txt",
       "/nonexistent-atlas.txt: no such file"},
      {"--preset ntm-small --task copy", "Neural Turing Machine"},
      {"--preset tiny-ut-act --task copy --ponder-weight -1", "--ponder-weight must be between 0"},
      {"--preset tiny-decoder", "missing --task"},
      {"--resume /nonexistent-atlas-dir", "no train_state.json"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    Output o = run_atlas("train " + c.args);
    CHECK(o.code != 0);
    CHECK_THAT(o.err, Catch::Contains(c.message));
  }
}
