// Test cases of sparse_attention and score_attention (op_case.h).
// sparse_attention: random per-head CSR patterns with empty rows, Lq != Lk, rows longer than
// the 64-wide workgroup; reference: the host sparse_attention (core/variants/sparse/); bounds
// against the exact value (inputs in [-1, 1], d_head <= 70, <= 150 keys per row): output
// 1e-5, probabilities 2e-6, and twice those against the float host reference.
// score_attention: every score function over causal / padding / pattern masks (rows with no
// allowed key), heads wider than the workgroup; reference score_attention_reference; bounds
// against the exact value (weights in [-0.5, 0.5], d_head <= 70, Lk <= 130): scores
// 4e-6 + 4e-6 |want|, probabilities 4e-6, output 1e-5, twice those against the reference.
#include <cmath>

#include "core/backend/op_registry.h"
#include "core/variants/score_functions/score_attention.h"
#include "core/variants/sparse/sparse_attention.h"
#include "core/variants/sparse/sparse_pattern.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"
#include "tests/backend_ops/test_masks.h"

namespace atlas::op_test {
namespace {

// ---- sparse_attention -------------------------------------------------------------------
struct SparseShape {
  int64_t lq, lk, heads, dh, dv;
  double density;
  bool probs = true;
};
struct SparseIn {
  Tensor q, k, v;
  std::vector<CsrPattern> patterns;
  float scale;
  bool probs;
};

using test_masks::random_pattern;

const Register sparse_case(make_case(OpTest<SparseShape, SparseIn>{
    sparse_attention_op(),
    {"out", "probs"},
    {{1, 1, 1, 1, 1, 1.0},
     {13, 13, 3, 5, 5, 0.4},
     {37, 37, 2, 7, 3, 0.2},
     {9, 150, 2, 13, 70, 0.9},
     {50, 21, 4, 6, 6, 0.6},
     {65, 129, 1, 8, 8, 0.7},
     {128, 128, 2, 4, 4, 0.5},
     {17, 17, 2, 5, 5, 0.5, false}},
    [](const SparseShape& s) {
      return dims({s.lq, s.lk}) + " H " + std::to_string(s.heads) + " dh " + std::to_string(s.dh) + " dv " +
             std::to_string(s.dv) + " density " + std::to_string(s.density).substr(0, 3) + (s.probs ? "" : " untraced");
    },
    [](const SparseShape& s, uint32_t seed) {
      SparseIn in{random_tensor({s.lq, s.heads * s.dh}, seed), random_tensor({s.lk, s.heads * s.dh}, seed + 1),
                  random_tensor({s.lk, s.heads * s.dv}, seed + 2), {}, float(1.0 / std::sqrt(double(s.dh))), s.probs};
      for (int64_t h = 0; h < s.heads; ++h)
        in.patterns.push_back(random_pattern(s.lq, s.lk, s.density, seed + 3 + uint32_t(h)));
      return in;
    },
    [](Backend& be, const SparseIn& in) {
      const int heads = int(in.patterns.size());
      const SparseAttentionResult r =
          sparse_attention(be, be.upload(in.q), be.upload(in.k), be.upload(in.v), heads, in.scale,
                           in.patterns, in.probs);
      return std::vector<Tensor>{be.download(r.out), download_or_absent(be, r.probs)};
    },
    [](const SparseIn& in) {
      std::vector<std::vector<float>> probs;
      const Tensor out = sparse_attention(in.q, in.k, in.v, int(in.patterns.size()), in.scale, in.patterns, &probs);
      Want p{{0}, {}};
      for (const auto& h : probs) p.data.insert(p.data.end(), h.begin(), h.end());
      p.shape = {int64_t(p.data.size())};
      return std::vector<Want>{want_of(out), in.probs ? p : want_absent()};
    },
    [](const SparseIn&, size_t output, const std::vector<double>& want) {
      return uniform_tol(want.size(), output == 0 ? 2e-5 : 4e-6);
    },
    {}}));

// ---- score_attention ---------------------------------------------------------------------
struct ScoreShape {
  const char* name;
  ScoreFunction f;
  int64_t lq, lk, heads, dh;
  bool causal, padding, pattern;
};
struct ScoreIn {
  Tensor q, k, v, w, w1, w2, va;
  ScoreAttentionArgs args;  // weights set per backend in run()
};

const Register score_case(make_case(OpTest<ScoreShape, ScoreIn>{
    score_attention_op(),
    {"out", "probs", "scores"},
    {
        // name                    function                  lq  lk  H  dh  causal pad  pattern
        {"dot 1x1", ScoreFunction::Dot, 1, 1, 1, 1, false, false, false},
        {"dot causal pad", ScoreFunction::Dot, 13, 13, 3, 5, true, true, false},
        {"dot long rows", ScoreFunction::Dot, 65, 129, 2, 8, false, true, false},
        {"general odd", ScoreFunction::General, 11, 17, 2, 7, false, true, false},
        {"general wide head", ScoreFunction::General, 5, 9, 1, 70, true, false, false},
        {"cosine pattern", ScoreFunction::Cosine, 17, 17, 2, 9, false, false, true},
        {"cosine tile", ScoreFunction::Cosine, 64, 64, 1, 64, true, false, false},
        {"location prefix causal", ScoreFunction::Location, 9, 23, 2, 6, true, false, false},
        {"additive", ScoreFunction::Additive, 15, 15, 2, 8, true, true, false},
        {"additive long row", ScoreFunction::Additive, 7, 70, 3, 4, false, false, true},
        {"additive past a tile", ScoreFunction::Additive, 3, 130, 1, 5, false, true, false},
    },
    [](const ScoreShape& s) {
      return std::string(s.name) + " " + dims({s.lq, s.lk}) + " H " + std::to_string(s.heads) + " dh " +
             std::to_string(s.dh);
    },
    [](const ScoreShape& c, uint32_t seed) {
      const int64_t D = c.heads * c.dh, da = 11, P = c.lk + 3;
      ScoreIn in{random_tensor({c.lq, D}, seed), random_tensor({c.lk, D}, seed + 1), random_tensor({c.lk, D}, seed + 2),
                 {}, {}, {}, {}, {}};
      if (c.f == ScoreFunction::General)
        in.w = random_tensor({c.heads, c.dh, c.dh}, seed + 3, -0.5f, 0.5f);
      if (c.f == ScoreFunction::Location)
        in.w = random_tensor({c.heads, P, c.dh}, seed + 3, -0.5f, 0.5f);
      if (c.f == ScoreFunction::Additive) {
        in.w1 = random_tensor({c.heads, da, c.dh}, seed + 4, -0.5f, 0.5f);
        in.w2 = random_tensor({c.heads, da, c.dh}, seed + 5, -0.5f, 0.5f);
        in.va = random_tensor({c.heads, da}, seed + 6, -0.5f, 0.5f);
      }
      ScoreAttentionArgs& a = in.args;
      a.function = c.f;
      a.strength = 4.0f;
      a.attn.heads = int(c.heads);
      a.attn.want_probs = a.attn.want_scores = true;
      a.attn.mask.causal = c.causal;
      a.attn.mask.causal_offset = c.lk - c.lq;
      // With causal, query 0 has no key once key 0 is padding: a zero row.
      if (c.padding) a.attn.mask.key_valid = test_masks::keys_without(c.lk, {0, c.lk / 2});
      if (c.pattern) a.attn.mask.allowed = test_masks::band_with_holes(c.lq, c.lk, 5, 4);
      return in;
    },
    [](Backend& be, const ScoreIn& in) {
      ScoreAttentionArgs a = in.args;
      if (in.w.numel()) a.w = be.upload(in.w);
      if (in.w1.numel()) a.w1 = be.upload(in.w1), a.w2 = be.upload(in.w2), a.v_a = be.upload(in.va);
      const AttentionResult r =
          score_attention(be, be.upload(in.q), be.upload(in.k), be.upload(in.v), a);
      return be.download_all({r.out, r.probs, r.scores});
    },
    [](const ScoreIn& in) {
      const ScoreAttentionHost h = score_attention_reference(in.q, in.k, in.v, in.w, in.w1, in.w2, in.va, in.args);
      return std::vector<Want>{want_of(h.out), want_of(h.probs), want_of(h.scores)};
    },
    [](const ScoreIn&, size_t output, const std::vector<double>& want) {
      if (output == 0) return uniform_tol(want.size(), 2e-5);
      if (output == 1) return uniform_tol(want.size(), 8e-6);
      return rel_tol(want, 8e-6, 8e-6);
    },
    {}}));

}  // namespace
}  // namespace atlas::op_test
