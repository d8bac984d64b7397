#pragma once
// Rotary position embedding on the training tape (core/variants/rotary/rope.h has the
// equations). The rotation R_p is orthogonal, so the backward of y = R_p x is dx = R_p^T dy:
// the same rope_rotate_row with the angles negated.
#include "core/train/train_tape.h"
#include "core/variants/rotary/rope.h"

namespace atlas::train {

// x [L, heads * d_head] (a tape node), table [L, r] from rope_table.
template <class S>
int rope(Tape<S>& t, int x, const Tensor& table, const RopeArgs& args) {
  using M = MatT<S>;
  M y = t.value(x);
  check_rope_shapes({y.rows(), y.cols()}, table.shape, args);
  const int64_t d_head = y.cols() / args.heads;
  for (Eigen::Index l = 0; l < y.rows(); ++l)
    rope_rotate_row(y.data() + l * y.cols(), table.data.data() + l * args.rotary_dims, args, d_head);
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    M dx = dy;
    for (Eigen::Index l = 0; l < dx.rows(); ++l)
      rope_rotate_row(dx.data() + l * dx.cols(), table.data.data() + l * args.rotary_dims, args,
                      d_head, /*inverse=*/true);
    t.grad(x) += dx;
  });
}

}  // namespace atlas::train
