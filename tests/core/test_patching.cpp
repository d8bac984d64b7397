// Activation patching (core/analysis/patching.h) against an independent construction: a naive
// forward in double (plain loops, the equations of tests/core/naive_transformer.h) that can carry
// an edited activation (a head's output before W^O, an MLP output, the residual before a layer),
// run once on the source input to take the activation and once on the target input with it put
// in by hand. Every patched cell's metric must equal that hand-edited run's, for a GPT-2-like
// decoder, a post-norm encoder and a Llama-like decoder (RoPE, grouped-query heads, SwiGLU).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <functional>

#include "core/analysis/ablation.h"
#include "core/analysis/patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

using naive::Matrix;

// The heads' outputs before W^O [L][H * dh], with RoPE and grouped-query heads as the engine has
// them; `causal` masks later keys.
Matrix naive_heads(const Matrix& x, const ModelConfig& c, const ParamStore& p, const std::string& pre, bool causal) {
  auto bias = [&](const char* n) { return naive::has(p, pre + n) ? &naive::P(p, pre + n) : nullptr; };
  Matrix q = naive::linear(x, naive::P(p, pre + ".wq"), bias(".bq"));
  Matrix k = naive::linear(x, naive::P(p, pre + ".wk"), bias(".bk"));
  Matrix v = naive::linear(x, naive::P(p, pre + ".wv"), bias(".bv"));
  const size_t H = size_t(c.n_heads), dh = size_t(c.d_head()), L = x.size();
  if (c.positional == Positional::Rotary) {
    naive::rotate_rotary(q, c, H);
    naive::rotate_rotary(k, c, size_t(c.kv_heads()));
  }
  const size_t group = H / size_t(c.kv_heads());
  Matrix out = naive::zeros(L, H * dh);
  for (size_t h = 0; h < H; ++h)
    for (size_t i = 0; i < L; ++i) {
      const size_t kvh = h / group, last = causal ? i : L - 1;
      std::vector<double> s(last + 1);
      double mx = -1e300, z = 0;
      for (size_t j = 0; j <= last; ++j) {
        double dot = 0;
        for (size_t t = 0; t < dh; ++t) dot += q[i][h * dh + t] * k[j][kvh * dh + t];
        s[j] = dot / std::sqrt(double(dh));
        mx = std::max(mx, s[j]);
      }
      for (double& e : s) z += (e = std::exp(e - mx));
      for (size_t t = 0; t < dh; ++t) {
        double acc = 0;
        for (size_t j = 0; j <= last; ++j) acc += s[j] / z * v[j][kvh * dh + t];
        out[i][h * dh + t] = acc;
      }
    }
  return out;
}

// One edit of a naive run at one layer.
struct NaiveEdit {
  int64_t layer = -1;
  std::function<void(Matrix&)> resid;  // the residual stream before `layer`
  std::function<void(Matrix&)> heads;  // the heads' outputs before W^O at `layer`
  std::function<void(Matrix&)> mlp;    // the MLP output at `layer`
};

struct NaiveRun {
  Matrix logits;
  std::vector<Matrix> resid, heads, mlp;  // per layer
};

NaiveRun naive_patched_run(const ModelConfig& c, const ParamStore& p, const std::vector<TokenInfo>& tokens,
                   const NaiveEdit& edit = {}) {
  REQUIRE(!c.fixnorm);
  std::vector<int> ids;
  for (const TokenInfo& t : tokens) ids.push_back(t.id);
  const bool encoder = c.architecture == Architecture::Encoder;
  const std::string stack = encoder ? "encoder" : "decoder";
  NaiveRun r;
  Matrix x = naive::embed(ids, c, p);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string pre = stack + ".layer" + std::to_string(l);
    const std::string attn = pre + (encoder ? ".attn" : ".self_attn");
    if (l == edit.layer && edit.resid) edit.resid(x);
    r.resid.push_back(x);
    x = naive::sub(x, c, p, attn + "_norm", [&](const Matrix& h) {
      Matrix heads = naive_heads(h, c, p, attn, !encoder);
      if (l == edit.layer && edit.heads) edit.heads(heads);
      r.heads.push_back(heads);
      return naive::linear(heads, naive::P(p, attn + ".wo"), naive::has(p, attn + ".bo") ? &naive::P(p, attn + ".bo") : nullptr);
    });
    x = naive::sub(x, c, p, pre + ".ffn_norm", [&](const Matrix& h) {
      Matrix m = naive::ffn(h, c, p, pre + ".ffn");
      if (l == edit.layer && edit.mlp) edit.mlp(m);
      r.mlp.push_back(m);
      return m;
    });
  }
  if (c.norm_position == NormPosition::Pre) x = naive::norm(x, c, p, stack + ".final_norm");
  r.logits = naive::linear(x, naive::P(p, c.output == OutputHead::Tied ? "embed.tokens" : "output.weight"), nullptr);
  return r;
}

Tensor as_tensor(const Matrix& m) {
  Tensor t({int64_t(m.size()), int64_t(m[0].size())});
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t k = 0; k < m[i].size(); ++k) t.data[i * m[i].size() + k] = float(m[i][k]);
  return t;
}

struct PatchCase {
  std::string preset, clean, corrupted;
};

// The metric of the naive run with `edit`, as patching computes it from logits.
double edited_metric(const Model& model, const PatchSpec& spec, const NaiveRun& clean,
                     const std::vector<TokenInfo>& target, const NaiveEdit& edit) {
  const NaiveRun run = naive_patched_run(model.config(), model.params(), target, edit);
  return patch_metric(spec, as_tensor(clean.logits), as_tensor(run.logits));
}

void check_cell(double got, double want) { CHECK(got == Approx(want).epsilon(2e-4).margin(2e-4)); }

}  // namespace

TEST_CASE("every patched cell equals the naive run edited by hand to carry the source's activation",
          "[patching]") {
  for (const PatchCase& k : {PatchCase{"tiny-decoder", "abcab cab", "abcab cbb"}, PatchCase{"tiny-encoder", "abcab cab", "abxab cab"},
                        PatchCase{"tiny-llama", "abcab cab", "abcab cbb"}}) {
    CAPTURE(k.preset);
    const ModelConfig c = preset_test::small_preset_config(k.preset);
    const Model model(c, init_params(c, 11));
    const auto clean = model.tokenize(k.clean, "").first;
    const auto corrupted = model.tokenize(k.corrupted, "").first;
    REQUIRE(clean.size() == corrupted.size());
    const NaiveRun naive_clean = naive_patched_run(c, model.params(), clean);
    const NaiveRun naive_corrupted = naive_patched_run(c, model.params(), corrupted);
    // The oracle itself: the naive runs are the engine's (so an edit of them is a test of patching).
    const Tensor engine_clean = model.forward(clean, {}, RunOptions{}).output;
    REQUIRE(engine_clean.shape[1] == int64_t(naive_clean.logits[0].size()));
    for (size_t v = 0; v < naive_clean.logits.back().size(); ++v)
      REQUIRE(double(engine_clean.data[(clean.size() - 1) * naive_clean.logits[0].size() + v]) ==
              Approx(naive_clean.logits.back()[v]).margin(1e-4));

    const int64_t L = int64_t(clean.size()), H = c.n_heads, dh = c.d_head();
    for (const PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
      CAPTURE(patch_direction_name(dir));
      const bool denoise = dir == PatchDirection::Denoise;
      const NaiveRun& source = denoise ? naive_clean : naive_corrupted;
      const std::vector<TokenInfo>& target = denoise ? corrupted : clean;
      PatchSpec spec;
      spec.direction = dir;
      spec.metric = PatchMetric::LogitDiff;
      spec.token_a = 'c';
      spec.token_b = 'b';
      spec.position = c.architecture == Architecture::Encoder ? 2 : -1;

      spec.site = PatchSite::HeadPos;
      const PatchResult hp = activation_patching(model, clean, corrupted, spec, RunOptions{});
      REQUIRE(hp.shape == std::vector<int64_t>{c.n_layers, H, L});
      const double clean_metric = patch_metric(spec, as_tensor(naive_clean.logits), as_tensor(naive_clean.logits));
      const double corrupted_metric = patch_metric(spec, as_tensor(naive_clean.logits), as_tensor(naive_corrupted.logits));
      check_cell(hp.clean, clean_metric);
      check_cell(hp.corrupted, corrupted_metric);
      REQUIRE(std::fabs(clean_metric - corrupted_metric) > 1e-3);  // the inputs differ at the output
      for (int64_t l = 0; l < c.n_layers; ++l)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t p : {int64_t(3), int64_t(7), L - 1}) {
            CAPTURE(l, h, p);
            NaiveEdit e;
            e.layer = l;
            e.heads = [&](Matrix& m) {
              for (int64_t t = h * dh; t < (h + 1) * dh; ++t) m[size_t(p)][size_t(t)] = source.heads[size_t(l)][size_t(p)][size_t(t)];
            };
            check_cell(hp.raw[size_t(patch_cell(hp, l, h, p))], edited_metric(model, spec, naive_clean, target, e));
          }

      spec.site = PatchSite::Head;
      const PatchResult hr = activation_patching(model, clean, corrupted, spec, RunOptions{});
      REQUIRE(hr.shape == std::vector<int64_t>{c.n_layers, H});
      for (int64_t l = 0; l < c.n_layers; ++l)
        for (int64_t h = 0; h < H; ++h) {
          CAPTURE(l, h);
          NaiveEdit e;
          e.layer = l;
          e.heads = [&](Matrix& m) {
            for (int64_t i = 0; i < L; ++i)
              for (int64_t t = h * dh; t < (h + 1) * dh; ++t) m[size_t(i)][size_t(t)] = source.heads[size_t(l)][size_t(i)][size_t(t)];
          };
          check_cell(hr.raw[size_t(patch_cell(hr, l, h))], edited_metric(model, spec, naive_clean, target, e));
        }

      spec.site = PatchSite::Resid;
      const PatchResult rr = activation_patching(model, clean, corrupted, spec, RunOptions{});
      REQUIRE(rr.shape == std::vector<int64_t>{c.n_layers, L});
      for (int64_t l = 0; l < c.n_layers; ++l)
        for (int64_t p : {int64_t(2), int64_t(7), L - 1}) {
          CAPTURE(l, p);
          NaiveEdit e;
          e.layer = l;
          e.resid = [&](Matrix& m) { m[size_t(p)] = source.resid[size_t(l)][size_t(p)]; };
          check_cell(rr.raw[size_t(patch_cell(rr, l, p))], edited_metric(model, spec, naive_clean, target, e));
        }

      spec.site = PatchSite::Attn;
      const PatchResult ar = activation_patching(model, clean, corrupted, spec, RunOptions{});
      for (int64_t l = 0; l < c.n_layers; ++l)
        for (int64_t p : {int64_t(4), int64_t(7)}) {
          CAPTURE(l, p);
          NaiveEdit e;  // the sub-layer's output at p is W^O times the heads' outputs at p
          e.layer = l;
          e.heads = [&](Matrix& m) { m[size_t(p)] = source.heads[size_t(l)][size_t(p)]; };
          check_cell(ar.raw[size_t(patch_cell(ar, l, p))], edited_metric(model, spec, naive_clean, target, e));
        }

      if (c.norm_position == NormPosition::Pre) {
        spec.site = PatchSite::Mlp;
        const PatchResult mr = activation_patching(model, clean, corrupted, spec, RunOptions{});
        for (int64_t l = 0; l < c.n_layers; ++l)
          for (int64_t p : {int64_t(1), int64_t(7), L - 1}) {
            CAPTURE(l, p);
            NaiveEdit e;
            e.layer = l;
            e.mlp = [&](Matrix& m) { m[size_t(p)] = source.mlp[size_t(l)][size_t(p)]; };
            check_cell(mr.raw[size_t(patch_cell(mr, l, p))], edited_metric(model, spec, naive_clean, target, e));
          }
      }
    }
  }
}

TEST_CASE("denoising every position of the residual before layer 0 gives the clean metric; nothing, the corrupted",
          "[patching]") {
  for (const std::string preset : {"tiny-decoder", "tiny-llama"}) {
    CAPTURE(preset);
    const ModelConfig c = preset_test::small_preset_config(preset);
    const Model model(c, init_params(c, 5));
    // Different at one position only: a cell at any other position of layer 0 patches nothing.
    const auto clean = model.tokenize("the cat sat", "").first;
    const auto corrupted = model.tokenize("the bat sat", "").first;
    const int64_t L = int64_t(clean.size());
    for (const PatchMetric m : {PatchMetric::LogitDiff, PatchMetric::Prob, PatchMetric::KL, PatchMetric::Loss}) {
      CAPTURE(patch_metric_name(m));
      PatchSpec spec;
      spec.site = PatchSite::Resid;
      spec.metric = m;
      spec.token_a = 't';
      spec.token_b = 'a';
      const PatchResult r = activation_patching(model, clean, corrupted, spec, RunOptions{});
      int64_t differing = -1;
      for (int64_t p = 0; p < L; ++p)
        if (clean[size_t(p)].id != corrupted[size_t(p)].id) differing = p;
      REQUIRE(differing >= 0);
      for (int64_t p = 0; p < L; ++p) {
        CAPTURE(p);
        const double want = p == differing ? 1.0 : 0.0;  // all that differs patched, or nothing
        CHECK(r.normalised[size_t(patch_cell(r, 0, p))] == Approx(want).margin(1e-9));
      }
      if (m == PatchMetric::KL) CHECK(r.clean == 0.0);
    }
  }
}

TEST_CASE("a cancelled patching grid keeps its finished cells, the others NaN", "[patching]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 9));
  const auto clean = model.tokenize("the cat sat", "").first;
  const auto corrupted = model.tokenize("the bat sat", "").first;
  PatchSpec spec;
  spec.site = PatchSite::Head;
  spec.metric = PatchMetric::KL;
  const PatchResult full = activation_patching(model, clean, corrupted, spec, RunOptions{});
  REQUIRE(full.complete);
  for (const int64_t stop : {int64_t(0), int64_t(3), int64_t(full.raw.size()) - 1}) {
    CAPTURE(stop);
    std::atomic<bool> cancel{false};
    RunOptions o;
    o.cancel = &cancel;
    PatchResult partial;
    // progress(2 + k) follows cell k - 1: the flag set there stops the grid before cell `stop`.
    const auto progress = [&](int64_t done, int64_t) {
      if (done == 2 + stop) cancel = true;
    };
    CHECK_THROWS_AS(activation_patching(model, clean, corrupted, spec, o, progress, &partial), Cancelled);
    CHECK_FALSE(partial.complete);
    REQUIRE(partial.raw.size() == full.raw.size());
    REQUIRE(partial.normalised.size() == full.raw.size());
    for (size_t i = 0; i < full.raw.size(); ++i) {
      CAPTURE(i);
      if (int64_t(i) < stop) {
        CHECK(partial.raw[i] == full.raw[i]);
        CHECK(partial.normalised[i] == full.normalised[i]);
      } else {
        CHECK(std::isnan(partial.raw[i]));
        CHECK(std::isnan(partial.normalised[i]));
      }
    }
  }
}

TEST_CASE("patching refuses what it cannot do, naming the problem", "[patching]") {
  const ModelConfig dec = preset_test::small_preset_config("tiny-decoder");
  const Model model(dec, init_params(dec, 3));
  const auto a = model.tokenize("abcd", "").first;
  const auto b = model.tokenize("abcde", "").first;
  PatchSpec spec;
  spec.token_a = 'a';
  spec.token_b = 'b';
  REQUIRE_THROWS_WITH(activation_patching(model, a, b, spec, RunOptions{}),
                      Catch::Contains("clean input is 4 tokens") && Catch::Contains("corrupted input 5"));
  spec.position = 4;
  REQUIRE_THROWS_WITH(check_patching(model, a, a, spec), Catch::Contains("position 4 is outside"));
  spec.position = -1;
  spec.token_b = 100000;
  REQUIRE_THROWS_WITH(check_patching(model, a, a, spec), Catch::Contains("id 100000"));

  const ModelConfig enc = preset_test::small_preset_config("tiny-encoder");  // post-norm
  const Model encoder(enc, init_params(enc, 3));
  spec = PatchSpec{};
  spec.metric = PatchMetric::KL;
  spec.site = PatchSite::Mlp;
  const auto e = encoder.tokenize("abcd", "").first;
  REQUIRE_THROWS_WITH(check_patching(encoder, e, e, spec), Catch::Contains("pre-norm"));

  const ModelConfig xl = preset_test::small_preset_config("tiny-xl");
  const Model xl_model(xl, init_params(xl, 3));
  const auto x = xl_model.tokenize("abcd", "").first;
  spec.site = PatchSite::Resid;
  REQUIRE_THROWS_WITH(check_patching(xl_model, x, x, spec), Catch::Contains("no standard layers"));
  spec.site = PatchSite::Head;  // head sites work where the heads hook is called
  const auto y = xl_model.tokenize("abce", "").first;
  const PatchResult r = activation_patching(xl_model, x, y, spec, RunOptions{});
  CHECK(r.raw.size() == size_t(ablation_layer_count(xl) * xl.n_heads));
  for (double v : r.raw) CHECK(std::isfinite(v));

  const ModelConfig ed = preset_test::small_preset_config("tiny-encoder-decoder");
  const Model ed_model(ed, init_params(ed, 3));
  const auto s = ed_model.tokenize("abcd", "x").first;
  REQUIRE_THROWS_WITH(check_patching(ed_model, s, s, spec), Catch::Contains("encoder-decoder"));
}
