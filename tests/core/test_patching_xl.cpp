// Exact head patching on Transformer-XL (segments with memory; core/analysis/patching.h): every
// layer x head cell against a naive whole-text causal relative model (the equations of
// tests/core/naive_xl.h, with the memory covering every earlier token so the whole
// text is the segmented run) run on the target with head h's outputs of layer l set to the
// source's by hand. The heads hook is called once per segment; patching matches the calls.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "core/analysis/patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/naive_xl.h"
#include "tests/core/token_lists.h"

using namespace atlas;

namespace {

Tensor patch_xl_tensor(const naive::Matrix& m) {
  Tensor t({int64_t(m.size()), int64_t(m[0].size())});
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t k = 0; k < m[i].size(); ++k) t.data[i * m[i].size() + k] = float(m[i][k]);
  return t;
}

}  // namespace

TEST_CASE("head patching on Transformer-XL equals the naive whole-text run edited by hand", "[patching][xl]") {
  for (const NormPosition np : {NormPosition::Pre, NormPosition::Post}) {
    // mem_len 8 covers every earlier token: the segmented run is the whole-text one
    const ModelConfig c = naive::xl_test_config(np, 4, 8);
    const ParamStore p = init_params(c, 31);
    const Model model(c, p);
    const std::vector<int> clean_ids = {3, 17, 5, 9, 30, 1, 12, 7, 5, 3}, corrupted_ids = {3, 17, 5, 9, 30, 2, 12, 7, 5, 3};
    const auto clean = test::tokens(clean_ids), corrupted = test::tokens(corrupted_ids);
    const naive::XlRun naive_clean = naive::xl_whole_text(c, p, clean_ids), naive_corrupted = naive::xl_whole_text(c, p, corrupted_ids);
    const Tensor clean_logits = patch_xl_tensor(naive_clean.logits);
    for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
      CAPTURE(int(np), patch_direction_name(dir));
      const bool denoise = dir == PatchDirection::Denoise;
      PatchSpec spec;
      spec.site = PatchSite::Head;
      spec.direction = dir;
      spec.token_a = 5;
      spec.token_b = 9;
      const PatchResult r = activation_patching(model, clean, corrupted, spec, RunOptions{});
      REQUIRE(r.shape == std::vector<int64_t>{2, 2});
      CHECK(r.clean == Approx(patch_metric(spec, clean_logits, clean_logits)).margin(2e-4));
      CHECK(r.corrupted == Approx(patch_metric(spec, clean_logits, patch_xl_tensor(naive_corrupted.logits))).margin(2e-4));
      REQUIRE(std::fabs(r.clean - r.corrupted) > 1e-3);
      const naive::XlRun& source = denoise ? naive_clean : naive_corrupted;
      for (int64_t l = 0; l < 2; ++l)
        for (int64_t h = 0; h < 2; ++h) {
          CAPTURE(l, h);
          const naive::XlRun edited = naive::xl_whole_text(c, p, denoise ? corrupted_ids : clean_ids, [&](int64_t el, naive::Matrix& o) {
            if (el != l) return;
            for (size_t i = 0; i < o.size(); ++i)
              for (int64_t t = h * 4; t < (h + 1) * 4; ++t) o[i][size_t(t)] = source.heads[size_t(l)][i][size_t(t)];
          });
          const double want = patch_metric(spec, clean_logits, patch_xl_tensor(edited.logits));
          CHECK(r.raw[size_t(patch_cell(r, l, h))] == Approx(want).epsilon(2e-4).margin(2e-4));
        }
    }
  }
}
