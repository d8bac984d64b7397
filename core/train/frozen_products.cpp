// The frozen tape's products on the engine's packed kernel (frozen_products.h).
#include "core/train/frozen_products.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cpu_gemm.h"

namespace atlas::train {
namespace {

constexpr int64_t kFrozenPackedMinRows = 24;  // as the CPU backend: two of the kernel's row tiles

// Calls columns(c0, n) over blocks of [0, cols), one per thread when the product is big enough.
template <class F>
void over_column_blocks(int64_t m, int64_t depth, int64_t cols, F columns) {
  const int threads = cpu_threads();
  if (threads > 1 && m * depth * cols >= (int64_t{1} << 22)) {
    const int64_t block = (cols + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t c0 = t * block, n = std::min(block, cols - c0);
      if (n > 0) columns(c0, n);
    }
  } else {
    columns(0, cols);
  }
}

}  // namespace

bool frozen_products_apply(int64_t m) { return m >= kFrozenPackedMinRows && cpu_gemm::packed_kernel_available(); }

void frozen_product_nt(int64_t m, int64_t in, int64_t out, const float* x, const float* w, float* y) {
  over_column_blocks(m, in, out, [&](int64_t c0, int64_t n) {
    cpu_gemm::multiply(m, n, in, {x, in, 1}, {w + c0 * in, 1, in}, y + c0, out);
  });
}

void frozen_product_add_nn(int64_t m, int64_t out, int64_t in, const float* dy, const float* w, float* dx) {
  std::vector<float> product(size_t(m * in));
  over_column_blocks(m, out, in, [&](int64_t c0, int64_t n) {
    cpu_gemm::multiply(m, n, out, {dy, out, 1}, {w + c0, in, 1}, product.data() + c0, in);
  });
  for (size_t i = 0; i < product.size(); ++i) dx[i] += product[i];
}

}  // namespace atlas::train
