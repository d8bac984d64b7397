// The q, k, v and pattern sites of activation patching (core/analysis/patching.h) against an
// independent construction: the naive forward of tests/core/naive_head_inputs.h run once on the
// source input to take the head's input and once on the target input with it put in by hand.
// For a GPT-2-like decoder, a post-norm encoder and a Llama-like decoder (RoPE, grouped-query
// heads: a query head's keys and values are its own copy of the shared head).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/ablation.h"
#include "core/analysis/patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/naive_head_inputs.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;
using naive_inputs::Matrix;

TEST_CASE("patching a head's q, k, v or pattern equals the naive run with that input replaced by hand",
          "[patching]") {
  struct Case {
    std::string preset, clean, corrupted;
  };
  for (const Case& k : {Case{"tiny-decoder", "abcab cab", "abcab cbb"}, Case{"tiny-encoder", "abcab cab", "abxab cab"},
                        Case{"tiny-llama", "abcab cab", "abcab cbb"}}) {
    CAPTURE(k.preset);
    const ModelConfig c = preset_test::small_preset_config(k.preset);
    const Model model(c, init_params(c, 13));
    const auto clean = model.tokenize(k.clean, "").first;
    const auto corrupted = model.tokenize(k.corrupted, "").first;
    const naive_inputs::Run naive_clean = naive_inputs::forward(c, model.params(), clean);
    const naive_inputs::Run naive_corrupted = naive_inputs::forward(c, model.params(), corrupted);
    const Tensor clean_logits = naive_inputs::as_tensor(naive_clean.logits);
    const int64_t H = c.n_heads, dh = c.d_head();
    for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
      CAPTURE(patch_direction_name(dir));
      const bool denoise = dir == PatchDirection::Denoise;
      const naive_inputs::Run& source = denoise ? naive_clean : naive_corrupted;
      const std::vector<TokenInfo>& target = denoise ? corrupted : clean;
      PatchSpec spec;
      spec.direction = dir;
      spec.token_a = 'c';
      spec.token_b = 'b';
      spec.position = c.architecture == Architecture::Encoder ? 2 : -1;
      for (const PatchSite site : {PatchSite::Q, PatchSite::K, PatchSite::V, PatchSite::Pattern}) {
        CAPTURE(patch_site_name(site));
        spec.site = site;
        const PatchResult r = activation_patching(model, clean, corrupted, spec, RunOptions{});
        REQUIRE(r.shape == std::vector<int64_t>{c.n_layers, H});
        REQUIRE(r.runs == c.n_layers * H);
        int64_t moved = 0;  // cells whose metric left the target's: the patch reaches the output
        for (int64_t l = 0; l < c.n_layers; ++l)
          for (int64_t h = 0; h < H; ++h) {
            CAPTURE(l, h);
            naive_inputs::Edits e;
            if (site == PatchSite::Pattern) {
              e.pattern = [&](int64_t el, int64_t eh, Matrix& p) {
                if (el == l && eh == h) p = source.pattern[size_t(l)][size_t(h)];
              };
            } else {
              const size_t which = site == PatchSite::Q ? 0 : site == PatchSite::K ? 1 : 2;
              e.qkv = [&, which](int64_t el, Matrix& q, Matrix& kk, Matrix& v) {  // `which` outlives this block
                if (el != l) return;
                Matrix& m = which == 0 ? q : which == 1 ? kk : v;
                naive_inputs::copy_head(m, source.qkv[size_t(l)][which], h, dh);
              };
            }
            const naive_inputs::Run edited = naive_inputs::forward(c, model.params(), target, e);
            const double want = patch_metric(spec, clean_logits, naive_inputs::as_tensor(edited.logits));
            const double got = r.raw[size_t(patch_cell(r, l, h))];
            CHECK(got == Approx(want).epsilon(2e-4).margin(2e-4));
            moved += std::fabs(got - (denoise ? r.corrupted : r.clean)) > 1e-4;
          }
        CHECK(moved > 0);
      }
    }
  }
}

TEST_CASE("patching any site of a run with itself changes nothing, bit for bit", "[patching]") {
  for (const std::string preset : {"tiny-decoder", "tiny-llama"}) {
    CAPTURE(preset);
    const ModelConfig c = preset_test::small_preset_config(preset);
    const Model model(c, init_params(c, 17));
    const auto tokens = model.tokenize("the cat sat", "").first;
    for (const PatchSite site : {PatchSite::Resid, PatchSite::Attn, PatchSite::Mlp, PatchSite::Head, PatchSite::HeadPos,
                                 PatchSite::Q, PatchSite::K, PatchSite::V, PatchSite::Pattern})
      for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
        CAPTURE(patch_site_name(site), patch_direction_name(dir));
        PatchSpec spec;
        spec.site = site;
        spec.direction = dir;
        spec.position = 4;  // cells after it run too (a causal model skips only later positions)
        spec.token_a = 't';
        spec.token_b = 'a';
        const PatchResult r = activation_patching(model, tokens, tokens, spec, RunOptions{});
        REQUIRE(r.runs > 0);
        CHECK(r.clean == r.corrupted);
        for (size_t i = 0; i < r.raw.size(); ++i) {
          CAPTURE(i);
          CHECK(r.raw[i] == r.clean);
          CHECK(std::isnan(r.normalised[i]));  // clean = corrupted: no scale
        }
      }
  }
}

TEST_CASE("the q, k, v and pattern sites refuse models whose attention does not expose them", "[patching]") {
  PatchSpec spec;
  spec.metric = PatchMetric::KL;
  const ModelConfig xl = preset_test::small_preset_config("tiny-xl");
  const Model xl_model(xl, init_params(xl, 3));
  const auto x = xl_model.tokenize("abcd", "").first;
  spec.site = PatchSite::K;
  REQUIRE_THROWS_WITH(check_patching(xl_model, x, x, spec), Catch::Contains("Transformer-XL") && Catch::Contains("--site head"));
  const ModelConfig shaw = preset_test::small_preset_config("tiny-shaw");
  const Model shaw_model(shaw, init_params(shaw, 3));
  const auto s = shaw_model.tokenize("abcd", "").first;
  spec.site = PatchSite::Pattern;
  REQUIRE_THROWS_WITH(check_patching(shaw_model, s, s, spec), Catch::Contains("pattern") && Catch::Contains("kernel"));
  spec.site = PatchSite::Q;  // a mechanism kernel still reads the hooked q, k, v
  const auto s2 = shaw_model.tokenize("abce", "").first;
  const PatchResult r = activation_patching(shaw_model, s, s2, spec, RunOptions{});
  for (double v : r.raw) CHECK(std::isfinite(v));
}
