// The CPU product with weights in their file's encoding (core/backend/quant_matmul.h) against an
// independent oracle: the weights dequantized by dequantize_ggml (bit-exact with llama.cpp) and a
// double-precision loop over the float activations.
//
// The bound asserted per element. Block types quantize x per 32 values to d q with d = amax / 127
// and |x - d q| <= d / 2 = amax / 254; the product is then, up to float rounding, sum_j w_j d q_j,
// so |y - y_ref| <= sum_j |w_j| amax_b(j) / 254 + rounding. The rounding of the per-block float
// epilogue (s d, two fused multiply-adds per 32 or 16 values, the offset u = w / s + 128, 8, 16
// or 32 cancelled by c sum q) is a few ulps of terms no larger than 4 max_b|w| |x| per value,
// accumulated over the k / 16 blocks at most: (k / 16 + 8) 2^-21 sum_j max_b|w| |x_j| covers it.
// Float weights (F32, F16, BF16) multiply exact float x: |y - y_ref| <= (k + 2) 2^-24 sum |w x|.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/backend/quant_matmul.h"
#include "core/backend/quant_matmul_testing.h"
#include "core/formats/ggml_types.h"
#include "core/tensor/random.h"

using namespace atlas;

namespace {

enum : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
                  Q4_K = 12, Q5_K = 13, Q6_K = 14, BF16 = 30 };
const uint32_t kAllTypes[] = {F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K};

bool is_float(uint32_t t) { return t == F32 || t == F16 || t == BF16; }

// A finite float16 of magnitude 2^(e - 15) for e in [lo, hi], random sign and mantissa.
uint16_t random_half(Rng& rng, int lo, int hi) {
  const uint64_t r = rng.next();
  const int e = lo + int(r % uint64_t(hi - lo + 1));
  return uint16_t(((r >> 8) & 1) << 15 | e << 10 | ((r >> 16) & 1023));
}

void store_le16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v & 255);
  p[1] = uint8_t(v >> 8);
}

// `rows` rows of `k` values: random quants, random finite float16 scales (minimums).
std::vector<uint8_t> random_quant_weights(uint32_t type, int64_t rows, int64_t k, uint64_t seed) {
  const GgmlTypeInfo info = ggml_type_info(type);
  const int64_t blocks = rows * k / info.block_elems;
  std::vector<uint8_t> bytes(size_t(blocks * info.block_bytes));
  Rng rng(seed);
  for (uint8_t& b : bytes) b = uint8_t(rng.next() >> 56);
  for (int64_t i = 0; i < blocks; ++i) {
    uint8_t* b = bytes.data() + i * info.block_bytes;
    switch (type) {
      case F32: {
        const float f = float(rng.normal());
        std::memcpy(b, &f, 4);  // little-endian host, as the engine assumes
        break;
      }
      case F16: store_le16(b, random_half(rng, 10, 17)); break;
      case BF16: store_le16(b, uint16_t((rng.next() & 1) << 15 | (122 + rng.next() % 8) << 7 | (rng.next() & 127))); break;
      case Q8_0: case Q4_0: case Q5_0: store_le16(b, random_half(rng, 5, 12)); break;
      case Q4_1: case Q5_1: case Q4_K: case Q5_K:
        store_le16(b, random_half(rng, 5, 12));
        store_le16(b + 2, random_half(rng, 5, 12));
        break;
      case Q6_K: store_le16(b + 208, random_half(rng, 5, 12)); break;
      default: break;
    }
  }
  return bytes;
}

PackedMatrix packed(uint32_t type, const std::vector<uint8_t>& bytes, int64_t rows, int64_t k) {
  const GgmlTypeInfo info = ggml_type_info(type);
  PackedMatrix w;
  w.type = type;
  w.rows = rows;
  w.cols = k;
  w.row_bytes = k / info.block_elems * info.block_bytes;
  w.data = bytes.data();
  return w;
}

std::vector<float> random_input(int64_t m, int64_t ldx, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(size_t(m * ldx));
  for (size_t i = 0; i < x.size(); ++i) {
    // Blocks of very different magnitudes and an all-zero one: per-block scales matter.
    const size_t block = i / 32;
    const double scale = block % 7 == 3 ? 0.0 : block % 5 == 1 ? 100.0 : block % 3 == 2 ? 1e-3 : 1.0;
    x[i] = float(rng.normal() * scale);
  }
  return x;
}

struct Oracle {
  std::vector<double> y, bound;  // [m, n]
};

// Naive loops over the dequantized weights, and the per-element bound of the header comment.
Oracle oracle(uint32_t type, const PackedMatrix& w, const std::vector<float>& x, int64_t m,
              int64_t ldx, int64_t c0, int64_t n) {
  const int64_t k = w.cols;
  const int64_t block_elems = ggml_type_info(type).block_elems;
  std::vector<float> wf(static_cast<size_t>(k));
  Oracle o{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m * n))};
  for (int64_t c = 0; c < n; ++c) {
    dequantize_ggml(type, w.row(c0 + c), k / block_elems, wf.data());
    for (int64_t i = 0; i < m; ++i) {
      const float* xi = x.data() + i * ldx;
      double sum = 0, quant_err = 0, magnitude = 0;
      for (int64_t j0 = 0; j0 < k; j0 += 32) {
        double amax = 0, wmax = 0;
        for (int64_t j = j0; j < std::min(k, j0 + 32); ++j) {
          amax = std::max(amax, std::fabs(double(xi[j])));
          wmax = std::max(wmax, std::fabs(double(wf[size_t(j)])));
        }
        for (int64_t j = j0; j < std::min(k, j0 + 32); ++j) {
          const double wj = wf[size_t(j)], xj = xi[j];
          sum += wj * xj;
          if (is_float(type)) {
            magnitude += std::fabs(wj * xj);
          } else {
            quant_err += std::fabs(wj) * amax / 254.0 * (1 + 1e-6);
            magnitude += wmax * std::fabs(xj);
          }
        }
      }
      const double rounding = is_float(type) ? double(k + 2) * 0x1p-24 * magnitude
                                             : double(k / 16 + 8) * 0x1p-21 * magnitude;
      o.y[size_t(i * n + c)] = sum;
      o.bound[size_t(i * n + c)] = quant_err + rounding + 1e-30;
    }
  }
  return o;
}

std::vector<int64_t> depths(uint32_t type) {
  if (is_float(type)) return {1, 7, 100, 300};
  // One block, several, and more than a panel chunk (64 blocks of 32).
  if (type == Q4_K || type == Q5_K || type == Q6_K) return {256, 768, 2304};
  return {32, 96, 2240};
}

std::vector<float> run(const PackedMatrix& w, const quant_matmul::PreparedInput& px, int64_t c0,
                       int64_t n, int64_t ldy) {
  std::vector<float> y(size_t(px.rows() * ldy), -7.0f);
  quant_matmul::multiply(w, px, c0, n, y.data(), ldy);
  return y;
}

const char* const kKernels[] = {"avx512-vnni", "avx2", "portable"};

}  // namespace

TEST_CASE("quantized products stay within the activation-quantization bound of a double loop", "[quant]") {
  for (uint32_t type : kAllTypes) {
    for (int64_t k : depths(type)) {
      for (int64_t m : {1, 3, 17, 130}) {
        for (int64_t n : {1, 5, 33}) {
          INFO(ggml_type_info(type).name << " m " << m << " n " << n << " k " << k << " kernel "
                                         << quant_matmul::kernel_name(type));
          const int64_t rows = n + 5, c0 = 3, ldx = k + 3, ldy = n + 2;
          const std::vector<uint8_t> bytes = random_quant_weights(type, rows, k, 1000 * type + k + n);
          const PackedMatrix w = packed(type, bytes, rows, k);
          const std::vector<float> x = random_input(m, ldx, 7 * m + k);
          const quant_matmul::PreparedInput px(type, x.data(), m, k, ldx);
          const std::vector<float> y = run(w, px, c0, n, ldy);
          const Oracle o = oracle(type, w, x, m, ldx, c0, n);
          int64_t outside = 0, touched = 0;
          double worst = 0;
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t c = 0; c < n; ++c) {
              const double err = std::fabs(double(y[size_t(i * ldy + c)]) - o.y[size_t(i * n + c)]);
              outside += !(err <= o.bound[size_t(i * n + c)]);
              worst = std::max(worst, err / o.bound[size_t(i * n + c)]);
            }
            for (int64_t c = n; c < ldy; ++c) touched += y[size_t(i * ldy + c)] != -7.0f;
          }
          INFO("worst error / bound " << worst);
          CHECK(outside == 0);
          CHECK(touched == 0);
        }
      }
    }
  }
}

TEST_CASE("quantized products give bit-identical columns whatever the column split", "[quant]") {
  const int64_t m = 9, rows = 70;
  for (uint32_t type : kAllTypes) {
    const int64_t k = depths(type).back();
    INFO(ggml_type_info(type).name);
    const std::vector<uint8_t> bytes = random_quant_weights(type, rows, k, 77 + type);
    const PackedMatrix w = packed(type, bytes, rows, k);
    const std::vector<float> x = random_input(m, k, 5 + type);
    const quant_matmul::PreparedInput px(type, x.data(), m, k, k);
    const std::vector<float> whole = run(w, px, 0, rows, rows);
    for (int64_t split : {1, 13, 32, 35, 69}) {
      std::vector<float> parts(size_t(m * rows), -7.0f);
      quant_matmul::multiply(w, px, 0, split, parts.data(), rows);
      quant_matmul::multiply(w, px, split, rows - split, parts.data() + split, rows);
      CHECK(std::memcmp(parts.data(), whole.data(), whole.size() * 4) == 0);
    }
    // A single row equals the same row of a larger product too.
    const quant_matmul::PreparedInput one(type, x.data() + 4 * k, 1, k, k);
    const std::vector<float> row = run(w, one, 0, rows, rows);
    CHECK(std::memcmp(row.data(), whole.data() + 4 * rows, size_t(rows) * 4) == 0);
  }
}

TEST_CASE("every kernel this CPU runs gives the portable kernel's results bit for bit", "[quant]") {
  const int64_t m = 21, n = 37;
  for (uint32_t type : kAllTypes) {
    const int64_t k = depths(type).back();
    INFO(ggml_type_info(type).name);
    const std::vector<uint8_t> bytes = random_quant_weights(type, n, k, 99 + type);
    const PackedMatrix w = packed(type, bytes, n, k);
    const std::vector<float> x = random_input(m, k, 3 + type);
    const quant_matmul::PreparedInput px(type, x.data(), m, k, k);
    quant_matmul::force_kernel_for_testing("portable");
    const std::vector<float> reference = run(w, px, 0, n, n);
    const Oracle o = oracle(type, w, x, m, k, 0, n);
    for (const char* kernel : kKernels) {
      if (!quant_matmul::kernel_available_for_testing(kernel)) {
        WARN("kernel " << kernel << " not available on this CPU");
        continue;
      }
      INFO("kernel " << kernel);
      quant_matmul::force_kernel_for_testing(kernel);
      CHECK(std::string(quant_matmul::kernel_name(type)) == kernel);
      const std::vector<float> y = run(w, px, 0, n, n);
      int64_t outside = 0;
      for (size_t e = 0; e < y.size(); ++e) outside += !(std::fabs(double(y[e]) - o.y[e]) <= o.bound[e]);
      CHECK(outside == 0);
      CHECK(std::memcmp(y.data(), reference.data(), y.size() * 4) == 0);
    }
    quant_matmul::force_kernel_for_testing(nullptr);
  }
}

TEST_CASE("quantized products refuse mismatched types and shapes with a message", "[quant]") {
  std::vector<float> x(64, 1.0f);
  CHECK_THROWS_WITH(quant_matmul::PreparedInput(10, x.data(), 1, 64, 64), Catch::Contains("Q2_K"));
  CHECK_THROWS_WITH(quant_matmul::PreparedInput(Q8_0, x.data(), 1, 40, 40), Catch::Contains("40"));
  const std::vector<uint8_t> bytes = random_quant_weights(Q4_0, 4, 64, 1);
  const PackedMatrix w = packed(Q4_0, bytes, 4, 64);
  const quant_matmul::PreparedInput px(Q8_0, x.data(), 1, 64, 64);
  std::vector<float> y(4);
  CHECK_THROWS_WITH(quant_matmul::multiply(w, px, 0, 4, y.data(), 4), Catch::Contains("Q4_0"));
  const quant_matmul::PreparedInput p4(Q4_0, x.data(), 1, 64, 64);
  CHECK_THROWS(quant_matmul::multiply(w, p4, 2, 3, y.data(), 4));
  CHECK(quant_matmul::supports(Q6_K));
  CHECK_FALSE(quant_matmul::supports(10));
}

TEST_CASE("a non-finite activation makes its products NaN rather than garbage", "[quant]") {
  std::vector<float> x(64, 0.5f);
  x[40] = std::numeric_limits<float>::infinity();
  const std::vector<uint8_t> bytes = random_quant_weights(Q8_0, 2, 64, 3);
  const PackedMatrix w = packed(Q8_0, bytes, 2, 64);
  const quant_matmul::PreparedInput px(Q8_0, x.data(), 1, 64, 64);
  std::vector<float> y(2);
  quant_matmul::multiply(w, px, 0, 2, y.data(), 2);
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[1]));
}

// A few rows (a keystroke) take a path without a panel where the CPU has one (AVX-512: blocks
// dotted where they lie, float weights converted 16 x 16 in registers); it must give the panel
// path's results bit for bit, for every row count up to where the panel path takes over and on
// depths of whole super-blocks (the small path's unit) with a column range not starting at 0.
TEST_CASE("products of a few rows equal the same rows of a larger product bit for bit", "[quant]") {
  const int64_t big = 13, rows = 45, c0 = 3, n = 37;
  for (uint32_t type : kAllTypes) {
    for (int64_t k : {256, 2560}) {
      INFO(ggml_type_info(type).name << " k " << k);
      const std::vector<uint8_t> bytes = random_quant_weights(type, rows, k, 11 + type + k);
      const PackedMatrix w = packed(type, bytes, rows, k);
      const std::vector<float> x = random_input(big, k + 5, 13 + type);
      const quant_matmul::PreparedInput all(type, x.data(), big, k, k + 5);
      const std::vector<float> whole = run(w, all, c0, n, n);
      for (int64_t m : {1, 2, 3, 4, 5, 8}) {
        for (int64_t first : {int64_t(0), big - m}) {
          INFO("rows " << first << " + " << m);
          const quant_matmul::PreparedInput few(type, x.data() + first * (k + 5), m, k, k + 5);
          const std::vector<float> y = run(w, few, c0, n, n);
          CHECK(std::memcmp(y.data(), whole.data() + first * n, size_t(m * n) * 4) == 0);
        }
      }
    }
  }
}
