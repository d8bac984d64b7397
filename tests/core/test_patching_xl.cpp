// Exact head patching on Transformer-XL (segments with memory; core/analysis/patching.h): every
// layer x head cell against a naive whole-text causal relative model (the equations of
// tests/core/test_xl.cpp's oracle, with the memory covering every earlier token so the whole
// text is the segmented run) run on the target with head h's outputs of layer l set to the
// source's by hand. The heads hook is called once per segment; patching matches the calls.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "core/analysis/patching.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/token_lists.h"

using namespace atlas;

namespace {

// R_dist [d]: [sin(dist w_k) | cos(dist w_k)], w_k = 10000^(-2k/d) (the reference's layout).
std::vector<double> patch_xl_sinusoid(int64_t dist, size_t d) {
  std::vector<double> r(d);
  for (size_t k = 0; k < d / 2; ++k) {
    const double w = std::pow(10000.0, -2.0 * double(k) / double(d));
    r[k] = std::sin(double(dist) * w);
    r[k + d / 2] = std::cos(double(dist) * w);
  }
  return r;
}

struct XlNaiveRun {
  naive::Matrix logits;
  std::vector<naive::Matrix> heads;  // per layer, before W^O
};

// Pre- or post-norm XL over the whole text (no clamp, no same_length); `edit(l, heads)` may change
// layer l's heads' outputs before W^O.
XlNaiveRun patch_xl_oracle(const ModelConfig& c, const ParamStore& p, const std::vector<int32_t>& ids,
                           const std::function<void(int64_t, naive::Matrix&)>& edit = {}) {
  const size_t L = ids.size(), d = size_t(c.d_model), H = size_t(c.n_heads), dh = d / H;
  const bool pre = c.norm_position == NormPosition::Pre;
  auto bias = [&](const std::string& n) { return naive::has(p, n) ? &naive::P(p, n) : nullptr; };
  naive::Matrix x = naive::zeros(L, d);
  for (size_t i = 0; i < L; ++i)
    for (size_t k = 0; k < d; ++k) x[i][k] = naive::P(p, "embed.tokens").data[size_t(ids[i]) * d + k];
  const auto& U = naive::P(p, "xl.u");
  const auto& V = naive::P(p, "xl.v");
  XlNaiveRun run;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string pre_l = "decoder.layer" + std::to_string(l), a = pre_l + ".self_attn";
    const naive::Matrix xn = pre ? naive::norm(x, c, p, pre_l + ".self_attn_norm") : x;
    const naive::Matrix q = naive::linear(xn, naive::P(p, a + ".wq"), bias(a + ".bq"));
    const naive::Matrix k = naive::linear(xn, naive::P(p, a + ".wk"), bias(a + ".bk"));
    const naive::Matrix v = naive::linear(xn, naive::P(p, a + ".wv"), bias(a + ".bv"));
    naive::Matrix o = naive::zeros(L, d);
    for (size_t h = 0; h < H; ++h)
      for (size_t i = 0; i < L; ++i) {
        std::vector<double> s(i + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= i; ++j) {
          const naive::Matrix rk = naive::linear({patch_xl_sinusoid(int64_t(i - j), d)}, naive::P(p, a + ".wr"), nullptr);
          double e = 0;
          for (size_t t = 0; t < dh; ++t) {
            const size_t col = h * dh + t;
            e += (q[i][col] + U.data[h * dh + t]) * k[j][col] + (q[i][col] + V.data[h * dh + t]) * rk[0][col];
          }
          s[j] = e / std::sqrt(double(dh));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (size_t j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
        for (size_t j = 0; j <= i; ++j)
          for (size_t t = 0; t < dh; ++t) o[i][h * dh + t] += std::exp(s[j] - mx) / sum * v[j][h * dh + t];
      }
    if (edit) edit(l, o);
    run.heads.push_back(o);
    const naive::Matrix att = naive::linear(o, naive::P(p, a + ".wo"), bias(a + ".bo"));
    x = pre ? naive::add(x, att) : naive::norm(naive::add(x, att), c, p, pre_l + ".self_attn_norm");
    const naive::Matrix fin = pre ? naive::norm(x, c, p, pre_l + ".ffn_norm") : x;
    const naive::Matrix f = naive::ffn(fin, c, p, pre_l + ".ffn");
    x = pre ? naive::add(x, f) : naive::norm(naive::add(x, f), c, p, pre_l + ".ffn_norm");
  }
  if (pre) x = naive::norm(x, c, p, "decoder.final_norm");
  run.logits = naive::zeros(L, size_t(c.vocab_size));
  for (size_t i = 0; i < L; ++i)
    for (size_t t = 0; t < size_t(c.vocab_size); ++t)
      for (size_t k = 0; k < d; ++k) run.logits[i][t] += x[i][k] * naive::P(p, "embed.tokens").data[t * d + k];
  return run;
}

Tensor patch_xl_tensor(const naive::Matrix& m) {
  Tensor t({int64_t(m.size()), int64_t(m[0].size())});
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t k = 0; k < m[i].size(); ++k) t.data[i * m[i].size() + k] = float(m[i][k]);
  return t;
}

}  // namespace

TEST_CASE("head patching on Transformer-XL equals the naive whole-text run edited by hand", "[patching][xl]") {
  for (const NormPosition np : {NormPosition::Pre, NormPosition::Post}) {
    ModelConfig c;
    c.name = "xl-patch";
    c.architecture = Architecture::Decoder;
    c.vocab_size = 256;  // the bytes tokenizer's
    c.d_model = 8;
    c.n_heads = 2;
    c.d_ff = 12;
    c.n_layers = 2;
    c.max_positions = 64;
    c.positional = Positional::None;
    c.scale_embedding = false;
    c.norm_position = np;
    c.init_std = 0.5f;
    c.stack = XLConfig{};
    c.xl()->segment_length = 4;
    c.xl()->mem_len = 8;  // covers every earlier token: the segmented run is the whole-text one
    const ParamStore p = init_params(c, 31);
    const Model model(c, p);
    const std::vector<int32_t> clean_ids = {3, 17, 5, 9, 30, 1, 12, 7, 5, 3}, corrupted_ids = {3, 17, 5, 9, 30, 2, 12, 7, 5, 3};
    const auto clean = test::tokens(clean_ids), corrupted = test::tokens(corrupted_ids);
    const XlNaiveRun naive_clean = patch_xl_oracle(c, p, clean_ids), naive_corrupted = patch_xl_oracle(c, p, corrupted_ids);
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
      const XlNaiveRun& source = denoise ? naive_clean : naive_corrupted;
      for (int64_t l = 0; l < 2; ++l)
        for (int64_t h = 0; h < 2; ++h) {
          CAPTURE(l, h);
          const XlNaiveRun edited = patch_xl_oracle(c, p, denoise ? corrupted_ids : clean_ids, [&](int64_t el, naive::Matrix& o) {
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
