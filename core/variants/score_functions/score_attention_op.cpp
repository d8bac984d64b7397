// The score_attention module op (score_attention.h): shape checks, its host reference built
// from score_matrix and masked_softmax (core/variants/score_functions/score_functions.cpp) and
// its call on a backend.
#include <algorithm>

#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/variants/score_functions/score_attention.h"
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
                                             const Tensor& v_a, const ScoreOpArgs& args) {
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

namespace {

std::vector<Tensor> score_attention_on_host(const std::vector<Tensor>& in,
                                            const ScoreOpArgs& args) {
  const ScoreWeightInputs<Tensor> w = score_weight_inputs(in, args.function);
  const Tensor none;
  auto or_none = [&](const Tensor* t) -> const Tensor& { return t ? *t : none; };
  ScoreAttentionHost h =
      score_attention_reference(in.at(0), in.at(1), in.at(2), or_none(w.w), or_none(w.w1),
                                or_none(w.w2), or_none(w.v_a), args);
  std::vector<Tensor> out = {std::move(h.out)};
  if (args.attn.want_probs) out.push_back(std::move(h.probs));
  if (args.attn.want_scores) out.push_back(std::move(h.scores));
  return out;
}

bool uses_score_function(const ModelConfig& c) { return c.score() != nullptr; }

constexpr ModuleOpOf<ScoreOpArgs> kScoreAttention = module_op<ScoreOpArgs, score_attention_on_host>(
    "score_attention",
    "attention with a seed-004 score function (scores, softmax) computed on the host",
    uses_score_function);
const RegisterModuleOp kRegisterScoreAttention(kScoreAttention.op);

}  // namespace

const ModuleOp& score_attention_op() { return kScoreAttention.op; }

AttentionResult score_attention(Backend& be, const DTensor& q, const DTensor& k, const DTensor& v,
                                const ScoreAttentionArgs& args) {
  check_score_attention_shapes(q.shape, k.shape, v.shape, args);
  std::vector<DTensor> in = {q, k, v};
  for (DTensor ScoreAttentionArgs::*weight : score_weights(args.function))
    in.push_back(args.*weight);
  const std::vector<DTensor> out =
      run_op(be, kScoreAttention, in, static_cast<const ScoreOpArgs&>(args));
  AttentionResult r;
  size_t next = 0;
  r.out = out.at(next++);
  if (args.attn.want_probs) r.probs = out.at(next++);
  if (args.attn.want_scores) r.scores = out.at(next++);
  return r;
}

}  // namespace atlas
