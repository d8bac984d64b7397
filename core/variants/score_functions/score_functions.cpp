// Alignment score functions of seed 004 (equations in score_functions.h) and the host attention
// that applies config.score to every attention sub-layer of a Transformer.
#include "core/variants/score_functions/score_functions.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/model/forward_pass.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/score_functions/score_attention.h"

namespace atlas {

namespace {

Mat seeded_matrix(int64_t rows, int64_t cols, uint64_t seed, const std::string& name) {
  Rng rng(seed ^ hash_name(name));
  const double std = std::sqrt(2.0 / double(rows + cols));  // Glorot normal, as params.cpp
  Mat m(rows, cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m(i, j) = float(rng.normal() * std);
  return m;
}

// Slice [rows, cols] number `head` out of a [H, rows, cols] (or [H, cols]) tensor.
Mat head_slice(const Tensor& t, int64_t head) {
  const int64_t rows = t.shape.size() == 3 ? t.shape[1] : 1, cols = t.shape.back();
  return Eigen::Map<const Mat>(t.data.data() + head * rows * cols, rows, cols);
}

}  // namespace

const char* score_function_name(ScoreFunction f) {
  switch (f) {
    case ScoreFunction::ScaledDot: return "scaled_dot";
    case ScoreFunction::Dot: return "dot";
    case ScoreFunction::General: return "general";
    case ScoreFunction::Additive: return "additive";
    case ScoreFunction::Cosine: return "cosine";
    case ScoreFunction::Location: return "location";
  }
  return "?";
}

const std::vector<ScoreFunction>& all_score_functions() {
  static const std::vector<ScoreFunction> all = {ScoreFunction::ScaledDot, ScoreFunction::Dot,
                                                 ScoreFunction::General,   ScoreFunction::Additive,
                                                 ScoreFunction::Cosine,    ScoreFunction::Location};
  return all;
}

bool score_function_has_weights(ScoreFunction f) {
  return f == ScoreFunction::General || f == ScoreFunction::Additive || f == ScoreFunction::Location;
}

Mat score_matrix(ScoreFunction f, const Mat& q, const Mat& k, const ScoreWeights& w) {
  const int64_t lq = q.rows(), lk = k.rows(), dq = q.cols(), dk = k.cols();
  auto need_equal = [&](const char* name) {
    if (dq != dk)
      throw AtlasError(std::string("score function ") + name + " compares queries of size " +
                       std::to_string(dq) + " with keys of size " + std::to_string(dk) +
                       "; it needs equal sizes (use general or additive)");
  };
  switch (f) {
    case ScoreFunction::ScaledDot:
      need_equal("scaled_dot");
      return (q * k.transpose()) / std::sqrt(float(dk));  // n = dimension of the key (seed 004)
    case ScoreFunction::Dot:
      need_equal("dot");
      return q * k.transpose();
    case ScoreFunction::General:
      if (w.w.rows() != dq || w.w.cols() != dk)
        throw AtlasError("score function general: W_a is [" + std::to_string(w.w.rows()) + ", " +
                         std::to_string(w.w.cols()) + "], queries and keys need [" +
                         std::to_string(dq) + ", " + std::to_string(dk) + "]");
      return q * w.w * k.transpose();
    case ScoreFunction::Additive: {
      if (w.w1.cols() != dq || w.w2.cols() != dk || w.w1.rows() != w.w2.rows() ||
          w.v.cols() != w.w1.rows())
        throw AtlasError("score function additive: W1, W2, v_a do not fit queries of size " +
                         std::to_string(dq) + " and keys of size " + std::to_string(dk));
      const Mat ws = q * w.w1.transpose();  // [Lq, d_attn]
      const Mat wh = k * w.w2.transpose();  // [Lk, d_attn]
      Mat e(lq, lk);
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          e(i, j) = (ws.row(i) + wh.row(j)).array().tanh().matrix().dot(w.v);
      return e;
    }
    case ScoreFunction::Cosine: {
      need_equal("cosine");
      Mat e = q * k.transpose();
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          e(i, j) *= w.strength / std::max(q.row(i).norm() * k.row(j).norm(), 1e-8f);
      return e;
    }
    case ScoreFunction::Location: {
      if (w.w.cols() != dq)
        throw AtlasError("score function location: W_a has " + std::to_string(w.w.cols()) +
                         " columns, queries have size " + std::to_string(dq));
      if (lk > w.w.rows())
        throw AtlasError("score function location scores at most " + std::to_string(w.w.rows()) +
                         " key positions (max_positions), got " + std::to_string(lk));
      // softmax(W_a s) over positions; rows of W_a past the last key are dropped.
      return q * w.w.topRows(lk).transpose();
    }
  }
  throw AtlasError("unknown score function");
}

Mat masked_softmax(Mat& e, const AttentionMask& mask) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t lq = e.rows(), lk = e.cols();
  Mat a = Mat::Zero(lq, lk);
  for (int64_t i = 0; i < lq; ++i) {
    float mx = ninf;
    for (int64_t j = 0; j < lk; ++j) {
      if (!mask.is_allowed(i, j, lk)) e(i, j) = ninf;
      mx = std::max(mx, e(i, j));
    }
    if (mx == ninf) continue;  // no key at all: a zero row
    double z = 0;
    for (int64_t j = 0; j < lk; ++j)
      if (e(i, j) != ninf) z += (a(i, j) = float(std::exp(double(e(i, j) - mx))));
    a.row(i) /= float(z);
  }
  return a;
}

ScoreWeights seeded_score_weights(ScoreFunction f, int64_t dq, int64_t dk, int64_t d_attn,
                                  int64_t max_positions, uint64_t seed) {
  ScoreWeights w;
  const int64_t da = d_attn > 0 ? d_attn : dk;
  if (f == ScoreFunction::General) w.w = seeded_matrix(dq, dk, seed, "score.general.w");
  if (f == ScoreFunction::Location) w.w = seeded_matrix(max_positions, dq, seed, "score.location.w");
  if (f == ScoreFunction::Additive) {
    w.w1 = seeded_matrix(da, dq, seed, "score.additive.w1");
    w.w2 = seeded_matrix(da, dk, seed, "score.additive.w2");
    w.v = seeded_matrix(1, da, seed, "score.additive.v");
  }
  return w;
}

bool score_function_applies(const ModelConfig& c) { return !c.rnn_seq2seq() && c.score(); }

void append_score_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  if (!score_function_applies(c) || !score_function_has_weights(c.score()->function)) return;
  const ScoreConfig& score = *c.score();
  const int64_t H = c.n_heads, dh = c.d_head(), da = score.d_attn > 0 ? score.d_attn : dh;
  std::vector<std::string> prefixes;
  for (const ParamSpec& s : specs)
    if (s.name.ends_with(".wq")) prefixes.push_back(s.name.substr(0, s.name.size() - 3));
  for (const std::string& p : prefixes) {
    if (score.function == ScoreFunction::General) specs.push_back({p + ".score.w", {H, dh, dh}});
    if (score.function == ScoreFunction::Location)
      specs.push_back({p + ".score.w", {H, c.max_positions, dh}});
    if (score.function == ScoreFunction::Additive) {
      specs.push_back({p + ".score.w1", {H, da, dh}});
      specs.push_back({p + ".score.w2", {H, da, dh}});
      specs.push_back({p + ".score.v", {H, da}});
    }
  }
}

ScoreWeights head_score_weights(ScoreFunction f, const Tensor* w, const Tensor* w1,
                                const Tensor* w2, const Tensor* v, int64_t head, float strength) {
  ScoreWeights out;
  out.strength = strength;
  if ((f == ScoreFunction::General || f == ScoreFunction::Location) && w) out.w = head_slice(*w, head);
  if (f == ScoreFunction::Additive && w1 && w2 && v) {
    out.w1 = head_slice(*w1, head);
    out.w2 = head_slice(*w2, head);
    out.v = head_slice(*v, head);
  }
  return out;
}

DTensor score_function_attention(ForwardPass& pass, const DTensor& q_d, const DTensor& k_d,
                                 const DTensor& v_d, const std::string& prefix,
                                 const std::string& traced_name, const AttentionMask& mask) {
  const ModelConfig& c = pass.config();
  const TraceOptions& topt = pass.options().trace;
  const ScoreConfig score = c.score_function();
  const ScoreFunction f = score.function;
  ScoreAttentionArgs args;
  args.attn.heads = int(c.n_heads);
  args.attn.mask = mask;
  args.attn.want_probs = topt.attention;
  args.attn.want_scores = topt.scores;
  args.function = f;
  args.strength = score.strength;
  if (f == ScoreFunction::General || f == ScoreFunction::Location) args.w = pass.weight(prefix + ".score.w");
  if (f == ScoreFunction::Additive) {
    args.w1 = pass.weight(prefix + ".score.w1");
    args.w2 = pass.weight(prefix + ".score.w2");
    args.v_a = pass.weight(prefix + ".score.v");
  }
  const AttentionResult r = score_attention(pass.backend(), q_d, k_d, v_d, args);
  if (topt.attention) pass.trace_later(traced_name, "attention probabilities [heads, Lq, Lk]", r.probs);
  if (topt.scores)
    pass.trace_later(companion_array_name(traced_name, Companion::Scores),
                     std::string("pre-softmax scores, score function ") + score_function_name(f) +
                         ", masked = -inf [heads, Lq, Lk]",
                     r.scores);
  return r.out;
}

}  // namespace atlas
