// Test cases of the alibi_attention module op (op_case.h): ALiBi's linear distance biases over
// odd shapes, head counts that are not powers of two, key prefixes (Lq < Lk), causal / padding /
// pattern masks, d_value != d_head, rows longer than the 64-wide workgroup, distances whose bias
// drowns the dot products (large bias_max), and one case without traces. Reference:
// alibi_attention_reference (core/variants/alibi/alibi_attention_op.h), itself checked against a
// naive double loop in tests/core/test_alibi.cpp. Bounds (inputs in [-1, 1], d_head <= 13,
// Lk <= 200, biases up to 16 x 200): scores 4e-6 + 4e-6 |want| (the bias term is exact in
// both), probabilities 4e-6, output 2e-5. The tape form is ALiBi's training kernel
// (core/variants/alibi/train_alibi.h), with the tape's masks (causal without a key prefix,
// padding).
#include <cmath>

#include "core/variants/alibi/alibi_attention_op.h"
#include "core/variants/alibi/alibi_slopes.h"
#include "core/variants/alibi/train_alibi.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"
#include "tests/backend_ops/test_masks.h"

namespace atlas::op_test {
namespace {

struct AlibiShape {
  int64_t lq, lk, heads, dh, dv;
  bool causal, padding, pattern;
  float bias_max = 8.0f;
  bool traced = true;
};
struct AlibiIn {
  Tensor q, k, v;
  AlibiAttentionArgs args;
};

std::string describe_alibi_shape(const AlibiShape& c) {
  std::string s = dims({c.lq, c.lk}) + " H " + std::to_string(c.heads) + " dh " +
                  std::to_string(c.dh) + " dv " + std::to_string(c.dv) + " bias_max " +
                  std::to_string(c.bias_max);
  if (c.causal) s += " causal";
  if (c.padding) s += " padding";
  if (c.pattern) s += " pattern";
  if (!c.traced) s += " untraced";
  return s;
}

AlibiIn generate_alibi(const AlibiShape& c, uint32_t seed) {
  AlibiIn in{random_tensor({c.lq, c.heads * c.dh}, seed), random_tensor({c.lk, c.heads * c.dh}, seed + 1),
             random_tensor({c.lk, c.heads * c.dv}, seed + 2), {}};
  AlibiAttentionArgs& a = in.args;
  a.attn.heads = int(c.heads);
  a.attn.scale = float(1.0 / std::sqrt(double(c.dh)));
  a.attn.want_probs = a.attn.want_scores = c.traced;
  a.attn.mask.causal = c.causal;
  a.attn.mask.causal_offset = c.lk - c.lq;
  if (c.padding)
    a.attn.mask.key_valid = c.lk > 3 ? test_masks::keys_without(c.lk, {c.lk - 1, c.lk / 2})
                                     : test_masks::keys_without(c.lk, {c.lk - 1});
  if (c.pattern) a.attn.mask.allowed = test_masks::band_with_holes(c.lq, c.lk, 6, 5);
  a.slopes = alibi_slopes(c.heads, c.bias_max);
  return in;
}

std::vector<Tensor> run_alibi(Backend& be, const AlibiIn& in) {
  const AttentionResult r =
      alibi_attention(be, be.upload(in.q), be.upload(in.k), be.upload(in.v), in.args);
  return {be.download(r.out), download_or_absent(be, r.probs), download_or_absent(be, r.scores)};
}

std::vector<Want> alibi_reference(const AlibiIn& in) {
  const AlibiAttentionHost h = alibi_attention_reference(in.q, in.k, in.v, in.args);
  std::vector<Want> w(3, want_absent());
  w[0] = want_of(h.out);
  if (in.args.attn.want_probs) w[1] = want_of(h.probs);
  if (in.args.attn.want_scores) w[2] = want_of(h.scores);
  return w;
}

std::vector<double> alibi_tolerance(const AlibiIn&, size_t output, const std::vector<double>& want) {
  switch (output) {
    case 0: return uniform_tol(want.size(), 2e-5);  // out
    case 1: return uniform_tol(want.size(), 4e-6);  // probs
    default: return rel_tol(want, 4e-6, 4e-6);      // scores
  }
}

// The tape's masks: causal without a key prefix, and padding; patterns are sparse attention's.
std::optional<TapeOp> alibi_tape(const AlibiIn& in) {
  const AlibiAttentionArgs& a = in.args;
  const int64_t lq = in.q.shape[0], lk = in.k.shape[0];
  if (!a.attn.mask.allowed.empty() || (a.attn.mask.causal && lq != lk)) return std::nullopt;
  train::AttentionSpec<double> spec;
  spec.heads = a.attn.heads;
  spec.scale = a.attn.scale;
  spec.causal = a.attn.mask.causal;
  spec.key_valid = a.attn.mask.key_valid;
  const std::vector<float> slopes = a.slopes;
  return TapeOp{{{"q", to_mat(in.q)}, {"k", to_mat(in.k)}, {"v", to_mat(in.v)}},
                [spec, slopes](train::Tape<double>& t, const train::ParamsT<double>& p) {
                  return train::alibi_attention(t, tape_param(t, p, "q"), tape_param(t, p, "k"),
                                                tape_param(t, p, "v"), spec, slopes);
                }};
}

const Register alibi_case(make_case(OpTest<AlibiShape, AlibiIn>{
    alibi_attention_op(),
    {"out", "probs", "scores"},
    {
        // lq  lk  H  dh dv  causal padding pattern [bias_max traced]
        {1, 1, 1, 1, 1, false, false, false},
        {13, 13, 3, 5, 5, false, false, false},
        {37, 37, 6, 7, 7, true, true, false},
        {11, 70, 2, 13, 13, false, false, false},
        {9, 23, 12, 6, 6, true, false, false},  // Lq < Lk: the queries are the last 9 positions
        {65, 65, 1, 8, 8, true, false, false},
        {3, 129, 2, 4, 4, false, true, false},
        {17, 17, 4, 3, 9, false, false, true},  // d_value != d_head
        {20, 200, 8, 4, 4, true, false, false, 16.0f},
        {5, 5, 2, 3, 3, false, false, false, 8.0f, false},  // no traces: out only
    },
    describe_alibi_shape,
    generate_alibi,
    run_alibi,
    alibi_reference,
    alibi_tolerance,
    alibi_tape}));

}  // namespace
}  // namespace atlas::op_test
