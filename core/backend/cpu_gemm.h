#pragma once
// The CPU backend's matrix product: C = A B over strided float operands, packed into panels and
// multiplied by a 12 x 32 register tile of AVX-512 fused multiply-adds (with -march=native on a
// machine that has AVX-512; elsewhere Eigen's product). Eigen's own kernel for this layout keeps
// 12 of the 32 registers as accumulators and reaches ~70 % of the FMA units' peak on GPT-2's
// shapes; this one keeps 24 (docs/PERFORMANCE.md, "Matrix products").
//
// Every element of C is one chain of fused multiply-adds in increasing k, starting from zero,
// wherever the element lies in C and whatever m and n are: so rows (or a tile) computed on their
// own equal the same elements computed as part of a larger product, bit for bit. The maps
// computed on request (core/model/attention_on_demand.h) rely on that.
#include <cstdint>

namespace atlas::cpu_gemm {

// A matrix read in place: element (r, c) is data[r * row_stride + c * col_stride].
struct Operand {
  const float* data = nullptr;
  int64_t row_stride = 0, col_stride = 1;
};

// C[i * ldc + j] = sum over k < depth of A(i, k) * B(k, j), for i < m and j < n. A is m x depth,
// B depth x n; C must not overlap them. Runs on the calling thread: callers split larger work.
void multiply(int64_t m, int64_t n, int64_t depth, Operand a, Operand b, float* c, int64_t ldc);

// True where multiply runs the packed AVX-512 kernel (and so keeps the FMA-chain guarantee
// above); false where it hands the product to Eigen.
bool packed_kernel_available();

}  // namespace atlas::cpu_gemm
