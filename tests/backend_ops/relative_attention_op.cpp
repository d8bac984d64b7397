// Test cases of the relative_attention module op (op_case.h): Shaw relative positions, and the
// adaptive-span soft mask (inside or after the softmax, alone or with Shaw), over odd shapes, key
// prefixes, causal / padding / pattern masks, rows longer than the 64-wide workgroup, and one case
// without traces. Reference: relative_attention_reference
// (core/variants/relative_attention/relative_attention_op.h). Bounds against the exact value
// (inputs in [-1, 1], d_head <= 13, Lk <= 130): scores and key term 2e-6 + 2e-6 |want|,
// probabilities 2e-6, output and value term 1e-5, span mask 1e-6; the host reference is float too,
// so against it twice those.
#include <cmath>

#include "core/backend/op_registry.h"
#include "core/variants/relative_attention/relative_attention_op.h"
#include "core/variants/shaw/train_shaw.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"
#include "tests/backend_ops/test_masks.h"

namespace atlas::op_test {
namespace {

struct RelShape {
  int64_t lq, lk, heads, dh;
  bool shaw, span, after, causal, padding, pattern;
  int64_t max_distance;
  bool traced = true;
};
struct RelIn {
  Tensor q, k, v, ak, av;
  RelativeAttentionArgs args;  // rel_k / rel_v set per backend in run()
  bool shaw;
};

std::string describe(const RelShape& c) {
  std::string s = dims({c.lq, c.lk}) + " H " + std::to_string(c.heads) + " dh " + std::to_string(c.dh);
  if (c.shaw) s += " shaw k " + std::to_string(c.max_distance);
  if (c.span) s += c.after ? " span after" : " span inside";
  if (c.causal) s += " causal";
  if (c.padding) s += " padding";
  if (c.pattern) s += " pattern";
  if (!c.traced) s += " untraced";
  return s;
}

RelIn generate(const RelShape& c, uint32_t seed) {
  const int64_t rows = 2 * c.max_distance + 1;
  RelIn in{random_tensor({c.lq, c.heads * c.dh}, seed), random_tensor({c.lk, c.heads * c.dh}, seed + 1),
           random_tensor({c.lk, c.heads * c.dh}, seed + 2), random_tensor({rows, c.dh}, seed + 3),
           random_tensor({rows, c.dh}, seed + 4), {}, c.shaw};
  RelativeAttentionArgs& a = in.args;
  a.attn.heads = int(c.heads);
  a.attn.scale = float(1.0 / std::sqrt(double(c.dh)));
  a.attn.want_probs = a.attn.want_scores = c.traced;
  a.attn.mask.causal = c.causal;
  a.attn.mask.causal_offset = c.lk - c.lq;
  if (c.padding)
    a.attn.mask.key_valid = c.lk > 3 ? test_masks::keys_without(c.lk, {c.lk - 1, c.lk / 2})
                                     : test_masks::keys_without(c.lk, {c.lk - 1});
  if (c.pattern) a.attn.mask.allowed = test_masks::band_with_holes(c.lq, c.lk, 6, 5);
  if (c.shaw) {
    a.max_distance = c.max_distance;
    a.want_terms = c.traced;
  }
  if (c.span) {
    std::mt19937 gen(seed + 5);
    std::uniform_real_distribution<float> z(0.0f, 12.0f);
    a.span_z.resize(size_t(c.heads * c.lq));
    for (float& x : a.span_z) x = z(gen);
    a.span_ramp = 4;
    a.span_max = 14;
    a.span_after = c.after;
    a.span_offset = seed % 2;  // both distance conventions (paper, reference code) over the table
    a.want_span_mask = c.traced;
  }
  return in;
}

std::vector<Tensor> run(Backend& be, const RelIn& in) {
  RelativeAttentionArgs a = in.args;
  if (in.shaw) {
    a.rel_k = be.upload(in.ak);
    a.rel_v = be.upload(in.av);
  }
  const RelativeAttentionResult r =
      relative_attention(be, be.upload(in.q), be.upload(in.k), be.upload(in.v), a);
  return {be.download(r.out),
          download_or_absent(be, r.probs),
          download_or_absent(be, r.scores),
          download_or_absent(be, r.key_term),
          download_or_absent(be, r.value_term),
          download_or_absent(be, r.span_mask)};
}

std::vector<Want> reference(const RelIn& in) {
  const RelativeAttentionArgs& a = in.args;
  Mat ak, av;  // empty: no Shaw term
  if (in.shaw) {
    ak = in.ak.mat();
    av = in.av.mat();
  }
  const RelativeAttentionHost h = relative_attention_reference(in.q, in.k, in.v, ak, av, a);
  std::vector<Want> w(6, want_absent());
  w[0] = want_of(h.out);
  if (a.attn.want_probs) w[1] = want_of(h.probs);
  if (a.attn.want_scores) w[2] = want_of(h.scores);
  if (h.key_term.shape.size() == 3) w[3] = want_of(h.key_term);
  if (h.value_term.shape.size() == 3) w[4] = want_of(h.value_term);
  if (h.span_mask.shape.size() == 3) w[5] = want_of(h.span_mask);
  return w;
}

std::vector<double> tolerance(const RelIn&, size_t output, const std::vector<double>& want) {
  switch (output) {
    case 0: case 4: return uniform_tol(want.size(), 2e-5);  // out, value term
    case 1: return uniform_tol(want.size(), 4e-6);          // probs
    case 5: return uniform_tol(want.size(), 2e-6);          // span mask
    default: return rel_tol(want, 4e-6, 4e-6);              // scores, key term
  }
}

// The tape's Shaw attention (core/variants/shaw/train_shaw.h) knows causal without a key
// prefix and padding; spans and patterns have other tape ops or none.
std::optional<TapeOp> shaw_tape(const RelIn& in) {
  const RelativeAttentionArgs& a = in.args;
  const int64_t lq = in.q.shape[0], lk = in.k.shape[0];
  if (!in.shaw || a.span() || !a.attn.mask.allowed.empty() || (a.attn.mask.causal && lq != lk)) return std::nullopt;
  train::AttentionSpec<double> spec;
  spec.heads = a.attn.heads;
  spec.scale = a.attn.scale;
  spec.causal = a.attn.mask.causal;
  spec.key_valid = a.attn.mask.key_valid;
  const int64_t k = a.max_distance;
  return TapeOp{{{"q", to_mat(in.q)}, {"k", to_mat(in.k)}, {"v", to_mat(in.v)}, {"ak", to_mat(in.ak)}, {"av", to_mat(in.av)}},
                [spec, k](train::Tape<double>& t, const train::ParamsT<double>& p) {
                  auto P = [&](const char* n) { return t.param(n, p.at(n)); };
                  return train::shaw_attention(t, P("q"), P("k"), P("v"), P("ak"), P("av"), spec, k);
                }};
}

const std::vector<std::string> kOutputs = {"out", "probs", "scores", "key_term", "value_term", "span_mask"};

const Register relative_case(make_case(OpTest<RelShape, RelIn>{
    relative_attention_op(),
    kOutputs,
    {
        // lq  lk  H  dh  shaw  span   after  causal pad    pattern k
        {1, 1, 1, 1, true, false, false, false, false, false, 1},
        {13, 13, 3, 5, true, false, false, false, false, false, 2},
        {37, 37, 2, 7, true, false, false, true, true, false, 4},
        {11, 70, 2, 13, true, false, false, false, false, false, 3},
        {9, 23, 2, 6, true, false, false, true, false, false, 3},
        {65, 65, 1, 8, true, false, false, true, false, false, 16},
        {3, 129, 2, 4, true, false, false, false, true, false, 64},
        {5, 5, 2, 3, true, false, false, false, false, false, 1,
         false},  // no traces: out only
                  // adaptive span, alone and with Shaw
        {29, 29, 3, 6, false, true, false, true, false, false, 0},
        {17, 17, 2, 9, false, true, true, false, true, true, 0},
        {21, 21, 2, 8, true, true, false, true, true, false, 5},
        {15, 31, 3, 4, true, true, true, false, false, true, 2},
        {1, 1, 1, 1, false, true, false, false, false, false, 0},
        {65, 129, 1, 5, false, true, false, true, false, false, 0},
        {9, 9, 2, 4, false, true, true, false, false, false, 0, false},
    },
    describe,
    generate,
    run,
    reference,
    tolerance,
    shaw_tape}));

}  // namespace
}  // namespace atlas::op_test
