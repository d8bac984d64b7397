#include "core/backend/cpu_gemm.h"

#include <Eigen/Core>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "core/tensor/vec16.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace atlas::cpu_gemm {

#if defined(__AVX512F__)

namespace {

// Register tile: kRows rows of A broadcast against kCols = two vectors of B's columns, 24 of the
// 32 vector registers accumulating. Cache blocks: an A panel (kRows x kDepth, 18 KB) stays in L1
// while it meets every B panel of a block; a packed B block (kDepth x kColBlock, 1.2 MB) stays in
// the 2 MB L2 while every A panel passes; kRowBlock bounds the packed A buffer (6 MB).
constexpr int64_t kRows = 12, kCols = 32;
constexpr int64_t kDepth = 384, kColBlock = 768, kRowBlock = 341 * kRows;  // blocks of whole panels

// A thread's packing space, mapped once at its largest size (pages are touched as used) and
// outside the heap: heap blocks between a run's large buffers kept the freed ones from
// coalescing and being reused, which brought back their page faults.
class PackingSpace {
 public:
  static constexpr int64_t kRowsFloats = kRowBlock * kDepth, kColsFloats = kDepth * kColBlock;
  PackingSpace() {
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<float*>(p);
  }
  ~PackingSpace() { munmap(base_, kBytes); }
  PackingSpace(const PackingSpace&) = delete;
  PackingSpace& operator=(const PackingSpace&) = delete;
  float* rows() { return base_; }                 // kRowsFloats (page-aligned)
  float* cols() { return base_ + kRowsFloats; }   // kColsFloats (64-byte aligned)

 private:
  static constexpr size_t kBytes = sizeof(float) * size_t(kRowsFloats + kColsFloats);
  float* base_ = nullptr;
};

using vec16::Vec;
constexpr int64_t kLanes = vec16::kLanes;

// A(i0.., k0..) as panels of kRows rows: panel p holds, for each k, its kRows values of column k
// (rows past m are zero, so the kernel needs no row test inside its loop). Rows stored
// contiguously (activations) go through 16 x 16 register transposes.
void pack_rows(const Operand& a, int64_t i0, int64_t rows, int64_t k0, int64_t kc, float* dst) {
  for (int64_t p = 0; p < rows; p += kRows, dst += kRows * kc) {
    const int64_t live = std::min(kRows, rows - p);
    const float* src[kRows];
    for (int64_t r = 0; r < live; ++r) src[r] = a.data + (i0 + p + r) * a.row_stride + k0 * a.col_stride;
    int64_t k = 0;
    if (a.col_stride == 1)
      for (; k + kLanes <= kc; k += kLanes) {
        Vec m[kLanes];
        vec16::load_transposed(src, live, k, m);
        for (int64_t t = 0; t < kLanes; ++t) std::memcpy(dst + (k + t) * kRows, &m[t], kRows * sizeof(float));
      }
    for (; k < kc; ++k)
      for (int64_t r = 0; r < kRows; ++r) dst[k * kRows + r] = r < live ? src[r][k * a.col_stride] : 0.0f;
  }
}

// B(k0.., j0..) as panels of kCols columns: panel q holds, for each k, its kCols values of row k
// (columns past n are zero). A transposed operand (a weight [out, in], keys [L, d]) has its
// columns contiguous and goes through 16 x 16 register transposes.
void pack_cols(const Operand& b, int64_t k0, int64_t kc, int64_t j0, int64_t cols, float* dst) {
  for (int64_t q = 0; q < cols; q += kCols, dst += kCols * kc) {
    const int64_t live = std::min(kCols, cols - q);
    const float* src = b.data + k0 * b.row_stride + (j0 + q) * b.col_stride;
    if (b.col_stride == 1) {  // rows of B are contiguous: copy them
      for (int64_t k = 0; k < kc; ++k) {
        const float* row = src + k * b.row_stride;
        float* out = dst + k * kCols;
        std::copy(row, row + live, out);
        std::fill(out + live, out + kCols, 0.0f);
      }
      continue;
    }
    for (int64_t half = 0; half < kCols; half += kLanes) {
      const int64_t n = std::clamp<int64_t>(live - half, 0, kLanes);
      const float* col[kLanes];
      for (int64_t j = 0; j < n; ++j) col[j] = src + (half + j) * b.col_stride;
      int64_t k = 0;
      if (b.row_stride == 1)
        for (; k + kLanes <= kc; k += kLanes) {
          Vec m[kLanes];
          vec16::load_transposed(col, n, k, m);
          for (int64_t t = 0; t < kLanes; ++t) vec16::store(dst + (k + t) * kCols + half, m[t]);
        }
      for (; k < kc; ++k)
        for (int64_t j = 0; j < kLanes; ++j) dst[k * kCols + half + j] = j < n ? col[j][k * b.row_stride] : 0.0f;
    }
  }
}

inline __mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? 0 : __mmask16((1u << n) - 1); }

// One kRows x kCols tile of C over kc steps of k. `resume`: C already holds the sums of the
// earlier k (the chain goes on from them); otherwise the chain starts from zero.
void tile(const float* ap, const float* bp, int64_t kc, float* c, int64_t ldc, int64_t rows,
          int64_t cols, bool resume) {
  const __mmask16 m0 = lanes(cols), m1 = lanes(cols - 16);
  __m512 acc[kRows][2];
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    const bool load = resume && r < rows;
    acc[r][0] = load ? _mm512_maskz_loadu_ps(m0, c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_maskz_loadu_ps(m1, c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k, ap += kRows, bp += kCols) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 a = _mm512_set1_ps(ap[r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
  }
}

}  // namespace

bool packed_kernel_available() { return true; }

void multiply(int64_t m, int64_t n, int64_t depth, Operand a, Operand b, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (depth <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  thread_local PackingSpace space;
  for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
    const int64_t rows = std::min(kRowBlock, m - i0), row_panels = (rows + kRows - 1) / kRows;
    for (int64_t k0 = 0; k0 < depth; k0 += kDepth) {
      const int64_t kc = std::min(kDepth, depth - k0);
      float* pa = space.rows();  // row_panels * kRows * kc <= kRowBlock * kDepth
      pack_rows(a, i0, rows, k0, kc, pa);
      for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
        const int64_t cols = std::min(kColBlock, n - j0), col_panels = (cols + kCols - 1) / kCols;
        float* pb = space.cols();  // col_panels * kCols * kc <= kDepth * kColBlock
        pack_cols(b, k0, kc, j0, cols, pb);
        for (int64_t p = 0; p < row_panels; ++p)
          for (int64_t q = 0; q < col_panels; ++q)
            tile(pa + p * kRows * kc, pb + q * kCols * kc, kc, c + (i0 + p * kRows) * ldc + j0 + q * kCols,
                 ldc, std::min(kRows, rows - p * kRows), std::min(kCols, cols - q * kCols), k0 > 0);
      }
    }
  }
}

#else  // no AVX-512: Eigen's product over the same strided views

bool packed_kernel_available() { return false; }

void multiply(int64_t m, int64_t n, int64_t depth, Operand a, Operand b, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strided = Eigen::Map<const Mat, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  using Stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  const Strided A(a.data, m, depth, Stride(a.row_stride, a.col_stride));
  const Strided B(b.data, depth, n, Stride(b.row_stride, b.col_stride));
  Eigen::Map<Mat, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  C.noalias() = A * B;
}

#endif

}  // namespace atlas::cpu_gemm
