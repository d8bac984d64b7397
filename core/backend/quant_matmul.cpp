// y = x W^T with W held in a ggml block type (quant_matmul.h): activation preparation, the panel
// unpackers, the portable kernels and the run-time choice between them and the ISA kernels
// (quant_matmul_avx512.cpp, quant_matmul_avx512_unpack.cpp, quant_matmul_avx2.cpp).
//
// Scheme (llama.cpp's, ggml-cpu's quants and llamafile's tinyBLAS, rewritten here): x is quantized
// once per product, per 32 values, to int8 with a float scale d = amax / 127. Each weight block of
// 32 (a K-quant's sub-block) is read as unsigned bytes u with w = s (u - o) + c: the nibbles of
// Q4_x/Q5_x/Q4_K/Q5_K as they are, Q8_0 offset by o = 128, Q4_0 by 8, Q5_0 by 16, Q6_K by 32
// (with s per 16 values); c is the minimum of Q4_1/Q5_1/Q4_K/Q5_K. The block's share of y[i, col]
//   d_i s (dot(u, q_i) - o sum(q_i)) + c d_i sum(q_i)
// is an exact integer dot (vpdpbusd: u8 x s8 -> s32) started at -o sum(q_i), which the prepared
// input holds per block, then one float multiply-add (two with a minimum). Chosen on purpose,
// against llama.cpp:
//  - the K-quants dot against the same per-32 activation format as the 32-value types rather than
//    Q8_K's one scale per 256: one kernel for every type and an activation error never larger
//    (a per-32 amax is at most the per-256 one); the per-32 float epilogue costs 3 vector ops per
//    8 vpdpbusd, and Q4_K still runs within 10 % of Q8_0 (docs/quantized-models.md);
//  - the activation scale is kept in float32 (Q8_0 rounds it to float16).
// So y is, up to float rounding, the product of the dequantized weights with the dequantized
// activations: |y - x W^T| <= sum_j |W[c, j]| amax_b(j)(x_i) / 254 + rounding.
//
// Tiling: 32 weight columns x 64 blocks (k = 2048) are unpacked once into a panel laid out for
// vpdpbusd (4 bytes of each of 16 columns per 512-bit vector) and reused by every row of x, 4 rows
// x 32 columns of accumulators at a time, the activations' 4 bytes broadcast from memory. Chunks
// of 64 blocks measured faster than 8, 16 or 32 (fewer round trips of y through memory) on the
// Zen 5 development machine. Each element's float operations are the same sequence whatever its
// place in the tile, the number of rows or the column range, so any split of columns over threads
// gives bit-identical results, and a row computed alone equals the same row of a larger product;
// the portable and AVX2 kernels follow the same sequence (exact integer dot, then std::fma), so all
// kernels agree bit for bit. A kernel set may also have a small-m product without a panel
// (AVX-512: quant_matmul_avx512_unpack.cpp) that keeps the same per-element sequence.
// Float weights (F32, F16, BF16) are converted panel by panel to float and multiplied by exact
// float activations, a chain of fused multiply-adds in increasing k: rounding x to bf16 for
// vdpbf16ps would add an error of 2^-9 |x| per element, larger than Q8_0's, to a type chosen for
// its precision.
#include "core/backend/quant_matmul.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/backend/quant_matmul_internal.h"
#include "core/backend/quant_matmul_testing.h"
#include "core/formats/ggml_types.h"
#include "core/formats/safetensors.h"  // half_to_float, bf16_to_float

namespace atlas::quant_matmul {

namespace {

inline uint16_t le16_qm(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t le32_qm(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline float half_at_qm(const uint8_t* p) { return half_to_float(le16_qm(p)); }

// One 32-value block (K-quants: sub-block `sub` of the super-block at b) as u, s, c.
using BlockReader = void (*)(const uint8_t* b, int sub, uint8_t* u, float* s, float* c);

void read_q8_0(const uint8_t* b, int, uint8_t* u, float* s, float* c) {
  const float d = half_at_qm(b);
  for (int e = 0; e < 32; ++e) u[e] = uint8_t(b[2 + e] ^ 0x80);  // int8 q + 128
  s[0] = d;
  c[0] = 0.0f;
}

void read_q4_0(const uint8_t* b, int, uint8_t* u, float* s, float* c) {
  const float d = half_at_qm(b);
  for (int j = 0; j < 16; ++j) {
    u[j] = b[2 + j] & 15;
    u[j + 16] = b[2 + j] >> 4;
  }
  s[0] = d;
  c[0] = 0.0f;
}

void read_q4_1(const uint8_t* b, int, uint8_t* u, float* s, float* c) {
  for (int j = 0; j < 16; ++j) {
    u[j] = b[4 + j] & 15;
    u[j + 16] = b[4 + j] >> 4;
  }
  s[0] = half_at_qm(b);
  c[0] = half_at_qm(b + 2);
}

void five_bits(const uint8_t* high, const uint8_t* qs, uint8_t* u) {
  const uint32_t h = le32_qm(high);
  for (int j = 0; j < 16; ++j) {
    u[j] = uint8_t((qs[j] & 15) | ((h >> j) & 1) << 4);
    u[j + 16] = uint8_t((qs[j] >> 4) | ((h >> (j + 16)) & 1) << 4);
  }
}

void read_q5_0(const uint8_t* b, int, uint8_t* u, float* s, float* c) {
  five_bits(b + 2, b + 6, u);
  s[0] = half_at_qm(b);
  c[0] = 0.0f;
}

void read_q5_1(const uint8_t* b, int, uint8_t* u, float* s, float* c) {
  five_bits(b + 4, b + 8, u);
  s[0] = half_at_qm(b);
  c[0] = half_at_qm(b + 2);
}

void read_q4_k(const uint8_t* b, int sub, uint8_t* u, float* s, float* c) {
  int scale, min;
  k_scale_min(b + 4, sub, scale, min);
  const uint8_t* q = b + 16 + 32 * (sub / 2);
  const int shift = 4 * (sub % 2);
  for (int l = 0; l < 32; ++l) u[l] = (q[l] >> shift) & 15;
  s[0] = half_at_qm(b) * float(scale);
  c[0] = -(half_at_qm(b + 2) * float(min));
}

void read_q5_k(const uint8_t* b, int sub, uint8_t* u, float* s, float* c) {
  int scale, min;
  k_scale_min(b + 4, sub, scale, min);
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48 + 32 * (sub / 2);
  const int shift = 4 * (sub % 2);
  for (int l = 0; l < 32; ++l) u[l] = uint8_t(((q[l] >> shift) & 15) | ((qh[l] >> sub) & 1) << 4);
  s[0] = half_at_qm(b) * float(scale);
  c[0] = -(half_at_qm(b + 2) * float(min));
}

void read_q6_k(const uint8_t* b, int sub, uint8_t* u, float* s, float* c) {
  const int h = sub / 4, g = sub % 4;
  const uint8_t* lo = b + 64 * h + 32 * (g % 2);
  const uint8_t* hi = b + 128 + 32 * h;
  const int lo_shift = 4 * (g / 2), hi_shift = 2 * g;
  for (int l = 0; l < 32; ++l)
    u[l] = uint8_t(((lo[l] >> lo_shift) & 15) | ((hi[l] >> hi_shift) & 3) << 4);
  const float d = half_at_qm(b + 208);
  for (int half = 0; half < 2; ++half) {
    const int8_t sc = int8_t(b[192 + 8 * h + 2 * g + half]);
    s[half] = d * float(sc);
    c[half] = 0.0f;
  }
}

template <BlockReader Read, int kSubBlocks, int kHalves>
void unpack_blocks(const PackedMatrix& w, int64_t col0, int cols, int64_t b0, int kb, IntPanel& p) {
  const int64_t block_bytes = ggml_type_info(w.type).block_bytes;
  p.halves = kHalves;
  p.wide = Read == read_q8_0;
  p.has_min = Read == read_q4_1 || Read == read_q5_1 || Read == read_q4_k || Read == read_q5_k;
  alignas(64) uint8_t u[32];
  float s[2], c[2];
  for (int col = 0; col < kPanelCols; ++col) {
    for (int bb = 0; bb < kb; ++bb) {
      if (col < cols) {
        const int64_t b = b0 + bb;
        Read(w.row(col0 + col) + (b / kSubBlocks) * block_bytes, int(b % kSubBlocks), u, s, c);
      } else {
        std::memset(u, 0, sizeof u);
        s[0] = s[1] = c[0] = c[1] = 0.0f;
      }
      for (int j = 0; j < 8; ++j) std::memcpy(p.u + ((bb * 8 + j) * kPanelCols + col) * 4, u + 4 * j, 4);
      for (int h = 0; h < kHalves; ++h) {
        p.s[(bb * kHalves + h) * kPanelCols + col] = s[h];
        p.c[(bb * kHalves + h) * kPanelCols + col] = c[h];
      }
    }
  }
}

template <int kType>
float float_at(const uint8_t* p) {
  if constexpr (kType == kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  } else if constexpr (kType == kF16) {
    return half_at_qm(p);
  } else {
    return bf16_to_float(le16_qm(p));
  }
}

template <int kType>
void unpack_floats(const PackedMatrix& w, int64_t col0, int cols, int64_t k0, int kc, FloatPanel& p) {
  constexpr int64_t bytes = kType == kF32 ? 4 : 2;
  for (int col = 0; col < kPanelCols; ++col) {
    const uint8_t* row = col < cols ? w.row(col0 + col) + k0 * bytes : nullptr;
    for (int kk = 0; kk < kc; ++kk) p.w[kk * kPanelCols + col] = row ? float_at<kType>(row + kk * bytes) : 0.0f;
  }
}

void portable_int_kernel(const IntPanel& p, int kb, const PreparedInput::Impl& x, int64_t b0,
                         float* y, int64_t ldy, int cols, bool first) {
  const int64_t nb = x.k / 32;
  for (int64_t i = 0; i < x.m; ++i) {
    const int8_t* q = x.q.data() + i * x.k;
    for (int col = 0; col < cols; ++col) {
      float acc = first ? 0.0f : y[i * ldy + col];
      for (int bb = 0; bb < kb; ++bb) {
        const int64_t b = b0 + bb;
        const float d = x.d[size_t(i * nb + b)];
        int32_t dot[2] = {0, 0};
        for (int j = 0; j < 8; ++j)
          for (int t = 0; t < 4; ++t)
            dot[j / 4] += int32_t(p.u[((bb * 8 + j) * kPanelCols + col) * 4 + t]) * q[b * 32 + 4 * j + t];
        if (p.halves == 1) {
          const int at = bb * kPanelCols + col;
          acc = std::fma(float(x.bias[size_t(i * nb + b)] + dot[0] + dot[1]), p.s[at] * d, acc);
          if (p.has_min) acc = std::fma(p.c[at], x.dsum32[size_t(i * nb + b)], acc);
        } else {
          for (int h = 0; h < 2; ++h) {
            const int at = (bb * 2 + h) * kPanelCols + col;
            acc = std::fma(float(x.bias[size_t(i * nb * 2 + 2 * b + h)] + dot[h]), p.s[at] * d, acc);
          }
        }
      }
      y[i * ldy + col] = acc;
    }
  }
}

void portable_float_kernel(const FloatPanel& p, int kc, const PreparedInput::Impl& x, int64_t k0,
                           float* y, int64_t ldy, int cols, bool first) {
  for (int64_t i = 0; i < x.m; ++i) {
    const float* xi = x.xf.data() + i * x.k + k0;
    for (int col = 0; col < cols; ++col) {
      float acc = first ? 0.0f : y[i * ldy + col];
      for (int kk = 0; kk < kc; ++kk) acc = std::fma(xi[kk], p.w[kk * kPanelCols + col], acc);
      y[i * ldy + col] = acc;
    }
  }
}

IntUnpacker no_int_unpacker(uint32_t) { return nullptr; }
FloatUnpacker no_float_unpacker(uint32_t) { return nullptr; }

const KernelSet kPortableKernels = {"portable", portable_int_kernel, portable_float_kernel,
                                    no_int_unpacker, no_float_unpacker, nullptr};

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

const KernelSet* kernel_set_named(const std::string& name) {
  if (name == "avx512-vnni") return cpu_has_avx512_vnni() ? &kAvx512Kernels : nullptr;
  if (name == "avx2") return cpu_has_avx2() ? &kAvx2Kernels : nullptr;
  if (name == "portable") return &kPortableKernels;
  return nullptr;
}

std::atomic<const KernelSet*> g_forced{nullptr};

const KernelSet& active_kernels() {
  if (const KernelSet* forced = g_forced.load(std::memory_order_relaxed)) return *forced;
  static const KernelSet* detected = cpu_has_avx512_vnni() ? &kAvx512Kernels
                                     : cpu_has_avx2()      ? &kAvx2Kernels
                                                           : &kPortableKernels;
  return *detected;
}

std::string type_name(uint32_t t) {
  const char* name = ggml_type_info(t).name;
  return name ? name : "type " + std::to_string(t);
}

// x's 32 values at src quantized to int8 with d = amax / 127 (float, unlike Q8_0's float16),
// rounding to nearest by the 1.5 2^23 trick: plain float arithmetic the compiler vectorizes
// (std::round is a libm call that took a sixth of a 512-row product). Every kernel reads the
// same prepared input, so they agree whatever the compiler contracts here. A block holding a NaN or infinity gets d = NaN, so the products it
// enters are NaN, not garbage.
void quantize_block(const float* src, int8_t* q, float& d, int32_t sum16[2]) {
  float amax = 0.0f;
  bool finite = true;
  for (int e = 0; e < 32; ++e) {
    const float a = std::fabs(src[e]);
    finite &= a <= std::numeric_limits<float>::max();  // false for NaN too
    amax = a > amax ? a : amax;
  }
  if (!finite) {
    std::memset(q, 0, 32);
    d = std::numeric_limits<float>::quiet_NaN();
    sum16[0] = sum16[1] = 0;
    return;
  }
  d = amax / 127.0f;
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  constexpr float kMagic = 12582912.0f;  // 1.5 2^23: v + kMagic - kMagic rounds v to an integer
  int32_t sums[2] = {0, 0};
  for (int e = 0; e < 32; ++e) {
    float r = (src[e] * id + kMagic) - kMagic;  // |src id| <= 127 (1 + 2^-23)
    r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
    q[e] = int8_t(r);
    sums[e / 16] += q[e];
  }
  sum16[0] = sums[0];
  sum16[1] = sums[1];
}

}  // namespace

int weight_offset(uint32_t type) {
  switch (type) {
    case kQ8_0: return 128;
    case kQ4_0: return 8;
    case kQ5_0: return 16;
    case kQ6_K: return 32;
    default: return 0;
  }
}

IntUnpacker portable_int_unpacker(uint32_t type) {
  switch (type) {
    case kQ8_0: return unpack_blocks<read_q8_0, 1, 1>;
    case kQ4_0: return unpack_blocks<read_q4_0, 1, 1>;
    case kQ4_1: return unpack_blocks<read_q4_1, 1, 1>;
    case kQ5_0: return unpack_blocks<read_q5_0, 1, 1>;
    case kQ5_1: return unpack_blocks<read_q5_1, 1, 1>;
    case kQ4_K: return unpack_blocks<read_q4_k, 8, 1>;
    case kQ5_K: return unpack_blocks<read_q5_k, 8, 1>;
    case kQ6_K: return unpack_blocks<read_q6_k, 8, 2>;
    default: return nullptr;
  }
}

FloatUnpacker portable_float_unpacker(uint32_t type) {
  switch (type) {
    case kF32: return unpack_floats<kF32>;
    case kF16: return unpack_floats<kF16>;
    case kBF16: return unpack_floats<kBF16>;
    default: return nullptr;
  }
}

bool supports(uint32_t t) {
  return is_float_type(t) || portable_int_unpacker(t) != nullptr;
}

PreparedInput::PreparedInput(uint32_t weight_type, const float* x, int64_t m, int64_t k, int64_t ldx)
    : impl_(std::make_unique<Impl>()) {
  if (!supports(weight_type))
    throw std::invalid_argument("quantized product: weights of type " + type_name(weight_type) +
                                " are not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                                "Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  if (m < 0 || k < 0 || ldx < k)
    throw std::invalid_argument("quantized product: input [" + std::to_string(m) + ", " +
                                std::to_string(k) + "] with row stride " + std::to_string(ldx));
  Impl& p = *impl_;
  p.type = weight_type;
  p.m = m;
  p.k = k;
  if (is_float_type(weight_type)) {
    p.xf.resize(size_t(m * k));
    for (int64_t i = 0; i < m; ++i) std::memcpy(p.xf.data() + i * k, x + i * ldx, size_t(k) * 4);
    return;
  }
  if (k % 32 != 0)
    throw std::invalid_argument("quantized product: input depth " + std::to_string(k) +
                                " is not a whole number of " + type_name(weight_type) + " blocks");
  const int64_t nb = k / 32;
  p.q.resize(size_t(m * k));
  p.d.resize(size_t(m * nb));
  p.dsum32.resize(size_t(m * nb));
  const int offset = weight_offset(weight_type);
  const bool per_half = weight_type == kQ6_K;
  p.bias.resize(size_t(m * nb * (per_half ? 2 : 1)));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t b = 0; b < nb; ++b) {
      const size_t at = size_t(i * nb + b);
      int32_t sums[2];
      quantize_block(x + i * ldx + 32 * b, p.q.data() + i * k + 32 * b, p.d[at], sums);
      p.dsum32[at] = p.d[at] * float(sums[0] + sums[1]);
      if (per_half) {
        p.bias[2 * at] = -offset * sums[0];
        p.bias[2 * at + 1] = -offset * sums[1];
      } else {
        p.bias[at] = -offset * (sums[0] + sums[1]);
      }
    }
  }
}

PreparedInput::~PreparedInput() = default;
PreparedInput::PreparedInput(PreparedInput&&) noexcept = default;
PreparedInput& PreparedInput::operator=(PreparedInput&&) noexcept = default;
int64_t PreparedInput::rows() const { return impl_->m; }
int64_t PreparedInput::depth() const { return impl_->k; }

void multiply(const PackedMatrix& w, const PreparedInput& x, int64_t c0, int64_t n, float* y,
              int64_t ldy) {
  const PreparedInput::Impl& in = x.impl();
  if (w.type != in.type)
    throw std::invalid_argument("quantized product: input prepared for " + type_name(in.type) +
                                " weights, multiplied by " + type_name(w.type));
  const GgmlTypeInfo info = ggml_type_info(w.type);
  if (w.cols != in.k || w.cols % info.block_elems != 0 || w.row_bytes * info.block_elems != w.cols * info.block_bytes)
    throw std::invalid_argument("quantized product: weight [" + std::to_string(w.rows) + ", " +
                                std::to_string(w.cols) + "] of " + type_name(w.type) +
                                " against input depth " + std::to_string(in.k));
  if (c0 < 0 || n < 0 || c0 + n > w.rows)
    throw std::invalid_argument("quantized product: columns [" + std::to_string(c0) + ", " +
                                std::to_string(c0 + n) + ") of a weight with " +
                                std::to_string(w.rows) + " rows");
  if (in.m == 0 || n == 0) return;
  if (in.k == 0) {
    for (int64_t i = 0; i < in.m; ++i) std::fill(y + i * ldy, y + i * ldy + n, 0.0f);
    return;
  }
  const KernelSet& ks = active_kernels();
  if (ks.small_product && ks.small_product(w, in, c0, n, y, ldy)) return;
  if (is_float_type(w.type)) {
    FloatUnpacker unpack = ks.float_unpacker(w.type);
    if (!unpack) unpack = portable_float_unpacker(w.type);
    auto panel = std::make_unique<FloatPanel>();
    for (int64_t p = 0; p < n; p += kPanelCols) {
      const int cols = int(std::min<int64_t>(kPanelCols, n - p));
      for (int64_t k0 = 0; k0 < in.k; k0 += kFloatChunk) {
        const int kc = int(std::min<int64_t>(kFloatChunk, in.k - k0));
        unpack(w, c0 + p, cols, k0, kc, *panel);
        ks.float_kernel(*panel, kc, in, k0, y + p, ldy, cols, k0 == 0);
      }
    }
    return;
  }
  IntUnpacker unpack = ks.int_unpacker(w.type);
  if (!unpack) unpack = portable_int_unpacker(w.type);
  auto panel = std::make_unique<IntPanel>();
  const int64_t nb = in.k / 32;
  for (int64_t p = 0; p < n; p += kPanelCols) {
    const int cols = int(std::min<int64_t>(kPanelCols, n - p));
    for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
      const int kb = int(std::min<int64_t>(kChunkBlocks, nb - b0));
      unpack(w, c0 + p, cols, b0, kb, *panel);
      ks.int_kernel(*panel, kb, in, b0, y + p, ldy, cols, b0 == 0);
    }
  }
}

const char* kernel_name(uint32_t) { return active_kernels().name; }

void force_kernel_for_testing(const char* name) {
  if (!name || !*name) {
    g_forced.store(nullptr);
    return;
  }
  const KernelSet* ks = kernel_set_named(name);
  if (!ks) throw std::invalid_argument(std::string("quantized product: kernel ") + name + " is not available here");
  g_forced.store(ks);
}

bool kernel_available_for_testing(const char* name) { return kernel_set_named(name) != nullptr; }

}  // namespace atlas::quant_matmul
