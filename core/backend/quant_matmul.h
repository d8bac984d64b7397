#pragma once
// Products with weights held in their file's encoding (core/tensor/packed_matrix.h), on the CPU:
// y = x W^T for x [m, k] float32 and W [n, k] of a ggml type, never dequantizing W as a whole.
// The activations are prepared once per product and every output column reuses them: for the
// block types quantized to int8 per 32 values with a float scale (as llama.cpp's Q8_0; the
// K-quants take the same per-32 format rather than Q8_K's one scale per 256, so one kernel serves
// every type and the rounding is never coarser), for F32/F16/BF16 weights kept float.
// Kernels are chosen at run time from what the CPU has (AVX-512 VNNI, AVX2, portable C++), so
// one binary runs everywhere. Error bounds per type: docs/quantized-models.md.
#include <cstdint>
#include <memory>

#include "core/tensor/packed_matrix.h"

namespace atlas::quant_matmul {

// True for the weight types multiply() takes: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K.
bool supports(uint32_t ggml_type);

// x [m, k] (row i at x + i * ldx) prepared for products with weights of `weight_type`.
class PreparedInput {
 public:
  PreparedInput(uint32_t weight_type, const float* x, int64_t m, int64_t k, int64_t ldx);
  ~PreparedInput();
  PreparedInput(PreparedInput&&) noexcept;
  PreparedInput& operator=(PreparedInput&&) noexcept;
  int64_t rows() const;
  int64_t depth() const;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// y[i * ldy + (c - c0)] = sum over j < k of x[i, j] W[c, j], for i < m and c in [c0, c0 + n):
// `y` points at the first column computed (for a whole product's output, pass out + c0). W's type
// must be the one `x` was prepared for and W.cols == x.depth(). Runs on the calling thread; the
// caller splits columns over threads (every column is computed the same way whatever the split).
void multiply(const PackedMatrix& w, const PreparedInput& x, int64_t c0, int64_t n, float* y,
              int64_t ldy);

// Which kernel multiply() uses for `ggml_type` on this CPU ("avx512-vnni", "avx2", "portable"):
// shown by `atlas info` and the benchmarks.
const char* kernel_name(uint32_t ggml_type);

}  // namespace atlas::quant_matmul
