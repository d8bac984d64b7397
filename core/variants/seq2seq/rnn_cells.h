#pragma once
// Recurrent cells of the encoder-decoder with attention (core/variants/seq2seq/seq2seq.cpp), seed 004:
//   GRU (Cho et al. 2014, the form Bahdanau et al. 2015 use), gate rows [r; z; n]:
//     r = sigma(W_r x + U_r h + b_r),  z = sigma(W_z x + U_z h + b_z)
//     n = tanh(W_n x + U_n (r * h) + b_n),  h' = (1 - z) * n + z * h
//   LSTM (Hochreiter & Schmidhuber 1997, no peepholes), gate rows [i; f; g; o]:
//     i, f, o = sigma(W x + U h + b),  g = tanh(W_g x + U_g h + b_g)
//     c' = f * c + i * g,  h' = o * tanh(c')
#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct RnnCellWeights {
  Mat w;     // [gates * H, in]
  Mat u;     // [gates * H, H]
  RowVec b;  // [gates * H]
};

struct RnnState {
  RowVec h;  // [H]
  RowVec c;  // [H], LSTM only
};

int64_t rnn_gates(RnnCell cell);  // 3 (GRU) or 4 (LSTM)
RnnState zero_state(int64_t hidden);
RnnState rnn_step(RnnCell cell, const RnnCellWeights& w, const RowVec& x, const RnnState& prev);

// Runs the cell over the rows of x [L, in] from the zero state. reverse: reads x_{L-1} first.
// Row i of the result is the state right after reading x_i [L, H]; `last` gets the final state.
Mat rnn_run(RnnCell cell, const RnnCellWeights& w, const Mat& x, bool reverse,
            RnnState* last = nullptr);

// Bahdanau's annotation h_i = [forward_i; backward_i] [L, 2H].
Mat bidirectional_encode(RnnCell cell, const RnnCellWeights& forward,
                         const RnnCellWeights& backward, const Mat& x);

}  // namespace atlas
