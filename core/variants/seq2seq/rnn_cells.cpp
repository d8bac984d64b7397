// GRU and LSTM steps (equations in rnn_cells.h) and the (bi)directional encoder loop.
#include "core/variants/seq2seq/rnn_cells.h"

#include <cmath>

#include "core/tensor/error.h"

namespace atlas {

namespace {

// Eigen's vectorised exp: not bit-equal to the scalar sigmoid of core/tensor/sigmoid.h.
RowVec sigmoid_vectorised(const RowVec& x) { return (1.0f / (1.0f + (-x.array()).exp())).matrix(); }
RowVec tanh_of(const RowVec& x) { return x.array().tanh().matrix(); }

}  // namespace

int64_t rnn_gates(RnnCell cell) { return cell == RnnCell::Gru ? 3 : 4; }

RnnState zero_state(int64_t hidden) {
  return {RowVec::Zero(hidden), RowVec::Zero(hidden)};
}

RnnState rnn_step(RnnCell cell, const RnnCellWeights& w, const RowVec& x, const RnnState& prev) {
  const int64_t H = prev.h.cols();
  if (w.w.cols() != x.cols() || w.u.cols() != H || w.w.rows() != rnn_gates(cell) * H)
    throw AtlasError("internal: recurrent cell weights do not fit input " +
                     std::to_string(x.cols()) + " and hidden size " + std::to_string(H));
  const RowVec wx = x * w.w.transpose() + w.b;  // [gates * H]
  RnnState next;
  if (cell == RnnCell::Gru) {
    const Mat u_rz = w.u.topRows(2 * H), u_n = w.u.bottomRows(H);
    const RowVec uh = prev.h * u_rz.transpose();  // [2H]
    const RowVec r = sigmoid_vectorised(wx.segment(0, H) + uh.segment(0, H));
    const RowVec z = sigmoid_vectorised(wx.segment(H, H) + uh.segment(H, H));
    const RowVec rh = r.cwiseProduct(prev.h);
    const RowVec n = tanh_of(wx.segment(2 * H, H) + rh * u_n.transpose());
    next.h = (RowVec::Ones(H) - z).cwiseProduct(n) + z.cwiseProduct(prev.h);
    next.c = RowVec::Zero(H);
    return next;
  }
  const RowVec g_all = wx + prev.h * w.u.transpose();  // [4H]
  const RowVec i = sigmoid_vectorised(g_all.segment(0, H));
  const RowVec f = sigmoid_vectorised(g_all.segment(H, H));
  const RowVec g = tanh_of(g_all.segment(2 * H, H));
  const RowVec o = sigmoid_vectorised(g_all.segment(3 * H, H));
  next.c = f.cwiseProduct(prev.c) + i.cwiseProduct(g);
  next.h = o.cwiseProduct(tanh_of(next.c));
  return next;
}

Mat rnn_run(RnnCell cell, const RnnCellWeights& w, const Mat& x, bool reverse, RnnState* last) {
  const int64_t L = x.rows(), H = w.u.cols();
  Mat out(L, H);
  RnnState s = zero_state(H);
  for (int64_t n = 0; n < L; ++n) {
    const int64_t i = reverse ? L - 1 - n : n;
    s = rnn_step(cell, w, x.row(i), s);
    out.row(i) = s.h;
  }
  if (last) *last = s;
  return out;
}

Mat bidirectional_encode(RnnCell cell, const RnnCellWeights& forward,
                         const RnnCellWeights& backward, const Mat& x) {
  const Mat f = rnn_run(cell, forward, x, false), b = rnn_run(cell, backward, x, true);
  Mat out(x.rows(), f.cols() + b.cols());
  out << f, b;
  return out;
}

}  // namespace atlas
