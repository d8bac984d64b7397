// Seed 004's attention family through the real `atlas` executable: the scores verb,
// the seq2seq and pointer presets, dumped arrays with their documented shapes. The .npy header
// and data are read by hand (tests/app/cli_runner.h), independently of core/formats/npy.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Npy;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::read_npy;
using atlas_test::run_atlas;

TEST_CASE("atlas presets lists the attention family presets", "[cli][score][seq2seq][pointer]") {
  const Output o = run_atlas("presets");
  REQUIRE(o.code == 0);
  for (const char* name : {"seq2seq-gru-bahdanau", "seq2seq-lstm-luong-local", "seq2seq-gru-hard",
                           "pointer-net", "tiny-score-additive"}) {
    INFO(name);
    CHECK(o.out.find(std::string(name) + "\t") != std::string::npos);
  }
}

TEST_CASE("atlas scores dumps every function on the same head; scaled_dot is the model's own",
          "[cli][score]") {
  const fs::path dir = fresh_dir("scores"), run_dir = fresh_dir("scores-run");
  const Output o = run_atlas("scores preset:tiny-encoder --text abcd --layer 1 --head 2 --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("encoder.layer1.attn head 2"));
  CHECK_THAT(o.out, Catch::Contains("seeded weights"));
  for (const char* fn : {"scaled_dot", "dot", "general", "additive", "cosine", "location"}) {
    INFO(fn);
    const Npy p = read_npy(dir / (std::string("scores.") + fn + ".probs.npy"));
    CHECK(p.shape == "4, 4");
    for (int i = 0; i < 4; ++i) {
      double s = 0;
      for (int j = 0; j < 4; ++j) s += p.data[size_t(i * 4 + j)];
      CHECK(s == Approx(1.0).margin(1e-5));
    }
    CHECK(fs::exists(dir / (std::string("scores.") + fn + ".scores.npy")));
  }
  // The model's own attention of that head (fused backend path) equals scores.scaled_dot.probs
  // (host path from the traced q, k).
  REQUIRE(run_atlas("run preset:tiny-encoder --text abcd --dump " + run_dir.string()).code == 0);
  const Npy model = read_npy(run_dir / "encoder.layer1.attn.npy");
  const Npy mine = read_npy(dir / "scores.scaled_dot.probs.npy");
  REQUIRE(model.shape == "4, 4, 4");
  for (int k = 0; k < 16; ++k) CHECK(mine.data[size_t(k)] == Approx(model.data[size_t(2 * 16 + k)]).margin(1e-5));
  fs::remove_all(dir);
  fs::remove_all(run_dir);
}

TEST_CASE("atlas scores rejects bad selections with a message", "[cli][score]") {
  Output o = run_atlas("scores preset:tiny-encoder --text ab --attn encoder.layer9.attn");
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("encoder.layer0.attn"));
  o = run_atlas("scores preset:tiny-encoder --text ab --head 9");
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("--head"));
  o = run_atlas("scores preset:tiny-encoder --text ab --strength -1");
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("--strength"));
}

TEST_CASE("a model with a non-default score function runs and dumps", "[cli][score]") {
  const fs::path dir = fresh_dir("score-additive");
  const Output o = run_atlas("run preset:tiny-score-additive --text abc --target xy --scores --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(read_npy(dir / "decoder.layer0.cross_attn.npy").shape == "4, 3, 3");  // <bos> x y
  CHECK(read_npy(dir / "encoder.layer1.attn.scores.npy").shape == "4, 3, 3");
  fs::remove_all(dir);
}

TEST_CASE("seq2seq presets run and dump the alignment", "[cli][seq2seq]") {
  const fs::path dir = fresh_dir("seq2seq");
  Output o = run_atlas(
      "run preset:seq2seq-gru-bahdanau --text \"l' accord sur la zone\" --target \"the agreement on\" "
      "--hidden --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const Npy a = read_npy(dir / "seq2seq.alignment.npy");
  CHECK(a.shape == "1, 3, 5");
  CHECK(read_npy(dir / "decoder.layer0.cross_attn.npy").shape == "1, 3, 5");
  CHECK(read_npy(dir / "seq2seq.encoder_states.npy").shape == "5, 64");
  CHECK(read_npy(dir / "logits.npy").shape == "3, 25");
  fs::remove_all(dir);
  o = run_atlas("run preset:seq2seq-lstm-luong-local --text \"l' accord sur la zone\" --target \"the agreement\" "
                "--dump " + dir.string());
  REQUIRE(o.code == 0);
  CHECK(read_npy(dir / "seq2seq.local_center.npy").shape == "2,");
  fs::remove_all(dir);
  o = run_atlas("run preset:seq2seq-gru-hard --text \"l' accord\" --target \"the\"");
  CHECK(o.code == 0);
  o = run_atlas("run preset:seq2seq-gru-bahdanau --text \"l' accord\"");
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("target"));
}

TEST_CASE("pointer-net preset: greedy and teacher-forced pointers", "[cli][pointer]") {
  const fs::path dir = fresh_dir("pointer");
  Output o = run_atlas("run preset:pointer-net --text \"3 1 2\" --target \"1 2 3\" --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const Npy p = read_npy(dir / "pointer.probs.npy");
  CHECK(p.shape == "1, 3, 3");
  const Npy idx = read_npy(dir / "pointer.indices.npy");
  CHECK(idx.data == std::vector<float>{1, 2, 0});
  fs::remove_all(dir);
  o = run_atlas("run preset:pointer-net --text \"8 6 7 5\"");
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("pointer.probs") && Catch::Contains("[1, 4, 4]"));
  o = run_atlas("run preset:pointer-net --text \"3 1 2\" --target \"1 9\"");
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Catch::Contains("not in the source"));
}
