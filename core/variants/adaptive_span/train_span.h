#pragma once
// Adaptive attention span on the tape (Sukhbaatar et al. 2019, seed 000; the inference
// version is core/variants/relative_attention/relative_attention.cpp + core/variants/adaptive_span/adaptive_span.cpp). Per head h and query i:
//   m_ij = clamp((R + z - x_ij + o) / R, 0, 1),  0 when x_ij > S,   x_ij = |i - j|  (span_mask.h)
//   inside (paper):     a_ij = m_ij exp(e_ij) / sum_r m_ir exp(e_ir)
//   after (reference):  a_ij = p_ij m_ij / (sum_r p_ir m_ir + 1e-8),  p = softmax(e)
// (the rows: span_softmax.h, the inference op's own function). z is [1, H] (one learned span
// per head, clamped to [0, S] as the engine does) or [Lq, H] (dynamic span
// z_t = S sigmoid(v . x_t + b), span_z.h). The gradient reaches z through the ramp,
// dm/dz = 1/R for keys strictly inside it; it passes the clamp unchanged (straight-through),
// because the reference clamps the parameter after each optimiser step, outside the graph.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/train/train_tape.h"
#include "core/variants/adaptive_span/span_mask.h"
#include "core/variants/adaptive_span/span_softmax.h"
#include "core/variants/adaptive_span/span_z.h"

namespace atlas::train {

struct SpanSpec {
  int64_t ramp = 32;
  int64_t max_span = 8192;
  SpanMaskMode mode = SpanMaskMode::Inside;
  int64_t offset = 0;  // the distance convention (span_mask.h)
};

template <class S>
S span_mask_value(S z, int64_t x, const SpanSpec& s) {
  return span_mask_at(z, x, s.ramp, s.max_span, s.offset);
}

template <class S>
S span_mask_slope(S z, int64_t x, const SpanSpec& s) {
  return span_mask_slope_at(z, x, s.ramp, s.max_span, s.offset);
}

// Self-attention with the span mask: q, k, v as Tape::attention, z a tape node as above.
// The hard masks (causal, padding) and the attention-dropout multipliers of `spec` apply too.
template <class S>
int span_attention(Tape<S>& t, int q, int k, int v, int z, const AttentionSpec<S>& spec,
                   const SpanSpec& span) {
  using M = MatT<S>;
  const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &Z = t.value(z);
  const int H = spec.heads;
  const Eigen::Index lq = Q.rows(), lk = K.rows(), dk = Q.cols() / H, dv = V.cols() / H;
  auto z_at = [&Z, &span](Eigen::Index i, int h) {
    return clamp_span_z(Z.rows() == 1 ? Z(0, h) : Z(i, h), span.max_span);
  };
  auto allowed = [&spec](Eigen::Index i, Eigen::Index j) {
    return !(spec.causal && j > i) && (spec.key_valid.empty() || spec.key_valid[j]);
  };
  struct Saved {
    std::vector<M> a, m, p;  // per head: probabilities, mask, (after) softmax before the mask
    std::vector<std::vector<S>> denom;  // after: sum p m + 1e-8 per row
  };
  auto saved = std::make_shared<Saved>();
  const bool after = span.mode == SpanMaskMode::After;
  M out = M::Zero(lq, H * dv);
  for (int h = 0; h < H; ++h) {
    M e = (Q.middleCols(h * dk, dk) * K.middleCols(h * dk, dk).transpose()) * spec.scale;
    M m = M::Zero(lq, lk), a = M::Zero(lq, lk), p = M::Zero(lq, lk);
    std::vector<S> denom(static_cast<size_t>(lq), S(1));
    for (Eigen::Index i = 0; i < lq; ++i) {
      for (Eigen::Index j = 0; j < lk; ++j)
        if (allowed(i, j))
          m(i, j) = span_mask_value(z_at(i, h), span_distance(i, j, lq, lk), span);
        else
          e(i, j) = -std::numeric_limits<S>::infinity();
      denom[size_t(i)] = span_softmax_row<S>(e.row(i).data(), m.row(i).data(), lk, after,
                                             a.row(i).data(), p.row(i).data());
    }
    out.middleCols(h * dv, dv).noalias() = with_keep(a, spec.prob_keep, h) * V.middleCols(h * dv, dv);
    saved->a.push_back(std::move(a));
    saved->m.push_back(std::move(m));
    saved->p.push_back(std::move(p));
    saved->denom.push_back(std::move(denom));
  }
  return t.record(std::move(out), [=](Tape<S>& t, const M& dout) {
    const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &Z = t.value(z);
    M& dq = t.grad(q);
    M& dkm = t.grad(k);
    M& dvm = t.grad(v);
    M& dz = t.grad(z);
    for (int h = 0; h < H; ++h) {
      const M& a = saved->a[h];
      const M& m = saved->m[h];
      const M dO = dout.middleCols(h * dv, dv);
      dvm.middleCols(h * dv, dv).noalias() += with_keep(a, spec.prob_keep, h).transpose() * dO;
      const M dA = with_keep(M(dO * V.middleCols(h * dv, dv).transpose()), spec.prob_keep, h);
      M de = M::Zero(lq, lk), dm = M::Zero(lq, lk);
      for (Eigen::Index i = 0; i < lq; ++i) {
        const S row = dA.row(i).dot(a.row(i));
        for (Eigen::Index j = 0; j < lk; ++j) {
          if (m(i, j) <= S(0) && span.mode == SpanMaskMode::Inside) continue;
          if (span.mode == SpanMaskMode::Inside) {
            // a = softmax(e + log m): d e = a (dA - row), d m = d e / m
            de(i, j) = a(i, j) * (dA(i, j) - row);
            dm(i, j) = de(i, j) / m(i, j);
          } else {
            // a = u / D, u = p m: dL/du = (dA - row) / D
            const S du = (dA(i, j) - row) / saved->denom[h][i];
            dm(i, j) = du * saved->p[h](i, j);
            de(i, j) = du * m(i, j);  // = dL/dp, softmax backward below
          }
        }
        if (span.mode == SpanMaskMode::After) {
          const S pr = de.row(i).dot(saved->p[h].row(i));
          de.row(i) = saved->p[h].row(i).cwiseProduct((de.row(i).array() - pr).matrix());
        }
        for (Eigen::Index j = 0; j < lk; ++j) {
          if (dm(i, j) == S(0)) continue;
          const S zc = clamp_span_z(Z.rows() == 1 ? Z(0, h) : Z(i, h), span.max_span);
          const S slope = span_mask_slope(zc, span_distance(i, j, lq, lk), span);
          if (slope != S(0)) (Z.rows() == 1 ? dz(0, h) : dz(i, h)) += dm(i, j) * slope;
        }
      }
      de *= spec.scale;
      dq.middleCols(h * dk, dk).noalias() += de * K.middleCols(h * dk, dk);
      dkm.middleCols(h * dk, dk).noalias() += de.transpose() * Q.middleCols(h * dk, dk);
    }
  });
}

// The dynamic span z_t = S sigmoid(logit) of every head and position from the logits
// v . x_t + b [Lq, H] (a tape node), each the inference forward's value (span_z.h);
// dz/dlogit = S sigmoid (1 - sigmoid).
template <class S>
int dynamic_span_z_node(Tape<S>& t, int logits, int64_t max_span) {
  using M = MatT<S>;
  const M& x = t.value(logits);
  M sig(x.rows(), x.cols()), z(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    sig.data()[i] = logistic(x.data()[i]);
    z.data()[i] = dynamic_span_z(x.data()[i], max_span);
  }
  const S s = S(max_span);
  return t.record(std::move(z), [=, sig = std::move(sig)](Tape<S>& t, const M& dy) {
    t.grad(logits).array() += dy.array() * s * sig.array() * (S(1) - sig.array());
  });
}

// The z of self-attention sub-layer `prefix`: its learned parameter [1, H] (clamped where the
// mask reads it), or the dynamic z [Lq, H] of its input xq. weight(name) is a parameter's node.
template <class S, class Weight>
int span_z_node(Tape<S>& t, const AdaptiveSpanConfig& sc, const std::string& prefix, int xq,
                Weight&& weight) {
  if (!sc.dynamic) return weight(prefix + kSpanZ);
  return dynamic_span_z_node(t, t.linear(xq, weight(prefix + kSpanV), weight(prefix + kSpanB)),
                             sc.max_span);
}

// Each head's span in a z node [rows, H]: the mean over positions of its clamped z, in double.
template <class S>
std::vector<double> head_spans(const MatT<S>& z, int64_t max_span) {
  std::vector<double> spans(size_t(z.cols()), 0.0);
  for (Eigen::Index h = 0; h < z.cols(); ++h) {
    double sum = 0;
    for (Eigen::Index i = 0; i < z.rows(); ++i) sum += clamp_span_z(double(z(i, h)), max_span);
    spans[size_t(h)] = sum / double(z.rows());
  }
  return spans;
}

// The L1 penalty of one example (seed 000; the inference trace's "span.penalty" per layer):
// span_l1_penalty over the heads of every z node, in node order. When `seed_weight` > 0 its
// gradient, times seed_weight, is seeded on the z nodes, to flow back with the next
// Tape::backward: straight through the clamp, like the span mask.
template <class S>
double span_penalty(Tape<S>& tape, const AdaptiveSpanConfig& span, const std::vector<int>& z_nodes,
                    double seed_weight) {
  const double coeff = span.loss_coeff;
  std::vector<double> spans;
  for (int id : z_nodes) {
    const std::vector<double> heads = head_spans(tape.value(id), span.max_span);
    spans.insert(spans.end(), heads.begin(), heads.end());
    if (seed_weight > 0)
      tape.grad(id).array() += static_cast<S>(coeff * seed_weight / double(tape.value(id).rows()));
  }
  return span_l1_penalty(coeff, spans.data(), int64_t(spans.size()));
}

}  // namespace atlas::train
