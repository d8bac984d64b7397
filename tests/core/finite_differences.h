#pragma once
// The finite-difference oracle of the training tests: tape gradients of a scalar loss against
// central differences (L(p + h) - L(p - h)) / 2h in double precision, which never touch the
// backward code. With h = 1e-5 the truncation error is ~h^2 |L'''| ~ 1e-10 and the rounding
// error ~1e-16 / h ~ 1e-11, so agreement to 1e-6 relative is a real check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/tensor/random.h"
#include "core/train/train_tape.h"

namespace atlas::train::fd {

using MD = MatT<double>;
// Returns the loss; fills `grads` (tape gradients) when it is not null.
using Loss = std::function<double(const ParamsT<double>&, ParamsT<double>*)>;

inline MD random_mat(Rng& rng, Eigen::Index r, Eigen::Index c, double scale = 1.0) {
  MD m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = rng.normal() * scale;
  return m;
}

// Every entry (or a strided subset of at most `max_per_tensor` per tensor) of every parameter.
// `skip`, when given, is asked after each probe's two evaluations whether the probe crossed a
// point where the loss is not differentiable (ACT: a halting decision flipped); such probes
// are not compared. Returns how many entries were compared.
inline int check_gradients(ParamsT<double>& params, const Loss& loss, double tol = 1e-6,
                           int max_per_tensor = 40, const std::function<bool()>& skip = {}) {
  ParamsT<double> grads;
  loss(params, &grads);
  const double h = 1e-5;
  int compared = 0;
  for (auto& [name, m] : params) {
    const Eigen::Index stride = std::max<Eigen::Index>(1, m.size() / max_per_tensor);
    for (Eigen::Index i = 0; i < m.size(); i += stride) {
      const double keep = m.data()[i];
      m.data()[i] = keep + h;
      const double up = loss(params, nullptr);
      const bool skip_up = skip && skip();
      m.data()[i] = keep - h;
      const double down = loss(params, nullptr);
      const bool skip_down = skip && skip();
      m.data()[i] = keep;
      if (skip_up || skip_down) continue;
      const double numeric = (up - down) / (2 * h);
      const double analytic = grads.count(name) ? grads.at(name).data()[i] : 0.0;
      INFO(name << "[" << i << "] analytic " << analytic << " numeric " << numeric);
      CHECK(std::abs(analytic - numeric) <= tol * std::max(1.0, std::abs(numeric)));
      ++compared;
    }
  }
  return compared;
}

}  // namespace atlas::train::fd
