#pragma once
// GTrXL's gating layers on the tape (the inference version is core/variants/gtrxl/gtrxl.cpp apply_gate), built
// from four elementwise ops with their backward:
//   input    x * sigma(x W_g^T) + y
//   output   x + sigma(x W_g^T - b_g) * y
//   highway  sigma(x W_g^T + b_g) * x + (1 - sigma(...)) * y
//   gru      r = sigma(y W_r^T + x U_r^T), z = sigma(y W_z^T + x U_z^T - b_g),
//            h = tanh(y W_g^T + (r * x) U_g^T), out = (1 - z) * x + z * h
// where x is the residual stream and y the sub-layer output (ReLU'd first with
// identity_map_reorder, the paper's eq. 10).
#include <cmath>
#include <string>

#include "core/config/config.h"
#include "core/train/train_tape.h"

namespace atlas::train {

template <class S>
int hadamard(Tape<S>& t, int a, int b) {  // a * b elementwise
  using M = MatT<S>;
  M y = t.value(a).cwiseProduct(t.value(b));
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    t.grad(a) += dy.cwiseProduct(t.value(b));
    t.grad(b) += dy.cwiseProduct(t.value(a));
  });
}

template <class S>
int affine(Tape<S>& t, int x, S alpha, S beta) {  // alpha x + beta
  using M = MatT<S>;
  M y = (t.value(x).array() * alpha + beta).matrix();
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) { t.grad(x) += dy * alpha; });
}

template <class S>
int sigmoid(Tape<S>& t, int x) {
  using M = MatT<S>;
  M y = (S(1) / (S(1) + (-t.value(x).array()).exp())).matrix();
  const M s = y;
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    t.grad(x).array() += dy.array() * s.array() * (S(1) - s.array());
  });
}

template <class S>
int tanh_op(Tape<S>& t, int x) {
  using M = MatT<S>;
  M y = t.value(x).array().tanh().matrix();
  const M th = y;
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    t.grad(x).array() += dy.array() * (S(1) - th.array().square());
  });
}

// x + sign * b on every row; b [1, d] (a parameter).
template <class S>
int add_row(Tape<S>& t, int x, int b, S sign) {
  using M = MatT<S>;
  M y = t.value(x);
  y.rowwise() += t.value(b).row(0) * sign;
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    t.grad(x) += dy;
    t.grad(b).row(0) += dy.colwise().sum() * sign;
  });
}

// The gate of one sub-layer; `w(name)` gives the parameter node `<prefix><name>`.
template <class S, class W>
int gate(Tape<S>& t, const GatingConfig& g, int x, int y, const W& w) {
  if (g.identity_map_reorder) y = t.activation(y, FfnActivation::ReLU);
  auto lin = [&](int v, const char* name) { return t.linear(v, w(name), -1); };  // v W^T
  switch (g.type) {
    case GateType::None: return t.add(x, y);
    case GateType::Input: return t.add(hadamard(t, sigmoid(t, lin(x, ".w_g")), x), y);
    case GateType::Output:
      return t.add(x, hadamard(t, sigmoid(t, add_row(t, lin(x, ".w_g"), w(".b_g"), S(-1))), y));
    case GateType::Highway: {
      const int gh = sigmoid(t, add_row(t, lin(x, ".w_g"), w(".b_g"), S(1)));
      return t.add(hadamard(t, gh, x), hadamard(t, affine(t, gh, S(-1), S(1)), y));
    }
    case GateType::Gru: {
      const int r = sigmoid(t, t.add(lin(y, ".w_r"), lin(x, ".u_r")));
      const int z = sigmoid(t, add_row(t, t.add(lin(y, ".w_z"), lin(x, ".u_z")), w(".b_g"), S(-1)));
      const int h = tanh_op(t, t.add(lin(y, ".w_g"), lin(hadamard(t, r, x), ".u_g")));
      return t.add(hadamard(t, affine(t, z, S(-1), S(1)), x), hadamard(t, z, h));
    }
  }
  return t.add(x, y);
}

// The gate of a model's GTrXL section (the tape executor's XlExecutor method).
template <class S, class W>
int model_gate(Tape<S>& t, const ModelConfig& c, int x, int y, const W& w) {
  return gate(t, *c.gating(), x, y, w);
}

}  // namespace atlas::train
