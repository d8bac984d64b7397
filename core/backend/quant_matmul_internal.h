#pragma once
// Shared between quant_matmul.cpp (dispatch, preparation, portable kernels) and the per-ISA
// kernel files: the prepared activations and the panel a block of weight columns is unpacked to.
// Not part of the interface (core/backend/quant_matmul.h).
#include <cstdint>
#include <vector>

#include "core/formats/ggml_types.h"
#include "core/backend/quant_matmul.h"

namespace atlas::quant_matmul {

// ggml's type ids (core/formats/ggml_types.h) under the names the kernels use.
enum : uint32_t {
  kF32 = ggml_type::F32, kF16 = ggml_type::F16, kQ4_0 = ggml_type::Q4_0, kQ4_1 = ggml_type::Q4_1,
  kQ5_0 = ggml_type::Q5_0, kQ5_1 = ggml_type::Q5_1, kQ8_0 = ggml_type::Q8_0,
  kQ4_K = ggml_type::Q4_K, kQ5_K = ggml_type::Q5_K, kQ6_K = ggml_type::Q6_K, kBF16 = ggml_type::BF16
};

inline bool is_float_type(uint32_t t) { return ggml_type::is_float(t); }

// The 6-bit (scale, min) pair of sub-block `sub` from Q4_K/Q5_K's 12 packed bytes: sub-blocks 0-3
// use the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 take their low 4 bits from the
// nibbles of bytes 8-11 and their top 2 bits from the spare high bits of bytes 0-7.
inline void k_scale_min(const uint8_t* p, int sub, int& scale, int& min) {
  if (sub < 4) {
    scale = p[sub] & 63;
    min = p[sub + 4] & 63;
  } else {
    scale = (p[sub + 4] & 15) | ((p[sub - 4] >> 6) << 4);
    min = (p[sub + 4] >> 4) | ((p[sub] >> 6) << 4);
  }
}

struct PreparedInput::Impl {
  uint32_t type = 0;
  int64_t m = 0, k = 0;
  // Float weight types: x itself.
  std::vector<float> xf;  // [m, k]
  // Block types: x quantized per 32 values, x[i, 32b + e] ~ d[i, b] q[i, 32b + e].
  std::vector<int8_t> q;        // [m, k]
  std::vector<float> d;         // [m, k / 32]
  std::vector<float> dsum32;    // [m, k / 32]  d * (sum of q over the block), for minimums
  // The weight type's offset o (u = w / s + o: Q8_0 128, Q4_0 8, Q5_0 16, Q6_K 32, else 0) times
  // the block's sum of q, negated: the integer dot starts there, so it is the dot of w / s.
  std::vector<int32_t> bias;    // [m, k / 32] (per half block, [m, k / 16], for Q6_K)
};

// Columns per panel (two 16-lane vectors) and blocks of 32 per panel chunk (one K super-block).
constexpr int kPanelCols = 32;
constexpr int kChunkBlocks = 64;
constexpr int kFloatChunk = 256;  // depth of a float panel chunk

// kPanelCols weight columns x kb blocks of 32 values, as unsigned bytes u with
//   w[col, 32b + e] = s[b][col] (u - o) + c[b][col]   (per half block of 16 for Q6_K)
// (o the type's offset, c its minimum, zero for types without one) so a block's contribution to
// y[i, col] is d[i, b] (s (dot(u, q_i) - o sum(q_i)) + c sum(q_i)) = s d (dot + bias) + c dsum.
// u is stored for vpdpbusd: element ((b * 8 + j) * 32 + col) * 4 + t is value 4 j + t of
// column col's block b. Columns past the product's end are zero (s = c = 0).
struct IntPanel {
  alignas(64) uint8_t u[kChunkBlocks * 32 * kPanelCols];
  alignas(64) float s[kChunkBlocks * 2 * kPanelCols];
  alignas(64) float c[kChunkBlocks * 2 * kPanelCols];
  int halves = 1;     // 2 for Q6_K: a scale per 16 values
  bool wide = false;  // u may exceed 127 (Q8_0): AVX2's maddubs would saturate
  bool has_min = false;  // c is not zero (Q4_1, Q5_1, Q4_K, Q5_K)
};

// Float weights as floats, element kk * 32 + col = W[col, k0 + kk].
struct FloatPanel {
  alignas(64) float w[kFloatChunk * kPanelCols];
};

// Adds the contribution of blocks [b0, b0 + kb) to y[i, col] for i < x.m, col < cols (starting
// from zero when `first`). Every kernel computes each element the same way: per block, the exact
// integer bias + dot, then acc = fma(float(bias + dot), s * d, acc) and, for types with a
// minimum, acc = fma(c, dsum, acc) (per half block for Q6_K).
using IntKernel = void (*)(const IntPanel& p, int kb, const PreparedInput::Impl& x, int64_t b0,
                           float* y, int64_t ldy, int cols, bool first);
// y[i, col] = fma chain over kk < kc of x[i, k0 + kk] W[col, k0 + kk], from y (or zero if first).
using FloatKernel = void (*)(const FloatPanel& p, int kc, const PreparedInput::Impl& x, int64_t k0,
                             float* y, int64_t ldy, int cols, bool first);
// Unpacks columns [col0, col0 + cols) of w, blocks [b0, b0 + kb), into p (zero past cols).
using IntUnpacker = void (*)(const PackedMatrix& w, int64_t col0, int cols, int64_t b0, int kb,
                             IntPanel& p);
using FloatUnpacker = void (*)(const PackedMatrix& w, int64_t col0, int cols, int64_t k0, int kc,
                               FloatPanel& p);

// The whole product y[i, col] for col in [c0, c0 + n) without a panel, for a few rows (a
// keystroke): blocks are dotted where they lie. Each element gets exactly the panel kernels'
// float sequence, so the results are bit-identical to theirs. Returns false (doing nothing)
// where it does not apply (type, depth or row count); the panel path runs then.
using SmallProduct = bool (*)(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t c0,
                              int64_t n, float* y, int64_t ldy);

struct KernelSet {
  const char* name;
  IntKernel int_kernel;
  FloatKernel float_kernel;
  IntUnpacker (*int_unpacker)(uint32_t type);      // nullptr result: use the portable one
  FloatUnpacker (*float_unpacker)(uint32_t type);
  SmallProduct small_product;                      // nullptr: always the panel path
};

// The offset o of a weight type (see IntPanel).
int weight_offset(uint32_t type);

// Portable unpackers (quant_matmul.cpp), used by every kernel set that has no faster one.
IntUnpacker portable_int_unpacker(uint32_t type);
FloatUnpacker portable_float_unpacker(uint32_t type);

// The AVX-512 unpackers (quant_matmul_avx512_unpack.cpp); nullptr for types they lack.
IntUnpacker avx512_int_unpacker(uint32_t type);
FloatUnpacker avx512_float_unpacker(uint32_t type);
// The AVX-512 VNNI small-m product of the block types (quant_matmul_avx512_unpack.cpp).
bool avx512_small_product(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t c0,
                          int64_t n, float* y, int64_t ldy);

// Defined in the ISA files; their functions carry target attributes, so they compile in any build.
extern const KernelSet kAvx512Kernels;
extern const KernelSet kAvx2Kernels;

}  // namespace atlas::quant_matmul
