#pragma once
// Adaptive Computation Time on the tape (Graves 2016; the Universal Transformer of seed 000;
// the inference version and its equations are in core/variants/universal/universal.cpp). Per step n and
// position t, with h^n_t = sigmoid(w . S^n_t + b) a tape node:
//   w^n_t = h^n_t                          while t keeps running (cum + h < 1 - eps, n < M)
//   w^n_t = R(t) = 1 - sum_{m<n} h^m_t     at t's halting step N(t)
//   w^n_t = 0                              once t has halted
// The halting decisions (which branch) are piecewise constant, so the gradient flows only
// through h: to h^n_t while running, and as -1 to every earlier h^m_t through the remainder.
// The ponder cost rho(t) = N(t) + R(t) therefore has d rho / d h^m_t = -1 for m < N(t): the
// cost pushes the earlier halting probabilities up, so positions halt sooner.
#include <vector>

#include "core/train/train_model.h"
#include "core/train/train_tape.h"

namespace atlas::train {

// Which positions run at step n and which of them halt there (decided on values).
struct ActStepMask {
  std::vector<uint8_t> running;  // [L]
  std::vector<uint8_t> halting;  // [L], a subset of running
};

// w^n [L, 1] from the halting probabilities of steps 1..n (`h_nodes`, each [L, 1]).
template <class S>
int act_weights(Tape<S>& t, std::vector<int> h_nodes, ActStepMask mask) {
  using M = MatT<S>;
  const int now = h_nodes.back();
  const Eigen::Index L = t.value(now).rows();
  M w = M::Zero(L, 1);
  for (Eigen::Index i = 0; i < L; ++i) {
    if (!mask.running[size_t(i)]) continue;
    if (!mask.halting[size_t(i)]) {
      w(i, 0) = t.value(now)(i, 0);
      continue;
    }
    S cum = 0;
    for (size_t m = 0; m + 1 < h_nodes.size(); ++m) cum += t.value(h_nodes[m])(i, 0);
    w(i, 0) = S(1) - cum;
  }
  return t.record(std::move(w), [h_nodes = std::move(h_nodes), mask = std::move(mask)](Tape<S>& t, const M& dw) {
    const int now = h_nodes.back();
    for (Eigen::Index i = 0; i < dw.rows(); ++i) {
      if (!mask.running[size_t(i)]) continue;
      if (!mask.halting[size_t(i)]) {
        t.grad(now)(i, 0) += dw(i, 0);
        continue;
      }
      for (size_t m = 0; m + 1 < h_nodes.size(); ++m) t.grad(h_nodes[m])(i, 0) -= dw(i, 0);
    }
  });
}

// The ACT output after step n, rows of running positions only (the others keep y):
//   interpolate (tensor2tensor): y' = w T + (1 - w) y;   weighted sum (Graves): y' = y + w T
template <class S>
int act_update(Tape<S>& t, int y, int tn, int w, std::vector<uint8_t> running, bool interpolate) {
  using M = MatT<S>;
  M out = t.value(y);
  const M &T = t.value(tn), &W = t.value(w);
  for (Eigen::Index i = 0; i < out.rows(); ++i) {
    if (!running[size_t(i)]) continue;
    out.row(i) = interpolate ? M(W(i, 0) * T.row(i) + (S(1) - W(i, 0)) * out.row(i))
                             : M(out.row(i) + W(i, 0) * T.row(i));
  }
  return t.record(std::move(out), [=, running = std::move(running)](Tape<S>& t, const M& dy) {
    const M &T = t.value(tn), &W = t.value(w), &Y = t.value(y);
    M& dyo = t.grad(y);
    M& dt = t.grad(tn);
    M& dwm = t.grad(w);
    for (Eigen::Index i = 0; i < dy.rows(); ++i) {
      if (!running[size_t(i)]) {
        dyo.row(i) += dy.row(i);
        continue;
      }
      const S wi = W(i, 0);
      dt.row(i) += wi * dy.row(i);
      if (interpolate) {
        dyo.row(i) += (S(1) - wi) * dy.row(i);
        dwm(i, 0) += dy.row(i).dot(T.row(i) - Y.row(i));
      } else {
        dyo.row(i) += dy.row(i);
        dwm(i, 0) += dy.row(i).dot(T.row(i));
      }
    }
  });
}

// Rows of `a` where `take_a`, else rows of `b`: the next step's state is the block's output for
// running positions and the state at halting (copied forward) for halted ones.
template <class S>
int select_rows(Tape<S>& t, int a, int b, std::vector<uint8_t> take_a) {
  using M = MatT<S>;
  M out = t.value(b);
  for (Eigen::Index i = 0; i < out.rows(); ++i)
    if (take_a[size_t(i)]) out.row(i) = t.value(a).row(i);
  return t.record(std::move(out), [=, take_a = std::move(take_a)](Tape<S>& t, const M& dy) {
    M& da = t.grad(a);
    M& db = t.grad(b);
    for (Eigen::Index i = 0; i < dy.rows(); ++i) (take_a[size_t(i)] ? da : db).row(i) += dy.row(i);
  });
}

// ACT's ponder cost of one example (Graves 2016; tensor2tensor's act_loss): weight times the
// mean over positions of rho(t) = N(t) + R(t). When `seed_weight` > 0 its gradient (through
// R(t) only; N(t) is piecewise constant), times seed_weight, is seeded on the halting-step
// weight nodes, to flow back with the next Tape::backward. 0 for a model without ACT.
template <class S>
double ponder_cost(Tape<S>& tape, const ForwardResult<S>& r, double weight, double seed_weight) {
  const size_t L = r.act_steps.size();
  if (L == 0) return 0.0;
  double total = 0;
  for (size_t i = 0; i < L; ++i) {
    const int node = r.act_halt_nodes[i];
    total += double(r.act_steps[i]) + double(tape.value(node)(Eigen::Index(i), 0));
    if (seed_weight > 0 && weight > 0)
      tape.grad(node)(Eigen::Index(i), 0) += static_cast<S>(weight * seed_weight / double(L));
  }
  return weight * total / double(L);
}

// The ACT settings (threshold epsilon, update) of a model's Universal section.
inline const UniversalConfig& act_settings(const ModelConfig& c) { return *c.universal(); }

}  // namespace atlas::train
