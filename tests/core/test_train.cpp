// The trainer against independent oracles: the inference engine (training forward == Model's
// forward on the same weights), hand-computed Adam steps, schedule values and losses, the
// tasks' definitions re-derived in the test, convergence on copy, save -> load -> same
// predictions, and exact resume.
#include <unistd.h>  // getpid: temp names of this process (test runs may share /tmp)
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/tensor/error.h"
#include "core/formats/model_io.h"
#include "core/model/presets.h"
#include "core/train/train_loop.h"
#include "tests/core/train_test_util.h"

using namespace atlas;
using namespace atlas::train;
namespace fs = std::filesystem;
using namespace atlas::train::testing;

namespace {

ModelConfig small_train_config(Architecture arch) {
  ModelConfig c;
  c.name = "train-test";
  c.architecture = arch;
  c.vocab_size = 12;
  c.pad_id = 10;
  c.bos_id = arch == Architecture::EncoderDecoder ? 11 : -1;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.n_decoder_layers = arch == Architecture::EncoderDecoder ? 2 : 0;
  c.max_positions = 32;
  c.tokenizer.kind = TokenizerKind::Bytes;
  c.vocab_size = 258;
  c.pad_id = 256;
  c.bos_id = arch == Architecture::EncoderDecoder ? 257 : -1;
  return c;
}

}  // namespace

TEST_CASE("training forward equals the inference engine's forward", "[train]") {
  SECTION("encoder, post-norm LayerNorm, ReLU, sinusoids, tied, padding mask") {
    check_same_as_inference(small_train_config(Architecture::Encoder), {72, 101, 108, 256, 256},
                            {});
  }
  SECTION("decoder, pre-norm ScaleNorm + FixNorm, GELU, learned positions, untied") {
    ModelConfig c = small_train_config(Architecture::Decoder);
    c.norm = NormKind::ScaleNorm;
    c.norm_position = NormPosition::Pre;
    c.fixnorm = true;
    c.activation = FfnActivation::Gelu;
    c.positional = Positional::Learned;
    c.output = OutputHead::Untied;
    check_same_as_inference(c, {1, 2, 3, 4, 5, 6}, {});
  }
  SECTION("encoder-decoder, GELU tanh, concatenated sinusoids, no biases") {
    ModelConfig c = small_train_config(Architecture::EncoderDecoder);
    c.activation = FfnActivation::GeluTanh;
    c.sinusoid_layout = SinusoidLayout::Concatenated;
    c.attention_bias = false;
    c.ffn_bias = false;
    check_same_as_inference(c, {65, 66, 67, 256}, {257, 65, 66});
  }
  SECTION("encoder with BERT's embeddings: token-type rows and the embedding LayerNorm") {
    // Training once left both out (its own embedding code); the shared piece
    // (core/model/embeddings.h) adds them on both sides.
    ModelConfig c = small_train_config(Architecture::Encoder);
    c.positional = Positional::Learned;
    c.embeddings.token_types = 2;
    c.embeddings.norm = true;
    check_same_as_inference(c, {72, 101, 108, 256}, {});
  }
  SECTION("every vanilla preset's shape") {
    for (const char* name : {"tiny-encoder", "tiny-decoder", "tiny-encoder-decoder",
                             "tiny-scalenorm"}) {
      INFO(name);
      ModelConfig c = preset_config(name);
      c.d_model = 16;
      c.d_ff = 16;
      const bool ed = c.architecture == Architecture::EncoderDecoder;
      check_same_as_inference(c, {10, 20, 30}, ed ? std::vector<int32_t>{257, 40}
                                                  : std::vector<int32_t>{});
    }
  }
}

TEST_CASE("Adam's first two steps equal the hand-computed update", "[train]") {
  // p = 1, lr 0.1, gradients 0.5 then -1 (beta1 0.9, beta2 0.98, eps 1e-9), by hand:
  //   t=1: m = 0.05, v = 0.005, m^ = 0.5, v^ = 0.25        -> p = 1 - 0.1 * 0.5 / 0.5 = 0.9
  //   t=2: m = -0.055, v = 0.0249, m^ = -0.2894737, v^ = 0.6287879 -> p = 0.9365054
  ParamsT<float> p{{"w", MatT<float>::Constant(1, 1, 1.0f)}};
  Adam adam;
  adam.update(p, {{"w", MatT<float>::Constant(1, 1, 0.5f)}}, 0.1);
  CHECK(p.at("w")(0, 0) == Approx(0.9).epsilon(1e-6));
  adam.update(p, {{"w", MatT<float>::Constant(1, 1, -1.0f)}}, 0.1);
  CHECK(p.at("w")(0, 0) == Approx(0.9365053914512175).epsilon(1e-6));
  CHECK(adam.steps() == 2);
}

TEST_CASE("warm-up schedule matches seed 002's formula at hand-picked steps", "[train]") {
  Schedule s;  // d 512, warmup 4000, multiplier 1: 512^-0.5 min(step^-0.5, step 4000^-1.5)
  s.d_model = 512;
  s.warmup = 4000;
  s.lr = 1.0;
  CHECK(s.at(1) == Approx(1.746928107421711e-07).epsilon(1e-9));
  CHECK(s.at(100) == Approx(1.746928107421711e-05).epsilon(1e-9));
  CHECK(s.at(4000) == Approx(0.0006987712429686843).epsilon(1e-9));  // the peak
  CHECK(s.at(16000) == Approx(0.00034938562148434214).epsilon(1e-9));  // half the peak
  s.kind = ScheduleKind::Constant;
  s.lr = 3e-4;
  CHECK(s.at(1) == 3e-4);
  CHECK(s.at(99999) == 3e-4);
}

TEST_CASE("label-smoothed cross-entropy equals the hand value", "[train]") {
  // logits (1, 2, 3), label 2, eps 0.1, V 3: q = (1/30, 1/30, 28/30);
  // log-sum-exp = 3 + ln(e^-2 + e^-1 + 1) = 3.4076059644;
  // loss = -sum q_k (z_k - lse) = (2.4076 + 1.4076) / 30 + 28 / 30 * 0.4076 = 0.5076059644
  MatT<double> z(1, 3);
  z << 1, 2, 3;
  int64_t correct = 0, count = 0;
  MatT<double> d;
  const double loss = smoothed_cross_entropy<double>(z, {2}, 0.1, &d, &correct, &count);
  CHECK(loss == Approx(0.5076059644).epsilon(1e-9));
  CHECK(correct == 1);
  CHECK(count == 1);
  // eps = 0: plain negative log-likelihood 0.4076059644
  CHECK(smoothed_cross_entropy<double>(z, {2}, 0.0, nullptr, nullptr, nullptr) ==
        Approx(0.4076059644).epsilon(1e-9));
}

TEST_CASE("clipping by global norm and DropHead's V schedule", "[train]") {
  ParamsT<float> g{{"a", MatT<float>::Constant(1, 1, 3.0f)}, {"b", MatT<float>::Constant(1, 1, 4.0f)}};
  CHECK(clip_global_norm(g, 1.0) == Approx(5.0));
  CHECK(g.at("a")(0, 0) == Approx(0.6f));
  CHECK(g.at("b")(0, 0) == Approx(0.8f));
  CHECK(clip_global_norm(g, 10.0) == Approx(1.0));  // under the limit: unchanged
  CHECK(g.at("a")(0, 0) == Approx(0.6f));
  // p 0.2, warm-up 10, total 110: down from 0.2 to 0 over the warm-up, then back up.
  CHECK(drop_head_rate(0.2, 0, 10, 110) == Approx(0.2));
  CHECK(drop_head_rate(0.2, 5, 10, 110) == Approx(0.1));
  CHECK(drop_head_rate(0.2, 10, 10, 110) == Approx(0.0));
  CHECK(drop_head_rate(0.2, 60, 10, 110) == Approx(0.1));
  CHECK(drop_head_rate(0.2, 110, 10, 110) == Approx(0.2));
}

TEST_CASE("tasks produce what their definitions say", "[train]") {
  Rng rng(3);
  std::string in, out;
  auto sample = [&](const char* name, int64_t length = 8) {
    make_task(name, {length, ""}).sample(rng, in, out);
  };
  sample("copy");
  CHECK(in.size() == 8);
  CHECK(out == in);
  sample("reverse");
  CHECK(out == std::string(in.rbegin(), in.rend()));
  sample("sort");
  CHECK(std::is_sorted(out.begin(), out.end()));
  CHECK(std::is_permutation(out.begin(), out.end(), in.begin()));
  sample("parity");
  int parity = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    parity ^= in[i] - '0';
    CHECK(out[i] - '0' == parity);
  }
  sample("addition");  // 4 + 4 digits
  CHECK(std::stoi(in.substr(0, 4)) + std::stoi(in.substr(5, 4)) == std::stoi(out));
  CHECK(out.size() == 5);
  sample("recall", 4);  // "k1v1k2v2k3v3k4v4?k"
  const char key = in.back();
  CHECK(in[in.size() - 2] == '?');
  CHECK(out[0] == in[in.find(key) + 1]);
  sample("induction");
  CHECK(in.size() == 9);
  CHECK(in.back() == in.front());
  CHECK(out == in.substr(1, 7));

  CHECK_THROWS_WITH(make_task("coppy", {}), Catch::Contains("did you mean copy"));
  CHECK_THROWS_WITH(make_task("char-lm", {}), Catch::Contains("--text-file"));
}

TEST_CASE("a typed example tokenizes to the training example", "[train]") {
  const Task task = make_task("copy", {3, ""});
  auto check = [&](Architecture arch, const std::string& source, const std::string& target,
                   const std::vector<int32_t>& labels_by_hand) {
    ModelConfig c = preset_config(arch == Architecture::Encoder   ? "tiny-encoder"
                                  : arch == Architecture::Decoder ? "tiny-decoder"
                                                                  : "tiny-encoder-decoder");
    configure_for_task(c, task, 3);
    const Model model(c, init_params(c, 1));
    const auto typed = typed_example(c, task, "abc", "abc");
    CHECK(typed.source == source);
    CHECK(typed.target == target);
    const Example ex = encode_example(c, task, model.tokenizer(), "abc", "abc");
    CHECK(ex.labels == labels_by_hand);
    // What Model::run tokenizes from the typed text is what training saw.
    std::vector<int32_t> ids;
    for (const auto& t : model.tokenizer().encode(typed.source)) ids.push_back(t.id);
    CHECK(ids == ex.source);
  };
  // vocab: 0 <unk>, 1..10 a..j, 11 '|', 12 '_'; a = 1, b = 2, c = 3
  // decoder: position p predicts token p + 1, so '|' (position 3) predicts the first a
  check(Architecture::Decoder, "abc|abc", "", {-1, -1, -1, 1, 2, 3, -1});
  check(Architecture::Encoder, "abc|___", "", {-1, -1, -1, -1, 1, 2, 3});
  check(Architecture::EncoderDecoder, "abc", "abc", {1, 2, 3});
}

TEST_CASE("copy converges, and the saved checkpoint predicts the same through Model",
          "[train][slow]") {
  ModelConfig c = preset_config("tiny-decoder");
  c.d_model = 32;
  c.d_ff = 64;
  TrainOptions o;
  o.task = "copy";
  o.steps = 150;
  o.batch = 16;
  o.seed = 7;
  o.schedule.warmup = 100;
  o.schedule.lr = 1.0;
  Trainer trainer(c, o);
  while (trainer.steps_done() < o.steps) trainer.step();
  const StepStats eval = trainer.evaluate(200, 99);
  CHECK(eval.accuracy > 0.99);

  const fs::path dir = fs::temp_directory_path() / ("atlas_train_test_ckpt-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  trainer.save(dir.string());
  const Model loaded = load_model(dir.string());
  Rng rng(5);
  for (int i = 0; i < 20; ++i) {
    std::string in, out;
    trainer.task().sample(rng, in, out);
    const auto typed = typed_example(loaded.config(), trainer.task(), in, out);
    const RunResult r = loaded.run(typed.source, typed.target, {});
    // The loaded model's argmax after the separator spells the input again.
    std::string predicted;
    for (size_t p = in.size(); p < in.size() + out.size(); ++p) {
      const float* row = r.output.data.data() + p * r.output.shape[1];
      const int64_t best = std::max_element(row, row + r.output.shape[1]) - row;
      predicted += loaded.tokenizer().label(static_cast<int32_t>(best));
    }
    CHECK(predicted == out);
  }
  fs::remove_all(dir);
}

TEST_CASE("a resumed run repeats the uninterrupted run exactly", "[train]") {
  ModelConfig c = preset_config("tiny-encoder-decoder");
  c.d_model = 16;
  c.d_ff = 32;
  TrainOptions o;
  o.task = "reverse";
  o.task_options.length = 5;
  o.steps = 12;
  o.batch = 4;
  o.reg.dropout = 0.1;
  o.reg.attention_dropout = 0.1;
  o.reg.layer_drop = 0.2;
  o.reg.drop_head = 0.2;
  o.schedule.warmup = 5;
  Trainer whole(c, o);
  std::vector<double> losses;
  while (whole.steps_done() < o.steps) losses.push_back(whole.step().loss);

  const fs::path dir = fs::temp_directory_path() / ("atlas_train_test_resume-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Trainer first(c, o);
  for (int i = 0; i < 5; ++i) CHECK(first.step().loss == losses[i]);
  first.save(dir.string());
  Trainer resumed = Trainer::resume(dir.string());
  CHECK(resumed.steps_done() == 5);
  for (size_t i = 5; i < losses.size(); ++i) CHECK(resumed.step().loss == losses[i]);
  for (const auto& [name, m] : whole.params()) CHECK(resumed.params().at(name) == m);
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint's train state with integers out of range is refused by name", "[train]") {
  // step 2^63 - 1 once overflowed step + 1, and a float step (1e300) was converted to an integer
  // (undefined behaviour); each integer is now checked on its JSON value against --steps' range.
  ModelConfig c = preset_config("tiny-encoder-decoder");
  c.d_model = 16;
  c.d_ff = 32;
  TrainOptions o;
  o.task = "reverse";
  o.task_options.length = 4;
  o.steps = 3;
  o.batch = 2;
  Trainer t(c, o);
  t.step();
  const fs::path dir = fs::temp_directory_path() / ("atlas_train_state_ints-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  t.save(dir.string());
  const fs::path state = dir / "train_state.json";
  std::string good;
  {
    std::ifstream in(state);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  REQUIRE(Trainer::resume(dir.string()).steps_done() == 1);  // the file as written resumes
  auto refused = [&](const std::string& key, const std::string& value, const std::string& says) {
    const size_t at = good.find("\"" + key + "\":");
    REQUIRE(at != std::string::npos);
    const size_t begin = good.find(':', at) + 1, end = good.find_first_of(",}\n", begin);
    std::ofstream(state) << good.substr(0, begin) + value + good.substr(end);
    CHECK_THROWS_WITH(Trainer::resume(dir.string()),
                      Catch::Contains("train_state.json: \"" + key + "\" is " + says));
  };
  refused("step", "9223372036854775807",
          "9223372036854775807, out of range: it must be an integer from 0 to 3");
  refused("step", "1e300", "1e+300, out of range");
  refused("steps", "4611686018427387904", "4611686018427387904, out of range");
  refused("batch", "1099511627776", "1099511627776, out of range: it must be an integer from 1 to 4096");
  refused("length", "-1", "-1, out of range");
  refused("warmup", "-9223372036854775808", "-9223372036854775808, out of range");
  refused("seed", "-5", "-5, not an integer >= 0");
  fs::remove_all(dir);
}

TEST_CASE("training rejects what it cannot train, naming it", "[train]") {
  TrainOptions o;
  CHECK_THROWS_WITH(Trainer(preset_config("seq2seq-gru-bahdanau"), o),
                    Catch::Contains("recurrent seq2seq"));
  CHECK_THROWS_WITH(Trainer(preset_config("ntm-small"), o),
                    Catch::Contains("Neural Turing Machine"));
  CHECK_THROWS_WITH(Trainer(preset_config("snail-small"), o), Catch::Contains("SNAIL"));
  CHECK_THROWS_WITH(Trainer(preset_config("tiny-vit"), o), Catch::Contains("image input"));
  TrainOptions performer_dropout = o;
  performer_dropout.reg.attention_dropout = 0.1;
  CHECK_THROWS_WITH(Trainer(preset_config("tiny-performer"), performer_dropout),
                    Catch::Contains("Performer never forms"));
  CHECK_THROWS_WITH(Trainer(preset_config("base-encoder"), o), Catch::Contains("output head"));
  o.task = "char-lm";
  o.task_options.text_path = ATLAS_SOURCE_DIR "/README.md";
  CHECK_THROWS_WITH(Trainer(preset_config("tiny-encoder"), o), Catch::Contains("decoder"));
  o.task = "copy";
  o.batch = 0;
  CHECK_THROWS_WITH(Trainer(preset_config("tiny-encoder"), o), Catch::Contains("batch"));
}
