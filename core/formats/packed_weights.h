#pragma once
// Reading weights held in their file's encoding (core/tensor/packed_matrix.h): the loaders make
// such tensors with packed_tensor, the backends and analyses read them through the functions
// here, a few rows or one matrix at a time (never the whole model as float32).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor/float_scan.h"
#include "core/tensor/packed_matrix.h"
#include "core/tensor/tensor.h"

namespace atlas {

// A Tensor [m.rows, m.cols] holding `m` (no float data).
Tensor packed_tensor(PackedMatrix m);

// Rows [first, first + count) as float32, count * m.cols values at `out` (bit-identical to
// llama.cpp's dequantization of the same blocks).
void dequantize_rows(const PackedMatrix& m, int64_t first, int64_t count, float* out);

// The tensor's values as a float32 tensor: a packed one converted (for an analysis that edits or
// reads one whole weight), a float one copied.
Tensor to_float(const Tensor& t);

// Non-finite values and the largest finite magnitude, as scan_floats, of any tensor. For the
// block-quantized types both come from the block scales: a value is d q (+ m), so a block holds
// non-finite values exactly when a scale is not finite (then all of them are), and max_abs is
// the largest magnitude the scales allow (an upper bound of the true one).
FloatScan scan_weights(const Tensor& t);

// Bytes the tensor's values occupy as held: the encoded bytes of a packed tensor (which live in
// the file's pages), 4 per value otherwise.
int64_t held_bytes(const Tensor& t);

// "Q4_K" for a packed tensor, "F32" for a float one.
const char* held_type_name(const Tensor& t);
const char* held_type_name(const PackedMatrix& m);

// A model's weights as held, per encoding ("Q4_K", "F32", ...; by name), for `atlas info` and the
// app's Model > Properties.
struct HeldWeights {
  struct Encoding {
    std::string type;
    double bytes = 0;
    int tensors = 0;
  };
  std::vector<Encoding> by_type;
  double total_bytes = 0;
  bool quantized = false;  // some matrix is block-quantized (not F32/F16/BF16)
};
HeldWeights held_weights(const std::map<std::string, Tensor>& params);

}  // namespace atlas
