// Attribution patching (core/analysis/attribution_patching.h). Oracles:
// - the layer-0 residual cell against central differences in double: the embeddings of the
//   corrupted run moved along (clean - corrupted) at one position on the tape's forward (no
//   backward code), the metric recomputed from the logits by the test's own formulas;
// - every other site against central differences of the inference engine's float forward with
//   the site moved by the activation hooks (a directional derivative, looser tolerance);
// - a model whose metric is affine in the site (the last layer's MLP output, norms with a huge
//   eps so the final norm is a fixed scale) where AtP must equal exact patching;
// - integrated gradients over the embeddings satisfy completeness (the layer-0 cells sum to
//   clean - corrupted) as the steps grow;
// - the ranking against exact patching on a small preset (numbers in docs/patching.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "core/analysis/attribution_patching.h"
#include "core/formats/packed_weights.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "core/train/train_model.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

PatchSpec atp_spec(PatchSite site, PatchMetric metric, PatchDirection d = PatchDirection::Denoise) {
  PatchSpec s;
  s.site = site;
  s.metric = metric;
  s.direction = d;
  s.token_a = 'a';
  s.token_b = 'b';
  return s;
}

// The metric of one row of logits in double, written out here (not patch_metric).
double row_metric(const PatchSpec& s, const std::vector<double>& clean, const std::vector<double>& x) {
  auto log_softmax = [](const std::vector<double>& v) {
    double mx = v[0], z = 0;
    for (double e : v) mx = std::max(mx, e);
    for (double e : v) z += std::exp(e - mx);
    std::vector<double> out;
    for (double e : v) out.push_back(e - mx - std::log(z));
    return out;
  };
  const std::vector<double> lq = log_softmax(x);
  switch (s.metric) {
    case PatchMetric::LogitDiff: return x[size_t(s.token_a)] - x[size_t(s.token_b)];
    case PatchMetric::Prob: return std::exp(lq[size_t(s.token_a)]);
    case PatchMetric::Loss: return -lq[size_t(s.token_a)];
    case PatchMetric::KL: {
      const std::vector<double> lp = log_softmax(clean);
      double kl = 0;
      for (size_t v = 0; v < x.size(); ++v) kl += std::exp(lp[v]) * (lp[v] - lq[v]);
      return kl;
    }
  }
  return 0;
}

using MD = train::MatT<double>;

// The tape's forward in double with the layers' input replaced by `embeddings` (or the ids'
// own when null): the last row's logits and the embeddings.
std::pair<std::vector<double>, MD> tape_run(const Model& model, const std::vector<TokenInfo>& tokens,
                                            const MD* embeddings) {
  const train::ParamsT<double> params = train::to_train_params<double>(model.params());
  train::Tape<double> tape;
  train::Example ex;
  for (const TokenInfo& t : tokens) ex.source.push_back(t.id);
  MD seen;
  train::ForwardEdits<double> edits;
  edits.embeddings = [&](train::Tape<double>& t, int x) {
    seen = t.value(x);
    return embeddings ? t.constant(*embeddings) : x;
  };
  const auto f = train::build_forward<double>(tape, model.config(), params, ex, {}, nullptr, edits);
  const MD& logits = tape.value(f.logits);
  std::vector<double> row(size_t(logits.cols()));
  for (Eigen::Index v = 0; v < logits.cols(); ++v) row[size_t(v)] = logits(logits.rows() - 1, v);
  return {row, seen};
}

// What the engine's run leaves for the hook oracle: every layer's input and output and every
// attention call's heads [L, H*dh].
struct HookedRun {
  std::map<std::string, std::pair<Tensor, Tensor>> layers;
  std::map<std::string, Tensor> heads;
};

HookedRun record(const Model& model, const std::vector<TokenInfo>& tokens) {
  HookedRun r;
  RunOptions o;
  o.hooks.layer = [&](const std::string& name, const Tensor& in, Tensor& out) { r.layers[name] = {in, out}; };
  o.hooks.heads = [&](const std::string& prefix, Tensor& h) { r.heads[prefix] = h; };
  model.forward(tokens, {}, o);
  return r;
}

Eigen::MatrixXd as_double(const Tensor& t) { return t.mat().cast<double>(); }

}  // namespace

TEST_CASE("the layer-0 residual estimate equals central differences of the tape's forward in double",
          "[attribution]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 7));
  const auto clean = model.tokenize("abcab cab", "").first, corrupted = model.tokenize("abxab cbb", "").first;
  const auto [clean_row, clean_embed] = tape_run(model, clean, nullptr);
  const auto [corr_row, corr_embed] = tape_run(model, corrupted, nullptr);
  for (PatchMetric m : {PatchMetric::LogitDiff, PatchMetric::Prob, PatchMetric::Loss, PatchMetric::KL}) {
    CAPTURE(patch_metric_name(m));
    const PatchSpec spec = atp_spec(PatchSite::Resid, m);
    AttributionOptions o;
    o.double_precision = true;
    const PatchResult r = attribution_patching(model, clean, corrupted, spec, o);
    CHECK(r.clean == Approx(row_metric(spec, clean_row, clean_row)).margin(1e-6));
    CHECK(r.corrupted == Approx(row_metric(spec, clean_row, corr_row)).margin(1e-6));
    const double h = 1e-5;
    int moved = 0;
    for (int64_t p = 0; p < int64_t(clean.size()); ++p) {
      CAPTURE(p);
      MD up = corr_embed, down = corr_embed;
      up.row(p) += h * (clean_embed.row(p) - corr_embed.row(p));
      down.row(p) -= h * (clean_embed.row(p) - corr_embed.row(p));
      const double numeric = (row_metric(spec, clean_row, tape_run(model, corrupted, &up).first) -
                              row_metric(spec, clean_row, tape_run(model, corrupted, &down).first)) / (2 * h);
      const double estimate = r.raw[size_t(patch_cell(r, 0, p))] - r.corrupted;
      CHECK(estimate == Approx(numeric).epsilon(1e-6).margin(1e-9));
      moved += clean[size_t(p)].id != corrupted[size_t(p)].id;
    }
    CHECK(moved == 2);
  }
}

TEST_CASE("every site's estimate equals central differences of the engine with the site moved by its hooks",
          "[attribution]") {
  for (const std::string preset : {"tiny-decoder", "tiny-llama"}) {
    CAPTURE(preset);
    const ModelConfig c = preset_test::small_preset_config(preset);
    const Model model(c, init_params(c, 9));
    const auto clean = model.tokenize("abcab cab", "").first, corrupted = model.tokenize("abxab cbb", "").first;
    const HookedRun cl = record(model, clean), co = record(model, corrupted);
    const int64_t H = c.n_heads, L = int64_t(clean.size());
    for (PatchSite site : {PatchSite::Resid, PatchSite::Attn, PatchSite::Mlp, PatchSite::Head, PatchSite::HeadPos}) {
      for (PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
        CAPTURE(patch_site_name(site), patch_direction_name(dir));
        const PatchSpec spec = atp_spec(site, PatchMetric::Loss, dir);
        AttributionOptions o;
        o.double_precision = true;
        const PatchResult r = attribution_patching(model, clean, corrupted, spec, o);
        const bool denoise = dir == PatchDirection::Denoise;
        const HookedRun& src = denoise ? cl : co;
        const HookedRun& tgt = denoise ? co : cl;
        const auto& target_tokens = denoise ? corrupted : clean;
        const double unpatched = denoise ? r.corrupted : r.clean;
        const Tensor clean_logits = model.forward(clean, {}, RunOptions{}).output;
        std::vector<double> estimates, numerics;
        for (int64_t cell = 0; cell < int64_t(r.raw.size()); ++cell) {
          const int64_t per_layer = int64_t(r.raw.size()) / r.shape[0];
          const int64_t l = cell / per_layer;
          const int64_t h = site == PatchSite::Head ? cell % H : site == PatchSite::HeadPos ? (cell / L) % H : -1;
          const int64_t p = site == PatchSite::Head ? -1 : cell % L;
          const std::string layer = "decoder.layer" + std::to_string(l), attn = layer + ".self_attn";
          if (site == PatchSite::Resid && l == 0) continue;  // the embeddings: the double test above
          auto metric_at = [&](double t) {
            RunOptions ro;
            if (site == PatchSite::Resid || site == PatchSite::Mlp) {
              const std::string at = site == PatchSite::Resid ? "decoder.layer" + std::to_string(l - 1) : layer;
              Eigen::RowVectorXd delta = as_double(src.layers.at(at).second).row(p) -
                                         as_double(tgt.layers.at(at).second).row(p);
              if (site == PatchSite::Mlp) {  // out - in - heads W^O^T, the biases cancel
                const Eigen::MatrixXd wo = as_double(to_float(model.params().at(attn + ".wo")));
                delta -= as_double(src.layers.at(at).first).row(p) - as_double(tgt.layers.at(at).first).row(p);
                delta -= (as_double(src.heads.at(attn)).row(p) - as_double(tgt.heads.at(attn)).row(p)) * wo.transpose();
              }
              ro.hooks.layer = [&, at, delta](const std::string& name, const Tensor&, Tensor& out) {
                if (name == at) out.mat().row(p) += (t * delta).cast<float>();
              };
            } else {
              ro.hooks.heads = [&](const std::string& prefix, Tensor& x) {
                if (prefix != attn) return;
                const int64_t dh = x.shape[1] / H;
                const int64_t c0 = h < 0 ? 0 : h * dh, nc = h < 0 ? x.shape[1] : dh;
                const int64_t r0 = p < 0 ? 0 : p, nr = p < 0 ? L : 1;
                const Eigen::MatrixXd d = as_double(src.heads.at(attn)).block(r0, c0, nr, nc) -
                                          as_double(tgt.heads.at(attn)).block(r0, c0, nr, nc);
                x.mat().block(r0, c0, nr, nc) += (t * d).cast<float>();
              };
            }
            return patch_metric(spec, clean_logits, model.forward(target_tokens, {}, ro).output);
          };
          const double hstep = 1e-2;
          numerics.push_back((metric_at(hstep) - metric_at(-hstep)) / (2 * hstep));
          estimates.push_back(r.raw[size_t(cell)] - unpatched);
        }
        double scale = 0;
        for (double n : numerics) scale = std::max(scale, std::fabs(n));
        CHECK(scale > 1e-3);  // something moves the metric
        for (size_t i = 0; i < numerics.size(); ++i) {
          CAPTURE(i);
          CHECK(estimates[i] == Approx(numerics[i]).margin(3e-3 * scale));
        }
      }
    }
  }
}

TEST_CASE("where the metric is affine in the site, attribution patching equals exact patching",
          "[attribution]") {
  // The last layer's MLP output reaches the logits through the final norm only. ScaleNorm is
  // g x / max(|x|, eps); with eps above every row's norm and g = eps it is the identity, exactly,
  // so logit-diff is affine in the site and the first-order estimate is exact. The attention
  // softmax and the MLP's GELU before the site stay non-linear.
  ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  c.norm = NormKind::ScaleNorm;
  c.norm_eps = 1000.0f;
  ParamStore params = init_params(c, 4);
  int gains = 0;
  for (auto& [name, t] : params)
    if (name.size() > 2 && name.compare(name.size() - 2, 2, ".g") == 0) {
      t.data[0] = 1000.0f;
      ++gains;
    }
  REQUIRE(gains == 2 * c.n_layers + 1);
  const Model model(c, std::move(params));
  const auto clean = model.tokenize("abcab cab", "").first, corrupted = model.tokenize("abxab cbb", "").first;
  for (PatchDirection dir : {PatchDirection::Denoise, PatchDirection::Noise}) {
    CAPTURE(patch_direction_name(dir));
    const PatchSpec spec = atp_spec(PatchSite::Mlp, PatchMetric::LogitDiff, dir);
    AttributionOptions o;
    o.double_precision = true;
    const PatchResult atp = attribution_patching(model, clean, corrupted, spec, o);
    const PatchResult exact = activation_patching(model, clean, corrupted, spec, RunOptions{});
    REQUIRE(std::fabs(exact.clean - exact.corrupted) > 0);
    const int64_t last = c.n_layers - 1, L = int64_t(clean.size());
    for (int64_t p = 0; p < L; ++p) {
      CAPTURE(p);
      const size_t cell = size_t(patch_cell(exact, last, p));
      CHECK(atp.normalised[cell] == Approx(exact.normalised[cell]).margin(2e-4));
    }
    // the one cell that moves the measured row moves it by a visible amount
    CHECK(std::fabs(exact.normalised[size_t(patch_cell(exact, last, L - 1))] -
                    (dir == PatchDirection::Denoise ? 0.0 : 1.0)) > 0.05);
  }
}

TEST_CASE("integrated gradients over the embeddings: the layer-0 cells sum to clean - corrupted",
          "[attribution]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 7));
  const auto clean = model.tokenize("abcab cab", "").first, corrupted = model.tokenize("xbcab cbb", "").first;
  const PatchSpec spec = atp_spec(PatchSite::Resid, PatchMetric::Loss);
  AttributionOptions o;
  o.double_precision = true;
  auto layer0_sum = [&](int64_t steps) {
    o.ig_steps = steps;
    const PatchResult r = attribution_patching(model, clean, corrupted, spec, o);
    CHECK(r.runs == 2 + steps);
    double s = 0;
    for (int64_t p = 0; p < r.shape[1]; ++p) s += r.raw[size_t(patch_cell(r, 0, p))] - r.corrupted;
    return std::pair{s, r.clean - r.corrupted};
  };
  const auto [plain, span] = layer0_sum(0);
  const auto [ig, span2] = layer0_sum(32);
  CHECK(span2 == Approx(span));
  INFO("clean - corrupted " << span << ", AtP sum " << plain << ", IG(32) sum " << ig);
  CHECK(ig == Approx(span).epsilon(1e-3));
  CHECK(std::fabs(ig - span) < std::fabs(plain - span));
}

TEST_CASE("attribution patching ranks the cells as exact patching does on a small preset", "[attribution]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 11));
  const auto clean = model.tokenize("abcab cab", "").first, corrupted = model.tokenize("abcab cbb", "").first;
  for (PatchSite site : {PatchSite::Resid, PatchSite::HeadPos}) {
    CAPTURE(patch_site_name(site));
    const PatchSpec spec = atp_spec(site, PatchMetric::LogitDiff);
    const PatchResult atp = attribution_patching(model, clean, corrupted, spec);
    const PatchResult exact = activation_patching(model, clean, corrupted, spec, RunOptions{});
    const double rho = spearman_rank_correlation(patch_effects(atp), patch_effects(exact));
    const int64_t overlap = top_k_overlap(patch_effects(atp), patch_effects(exact), 5);
    WARN(patch_site_name(site) << ": Spearman " << rho << ", top-5 overlap " << overlap);
    CHECK(rho > 0.5);
    CHECK(cells_by_effect(atp).front() == cells_by_effect(exact).front());
  }
}

TEST_CASE("rank correlation and top-k overlap by hand", "[attribution]") {
  CHECK(spearman_rank_correlation({1, 2, 3}, {10, 20, 30}) == Approx(1.0));
  CHECK(spearman_rank_correlation({1, 2, 3}, {3, 2, 1}) == Approx(-1.0));
  CHECK(spearman_rank_correlation({1, 1, 2}, {1, 2, 3}) == Approx(1.5 / std::sqrt(3.0)));
  CHECK(std::isnan(spearman_rank_correlation({1, 1}, {1, 2})));
  CHECK(top_k_overlap({3, -2, 1}, {1, 2, -3}, 2) == 1);
  CHECK(top_k_overlap({3, -2, 1}, {1, 2, -3}, 3) == 3);
}

TEST_CASE("attribution patching refuses what it cannot do, naming the problem", "[attribution]") {
  const ModelConfig dec = preset_test::small_preset_config("tiny-decoder");
  const Model model(dec, init_params(dec, 3));
  const auto a = model.tokenize("abcd", "").first, b = model.tokenize("abcde", "").first;
  const PatchSpec spec = atp_spec(PatchSite::Resid, PatchMetric::LogitDiff);
  REQUIRE_THROWS_WITH(attribution_patching(model, a, b, spec), Catch::Contains("clean input is 4 tokens"));
  AttributionOptions tight;
  tight.max_memory = 1000;
  REQUIRE_THROWS_WITH(attribution_patching(model, a, a, spec, tight),
                      Catch::Contains("backward needs about") && Catch::Contains("--max-memory") &&
                          Catch::Contains("of weights as float32"));
  AttributionOptions steps;
  steps.ig_steps = -1;
  REQUIRE_THROWS_WITH(attribution_patching(model, a, a, spec, steps), Catch::Contains("--ig-steps"));
  auto typed = a;
  typed[1].type = 1;
  REQUIRE_THROWS_WITH(attribution_patching(model, typed, a, spec), Catch::Contains("type 1"));

  const ModelConfig xl = preset_test::small_preset_config("tiny-xl");
  const Model xl_model(xl, init_params(xl, 3));
  const auto x = xl_model.tokenize("abcd", "").first;
  REQUIRE_THROWS_WITH(attribution_patching(xl_model, x, x, atp_spec(PatchSite::Head, PatchMetric::LogitDiff)),
                      Catch::Contains("standard layers"));
  // A config without a backward (a ViT: image input): check_trainable's message.
  const ModelConfig vit = preset_test::small_preset_config("tiny-vit");
  const Model vit_model(vit, init_params(vit, 3));
  const auto image = patch_input(vit, preset_test::gradient_image()).tokens;
  PatchSpec classes = atp_spec(PatchSite::Resid, PatchMetric::LogitDiff);
  classes.token_a = 0;
  classes.token_b = 1;
  REQUIRE_THROWS_WITH(attribution_patching(vit_model, image, image, classes),
                      Catch::Contains("needs the model's backward") && Catch::Contains("image input"));
}
