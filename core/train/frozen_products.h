#pragma once
// The matrix products of a float tape whose weights are frozen (attribution patching,
// core/analysis/attribution_patching.h) on the inference engine's packed kernel
// (core/backend/cpu_gemm.h) instead of Eigen's product: with 64 tokens against GPT-2's weights
// Eigen spends a third of its time packing the weight anew for every product, and the tape's
// pass cost about 2.3 engine forwards. Training (weights not frozen) keeps Eigen's products, so
// its results stay what they were. The threads take blocks of output columns, as the CPU
// backend's linear does.
#include <cstdint>

namespace atlas::train {

// Whether the two products below run (the packed kernel exists and m has enough rows to be
// worth packing); false: the caller multiplies with Eigen.
bool frozen_products_apply(int64_t m);

// y[m, out] = x[m, in] w[out, in]^T, all row-major and dense.
void frozen_product_nt(int64_t m, int64_t in, int64_t out, const float* x, const float* w, float* y);

// dx[m, in] += dy[m, out] w[out, in], all row-major and dense.
void frozen_product_add_nn(int64_t m, int64_t out, int64_t in, const float* dy, const float* w, float* dx);

}  // namespace atlas::train
