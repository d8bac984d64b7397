// Path patching (core/analysis/path_patching.h) against a hand-built expectation: the naive
// forward of tests/core/naive_head_inputs.h run as Wang et al.'s runs C and D by hand (C: the
// target with the sender head's output from the source and every other head's output set to the
// target's; D: the target with the receivers' q, k or v from C). A sender with no path to the
// receivers must leave the metric exactly at the target run's.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/path_patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/naive_head_inputs.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;
using naive_inputs::Matrix;

namespace {

// The metric of path patching sender (ls, hs) into `receivers`' input, built by hand.
double hand_built_path(const Model& model, const PathPatchSpec& spec, const std::vector<TokenInfo>& target,
                       const naive_inputs::Run& target_run, const naive_inputs::Run& source_run,
                       const Tensor& clean_logits, int64_t ls, int64_t hs, const std::vector<HeadRef>& receivers) {
  const ModelConfig& c = model.config();
  const int64_t dh = c.d_head();
  naive_inputs::Edits frozen;  // run C
  frozen.heads = [&](int64_t l, Matrix& heads) {
    heads = target_run.heads[size_t(l)];
    if (l == ls) naive_inputs::copy_head(heads, source_run.heads[size_t(l)], hs, dh);
  };
  const naive_inputs::Run run_c = naive_inputs::forward(c, model.params(), target, frozen);
  const size_t which = spec.input == ReceiverInput::Q ? 0 : spec.input == ReceiverInput::K ? 1 : 2;
  naive_inputs::Edits receive;  // run D
  receive.qkv = [&](int64_t l, Matrix& q, Matrix& k, Matrix& v) {
    Matrix& m = which == 0 ? q : which == 1 ? k : v;
    for (const HeadRef& r : receivers)
      if (r.layer == l) naive_inputs::copy_head(m, run_c.qkv[size_t(l)][which], r.head, dh);
  };
  const naive_inputs::Run run_d = naive_inputs::forward(c, model.params(), target, receive);
  return patch_metric(spec.patch, clean_logits, naive_inputs::as_tensor(run_d.logits));
}

struct PathCase {
  std::string preset;
  int64_t layers;
};

}  // namespace

TEST_CASE("path patching a sender into receivers equals runs C and D built by hand", "[patching][path]") {
  // 2 layers: a sender directly before its receivers; 3 layers (Llama-like: RoPE, grouped-query
  // heads): layer 1's heads between sender and receivers must be frozen at the target's outputs.
  for (const PathCase& k : {PathCase{"tiny-decoder", 2}, PathCase{"tiny-llama", 3}}) {
    CAPTURE(k.preset);
    ModelConfig c = preset_test::small_preset_config(k.preset);
    c.n_layers = k.layers;
    const Model model(c, init_params(c, 23));
    const auto clean = model.tokenize("abcab cab", "").first;
    const auto corrupted = model.tokenize("abcab cbb", "").first;
    const naive_inputs::Run naive_clean = naive_inputs::forward(c, model.params(), clean);
    const naive_inputs::Run naive_corrupted = naive_inputs::forward(c, model.params(), corrupted);
    const Tensor clean_logits = naive_inputs::as_tensor(naive_clean.logits);
    const int64_t H = c.n_heads, last = k.layers - 1;
    for (const PatchDirection dir : {PatchDirection::Noise, PatchDirection::Denoise})
      for (const ReceiverInput input : {ReceiverInput::Q, ReceiverInput::K, ReceiverInput::V}) {
        CAPTURE(patch_direction_name(dir), receiver_input_name(input));
        const bool denoise = dir == PatchDirection::Denoise;
        PathPatchSpec spec;
        spec.patch.direction = dir;
        spec.patch.token_a = 'c';
        spec.patch.token_b = 'b';
        spec.input = input;
        spec.receivers = {{last, 0}, {last, 2}};
        const PathPatchResult r = path_patching(model, clean, corrupted, spec, RunOptions{});
        REQUIRE(r.shape == std::vector<int64_t>{k.layers, H});
        REQUIRE(r.runs == 2 * (k.layers - 1) * H);  // C and D per sender before the receivers' layer
        const double span = r.clean - r.corrupted;
        REQUIRE(std::fabs(span) > 1e-3);
        int64_t moved = 0;
        for (int64_t ls = 0; ls < last; ++ls)
          for (int64_t hs = 0; hs < H; ++hs) {
            CAPTURE(ls, hs);
            const double want = hand_built_path(model, spec, denoise ? corrupted : clean,
                                                denoise ? naive_corrupted : naive_clean,
                                                denoise ? naive_clean : naive_corrupted, clean_logits, ls, hs,
                                                spec.receivers);
            const size_t cell = size_t(ls * H + hs);
            CHECK(r.raw[cell] == Approx(want).epsilon(2e-4).margin(2e-4));
            CHECK(r.normalised[cell] == Approx((r.raw[cell] - r.corrupted) / span).margin(1e-12));
            moved += std::fabs(r.raw[cell] - (denoise ? r.corrupted : r.clean)) > 1e-4;
          }
        CHECK(moved > 0);
      }

    // The grid: every head a receiver of its own.
    PathPatchSpec grid;
    grid.patch.token_a = 'c';
    grid.patch.token_b = 'b';
    grid.input = ReceiverInput::K;
    grid.patch.direction = PatchDirection::Noise;  // the target is the clean run
    const PathPatchResult g = path_patching(model, clean, corrupted, grid, RunOptions{});
    REQUIRE(g.shape == std::vector<int64_t>{k.layers, H, k.layers, H});
    for (int64_t ls = 0; ls < last; ++ls)
      for (int64_t hs = 0; hs < H; hs += 3)
        for (int64_t lr = ls + 1; lr < k.layers; ++lr)
          for (int64_t hr = 0; hr < H; ++hr) {
            CAPTURE(ls, hs, lr, hr);
            const double want = hand_built_path(model, grid, clean, naive_clean, naive_corrupted, clean_logits, ls,
                                                hs, {{lr, hr}});
            CHECK(g.raw[size_t(((ls * H + hs) * k.layers + lr) * H + hr)] == Approx(want).epsilon(2e-4).margin(2e-4));
          }
  }
}

TEST_CASE("a sender at or after its receiver's layer has no path: the metric is the target's bit for bit",
          "[patching][path]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-llama");
  const Model model(c, init_params(c, 29));
  const auto clean = model.tokenize("abcab cab", "").first;
  const auto corrupted = model.tokenize("abcab cbb", "").first;
  const int64_t H = c.n_heads, layers = c.n_layers;
  for (const PatchDirection dir : {PatchDirection::Noise, PatchDirection::Denoise}) {
    CAPTURE(patch_direction_name(dir));
    PathPatchSpec spec;
    spec.patch.direction = dir;
    spec.patch.token_a = 'c';
    spec.patch.token_b = 'b';
    spec.input = ReceiverInput::Q;
    spec.run_every_cell = true;  // run the cells without a path too: the claim is about the runs
    const PathPatchResult g = path_patching(model, clean, corrupted, spec, RunOptions{});
    REQUIRE(g.runs == layers * H * (1 + layers * H));
    const double target = dir == PatchDirection::Noise ? g.clean : g.corrupted;
    REQUIRE(g.clean != g.corrupted);
    int64_t checked = 0;
    for (int64_t ls = 0; ls < layers; ++ls)
      for (int64_t hs = 0; hs < H; ++hs)
        for (int64_t lr = 0; lr <= ls; ++lr)
          for (int64_t hr = 0; hr < H; ++hr) {
            CAPTURE(ls, hs, lr, hr);
            const size_t cell = size_t(((ls * H + hs) * layers + lr) * H + hr);
            CHECK(g.raw[cell] == target);
            CHECK(g.normalised[cell] == (dir == PatchDirection::Noise ? 1.0 : 0.0));
            ++checked;
          }
    CHECK(checked == H * H * layers * (layers + 1) / 2);
    spec.run_every_cell = false;  // the same cells without their runs
    const PathPatchResult skipped = path_patching(model, clean, corrupted, spec, RunOptions{});
    CHECK(skipped.runs == H * (1 + H));  // senders of layer 0 only, receivers in layer 1
    CHECK(skipped.raw == g.raw);
  }
}

TEST_CASE("path patching reads receivers as L.H lists and refuses what it cannot do, naming it", "[patching][path]") {
  CHECK(parse_receivers("all", "--receivers").empty());
  CHECK(parse_receivers("1.0,3.12", "--receivers") == std::vector<HeadRef>{{1, 0}, {3, 12}});
  for (const char* bad : {"", "1", "1.", ".2", "1.2,", "a.b", "1.2.3", "-1.0"})
    REQUIRE_THROWS_WITH(parse_receivers(bad, "--receivers"), Catch::Contains("--receivers") && Catch::Contains("layer.head"));
  REQUIRE_THROWS_WITH(parse_receiver_input("o", "--receiver-input"), Catch::Contains("q, k, v"));

  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 3));
  const auto a = model.tokenize("abcd", "").first;
  PathPatchSpec spec;
  spec.patch.metric = PatchMetric::KL;
  spec.receivers = {{2, 0}};
  REQUIRE_THROWS_WITH(check_path_patching(model, a, a, spec), Catch::Contains("receiver 2.0") && Catch::Contains("2 layers"));
  spec.receivers = {{1, 4}};
  REQUIRE_THROWS_WITH(check_path_patching(model, a, a, spec), Catch::Contains("receiver 1.4") && Catch::Contains("4 heads"));
  const ModelConfig xl = preset_test::small_preset_config("tiny-xl");
  const Model xl_model(xl, init_params(xl, 3));
  const auto x = xl_model.tokenize("abcd", "").first;
  spec.receivers = {};
  REQUIRE_THROWS_WITH(check_path_patching(xl_model, x, x, spec), Catch::Contains("Transformer-XL"));
}
