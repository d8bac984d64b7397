// The score_attention op (core/backend/backend.h, ScoreAttentionArgs): host reference and Backend
// default, built from score_matrix and masked_softmax (core/variants/score_functions/score_functions.cpp).
#include "core/variants/score_functions/score_attention_op.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "core/variants/score_functions/score_functions.h"

namespace atlas {

void check_score_attention_shapes(const Shape& q, const Shape& k, const Shape& v,
                                  const ScoreAttentionArgs& args) {
  const int64_t H = args.attn.heads;
  const std::string name = std::string("score_attention (") + score_function_name(args.function) + ")";
  auto fail = [&](const std::string& what) { throw AtlasError(name + ": " + what); };
  if (args.function == ScoreFunction::ScaledDot) fail("scaled dot is the attention op's own");
  if (H < 1 || q.size() != 2 || k.size() != 2 || v.size() != 2 || q[1] % H != 0 || k[1] != q[1] ||
      v[1] != q[1] || v[0] != k[0])
    fail("q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v) +
         " do not split into " + std::to_string(H) + " heads of one size");
  const int64_t dh = q[1] / H, lq = q[0], lk = k[0];
  const AttentionMask& m = args.attn.mask;
  if ((!m.key_valid.empty() && int64_t(m.key_valid.size()) != lk) ||
      (!m.allowed.empty() && int64_t(m.allowed.size()) != lq * lk))
    fail("mask sizes do not match " + std::to_string(lq) + " queries x " + std::to_string(lk) + " keys");
  auto need = [&](const DTensor& t, const Shape& want, const char* what) {
    if (t.shape != want) fail(std::string(what) + " must be " + shape_str(want) + ", got " + shape_str(t.shape));
  };
  switch (args.function) {
    case ScoreFunction::General: need(args.w, {H, dh, dh}, "W_a"); break;
    case ScoreFunction::Location:
      if (args.w.shape.size() != 3 || args.w.shape[0] != H || args.w.shape[2] != dh)
        fail("W_a must be [heads, max_positions, d_head], got " + shape_str(args.w.shape));
      if (lk > args.w.shape[1])
        fail("location scores at most " + std::to_string(args.w.shape[1]) +
             " key positions (max_positions), got " + std::to_string(lk));
      break;
    case ScoreFunction::Additive: {
      const int64_t da = args.w1.shape.size() == 3 ? args.w1.shape[1] : 0;
      need(args.w1, {H, da, dh}, "W1");
      need(args.w2, {H, da, dh}, "W2");
      need(args.v_a, {H, da}, "v_a");
      if (da < 1) fail("d_attn must be >= 1");
      break;
    }
    default: break;
  }
}

ScoreAttentionHost score_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& w, const Tensor& w1, const Tensor& w2,
                                             const Tensor& v_a, const ScoreAttentionArgs& args) {
  const int64_t H = args.attn.heads, dh = q.shape[1] / H, lq = q.shape[0], lk = k.shape[0];
  ScoreAttentionHost r{Tensor({lq, H * dh}), Tensor({H, lq, lk}), Tensor({H, lq, lk})};
  for (int64_t h = 0; h < H; ++h) {
    const ScoreWeights sw = head_score_weights(args.function, &w, &w1, &w2, &v_a, h, args.strength);
    const Mat qh = q.mat().middleCols(h * dh, dh), kh = k.mat().middleCols(h * dh, dh);
    Mat e = score_matrix(args.function, qh, kh, sw);  // [Lq, Lk]
    const Mat a = masked_softmax(e, args.attn.mask);
    r.out.mat().middleCols(h * dh, dh) = a * v.mat().middleCols(h * dh, dh);
    std::copy(a.data(), a.data() + lq * lk, r.probs.data.begin() + h * lq * lk);
    std::copy(e.data(), e.data() + lq * lk, r.scores.data.begin() + h * lq * lk);
  }
  return r;
}

AttentionResult Backend::score_attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                         const ScoreAttentionArgs& args) {
  check_score_attention_shapes(q.shape, k.shape, v.shape, args);
  note_host_compute(Op::ScoreFunction);
  std::vector<DTensor> in = {q, k, v};
  for (const DTensor* t : {&args.w, &args.w1, &args.w2, &args.v_a})
    if (*t) in.push_back(*t);
  const std::vector<Tensor> host = download_all(in);
  size_t next = 3;
  auto weight = [&](const DTensor& t) { return t ? host[next++] : Tensor(); };
  const Tensor w = weight(args.w), w1 = weight(args.w1), w2 = weight(args.w2), va = weight(args.v_a);
  ScoreAttentionHost h = score_attention_reference(host[0], host[1], host[2], w, w1, w2, va, args);
  AttentionResult r;
  r.out = upload(h.out);
  if (args.attn.want_probs) r.probs = upload(h.probs);
  if (args.attn.want_scores) r.scores = upload(h.scores);
  return r;
}

}  // namespace atlas
