#pragma once
// Rotary position embedding (RoFormer, Su et al. 2021, eq. 13-15; Llama and its family):
// before the scores, each head's query and key at position p are rotated pair by pair,
//   [x'_a]   [cos(p w_i)  -sin(p w_i)] [x_a]        w_i = theta^(-2i/r),  i < r/2
//   [x'_b] = [sin(p w_i)   cos(p w_i)] [x_b],
// with (a, b) = (i, i + r/2) (half) or (2i, 2i + 1) (adjacent), so that q'_m . k'_n depends on
// the positions only through m - n. The last d_head - r dimensions are left as they are.
// The angles come from one table per forward (rope_table); the backend op (rope_op, a module
// op: core/backend/module_op.h), its host reference and the training op all rotate with
// rope_rotate_row.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace atlas {

class Backend;
struct DTensor;
struct ModuleOp;

struct RopeArgs {
  int heads = 1;
  int64_t rotary_dims = 0;  // r (even, <= d_head)
  bool adjacent_pairs = false;
};

// r of this config: rope.rotary_dims, or every dimension of a head when it is 0.
int64_t rope_rotary_dims(const ModelConfig& c);
RopeArgs rope_args(const ModelConfig& c);

// w_i for i < r/2 after the config's scaling; `length` is the number of positions of the run
// (dynamic NTK scaling depends on it). Computed in double, returned as float.
std::vector<float> rope_frequencies(const ModelConfig& c, int64_t length);

// [length, r]: column i holds cos(p w_i) and column r/2 + i holds sin(p w_i), for positions
// p = first, ..., first + length - 1 (angles in double, then rounded to float).
Tensor rope_table(const std::vector<float>& frequencies, int64_t first, int64_t length);

// Rotates one row [heads * d_head] by the angles of one table row [r]; inverse rotates by the
// negative angles (the transpose: the backward of the rotation).
template <class T>
void rope_rotate_row(T* row, const float* table_row, const RopeArgs& a, int64_t d_head,
                     bool inverse = false) {
  const int64_t half = a.rotary_dims / 2;
  for (int h = 0; h < a.heads; ++h) {
    T* x = row + h * d_head;
    for (int64_t i = 0; i < half; ++i) {
      const T c = T(table_row[i]);
      const T s = inverse ? -T(table_row[half + i]) : T(table_row[half + i]);
      const int64_t ia = a.adjacent_pairs ? 2 * i : i;
      const int64_t ib = a.adjacent_pairs ? 2 * i + 1 : i + half;
      const T xa = x[ia], xb = x[ib];
      x[ia] = xa * c - xb * s;
      x[ib] = xb * c + xa * s;
    }
  }
}

// Host reference of the op: x [L, heads * d_head], table [L, r] -> rotated copy.
Tensor rope_reference(const Tensor& x, const Tensor& table, const RopeArgs& args);
// Throws when x, table and args disagree (shared by every backend).
void check_rope_shapes(const Shape& x, const Shape& table, const RopeArgs& args);

// The backend op "rope": inputs {x, table}, one output (the rotated x); its Vulkan kernel is
// gpu/variants/rotary/vk_rope.cpp.
const ModuleOp& rope_op();
// x rotated on `be` (shapes checked first, the same message on every backend).
DTensor apply_rope(Backend& be, const DTensor& x, const DTensor& table, const RopeArgs& args);

}  // namespace atlas
