#pragma once
// Absolute positional encodings (seed 000 §"Positional Encoding", seed 002).
//   interleaved (paper):  PE(p, 2i) = sin(p / 10000^(2i/d)),  PE(p, 2i+1) = cos(p / 10000^(2i/d))
//   concatenated (tensor2tensor, Transformer-XL): [sin(p w_0) .. sin(p w_{d/2-1}) | cos(...)]
//   with the same frequencies w_i = 10000^(-2i/d).
#include <cstdint>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace atlas {

// Rows for positions first, first+1, ..., first+length-1.  -> [length, d]
Tensor sinusoid_table(int64_t length, int64_t d, SinusoidLayout layout, int64_t first = 0);

}  // namespace atlas
