// ggml tensor types and their dequantization (ggml_types.h). Written from the block layouts of
// ggml-org/ggml src/ggml-common.h; the arithmetic keeps ggml's order of operations (scale the
// sub-block scale first, then multiply by the quant, then subtract the scaled minimum), so a
// value read here is bit-identical to llama.cpp's own dequantization.
#include "core/formats/ggml_types.h"

#include <bit>
#include <cstring>

#include "core/formats/safetensors.h"  // half_to_float, bf16_to_float

namespace atlas {

namespace {

struct TypeRow {
  uint32_t id;
  GgmlTypeInfo info;
};

// ggml's enum ggml_type; ids 4, 5, 31-33 and 36-38 were retired and are unknown here.
constexpr TypeRow kTypes[] = {
    {0, {"F32", 1, 4, true}},          {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", 32, 18, true}},       {3, {"Q4_1", 32, 20, true}},
    {6, {"Q5_0", 32, 22, true}},       {7, {"Q5_1", 32, 24, true}},
    {8, {"Q8_0", 32, 34, true}},       {9, {"Q8_1", 32, 36, false}},
    {10, {"Q2_K", 256, 84, false}},    {11, {"Q3_K", 256, 110, false}},
    {12, {"Q4_K", 256, 144, true}},    {13, {"Q5_K", 256, 176, true}},
    {14, {"Q6_K", 256, 210, true}},    {15, {"Q8_K", 256, 292, false}},
    {16, {"IQ2_XXS", 256, 66, false}}, {17, {"IQ2_XS", 256, 74, false}},
    {18, {"IQ3_XXS", 256, 98, false}}, {19, {"IQ1_S", 256, 50, false}},
    {20, {"IQ4_NL", 32, 18, false}},   {21, {"IQ3_S", 256, 110, false}},
    {22, {"IQ2_S", 256, 82, false}},   {23, {"IQ4_XS", 256, 136, false}},
    {24, {"I8", 1, 1, false}},         {25, {"I16", 1, 2, false}},
    {26, {"I32", 1, 4, false}},        {27, {"I64", 1, 8, false}},
    {28, {"F64", 1, 8, false}},        {29, {"IQ1_M", 256, 56, false}},
    {30, {"BF16", 1, 2, true}},        {34, {"TQ1_0", 256, 54, false}},
    {35, {"TQ2_0", 256, 66, false}},   {39, {"MXFP4", 32, 17, false}},
    {40, {"NVFP4", 64, 36, false}},    {41, {"Q1_0", 128, 18, false}},
    {42, {"Q2_0", 64, 18, false}},
};

using namespace ggml_type;  // F32, Q8_0, ... in the tables below

inline uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline float half_at(const uint8_t* p) { return half_to_float(le16(p)); }

void q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int i = 0; i < 32; ++i) y[i] = float(int8_t(b[2 + i])) * d;
}

void q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = float((qs[j] & 15) - 8) * d;
    y[j + 16] = float((qs[j] >> 4) - 8) * d;
  }
}

void q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = float(qs[j] & 15) * d + m;
    y[j + 16] = float(qs[j] >> 4) * d + m;
  }
}

// The fifth bits of Q5_0/Q5_1: one 32-bit little-endian word, bit j for value j.
inline uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

void q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint32_t high = le32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 15) | int((high >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | int((high >> (j + 16)) & 1) << 4;
    y[j] = float(lo - 16) * d;
    y[j + 16] = float(hi - 16) * d;
  }
}

void q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const uint32_t high = le32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 15) | int((high >> j) & 1) << 4;
    const int hi = (qs[j] >> 4) | int((high >> (j + 16)) & 1) << 4;
    y[j] = float(lo) * d + m;
    y[j + 16] = float(hi) * d + m;
  }
}

// Q4_K and Q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-blocks 0-3 use
// the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 take their low 4 bits
// from the nibbles of bytes 8-11 and their top 2 bits from the spare high bits of bytes 0-7.
void unpack_k_scales(const uint8_t* s, uint8_t scale[8], uint8_t min[8]) {
  for (int j = 0; j < 4; ++j) {
    scale[j] = s[j] & 63;
    min[j] = s[j + 4] & 63;
    scale[j + 4] = uint8_t((s[j + 8] & 15) | ((s[j] >> 6) << 4));
    min[j + 4] = uint8_t((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

// Sub-blocks 2c and 2c + 1 share the 32 bytes qs[32c..32c+31]: the even one the low nibbles,
// the odd one the high nibbles.
void q4_k(const uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  uint8_t scale[8], min[8];
  unpack_k_scales(b + 4, scale, min);
  const uint8_t* qs = b + 16;
  for (int s = 0; s < 8; ++s) {
    const float ds = d * float(scale[s]), ms = dmin * float(min[s]);
    const uint8_t* q = qs + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; ++l) y[32 * s + l] = ds * float((q[l] >> shift) & 15) - ms;
  }
}

void q5_k(const uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  uint8_t scale[8], min[8];
  unpack_k_scales(b + 4, scale, min);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int s = 0; s < 8; ++s) {
    const float ds = d * float(scale[s]), ms = dmin * float(min[s]);
    const uint8_t* q = qs + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; ++l) {
      const int v = ((q[l] >> shift) & 15) | (((qh[l] >> s) & 1) << 4);
      y[32 * s + l] = ds * float(v) - ms;
    }
  }
}

// Q6_K: each half of 128 values has 64 bytes of low nibbles and 32 bytes of 2-bit highs. Its
// four groups g of 32 values take the low (g = 0, 1) or high (g = 2, 3) nibbles of the first
// (g even) or second (g odd) 32 low bytes, and bits 2g, 2g + 1 of the high bytes.
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int h = 0; h < 2; ++h) {
    for (int g = 0; g < 4; ++g) {
      const uint8_t* lo = ql + 64 * h + 32 * (g % 2);
      const uint8_t* hi = qh + 32 * h;
      const int lo_shift = 4 * (g / 2), hi_shift = 2 * g;
      float* out = y + 128 * h + 32 * g;
      for (int l = 0; l < 32; ++l) {
        const int q = (((lo[l] >> lo_shift) & 15) | (((hi[l] >> hi_shift) & 3) << 4)) - 32;
        out[l] = d * float(sc[8 * h + 2 * g + l / 16]) * float(q);
      }
    }
  }
}

void f32(const uint8_t* b, float* y) {
  const uint32_t bits = le32(b);
  std::memcpy(y, &bits, 4);
}
void f16(const uint8_t* b, float* y) { *y = half_at(b); }
void bf16(const uint8_t* b, float* y) { *y = bf16_to_float(le16(b)); }

template <void (*Block)(const uint8_t*, float*)>
void each_block(const uint8_t* src, int64_t n_blocks, int64_t bytes, int64_t elems, float* dst) {
  // Real tensors are millions of blocks; tiny ones are not worth waking the thread pool for.
#pragma omp parallel for schedule(static) if (n_blocks * elems > 65536)
  for (int64_t i = 0; i < n_blocks; ++i) Block(src + i * bytes, dst + i * elems);
}

}  // namespace

GgmlTypeInfo ggml_type_info(uint32_t type) {
  for (const TypeRow& r : kTypes)
    if (r.id == type) return r.info;
  return {nullptr, 0, 0, false};
}

std::string ggml_supported_types() {
  std::string s;
  for (uint32_t id : {F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K})
    s += (s.empty() ? "" : ", ") + std::string(ggml_type_info(id).name);
  return s;
}

void dequantize_ggml(uint32_t type, const uint8_t* src, int64_t n_blocks, float* dst) {
  const GgmlTypeInfo t = ggml_type_info(type);
  const int64_t bytes = t.block_bytes, elems = t.block_elems;
  switch (type) {
    case F32:
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(dst, src, size_t(n_blocks) * 4);  // the common case: one copy
        return;
      }
      return each_block<f32>(src, n_blocks, bytes, elems, dst);
    case F16:
      return each_block<f16>(src, n_blocks, bytes, elems, dst);
    case BF16:
      return each_block<bf16>(src, n_blocks, bytes, elems, dst);
    case Q8_0:
      return each_block<q8_0>(src, n_blocks, bytes, elems, dst);
    case Q4_0:
      return each_block<q4_0>(src, n_blocks, bytes, elems, dst);
    case Q4_1:
      return each_block<q4_1>(src, n_blocks, bytes, elems, dst);
    case Q5_0:
      return each_block<q5_0>(src, n_blocks, bytes, elems, dst);
    case Q5_1:
      return each_block<q5_1>(src, n_blocks, bytes, elems, dst);
    case Q4_K:
      return each_block<q4_k>(src, n_blocks, bytes, elems, dst);
    case Q5_K:
      return each_block<q5_k>(src, n_blocks, bytes, elems, dst);
    case Q6_K:
      return each_block<q6_k>(src, n_blocks, bytes, elems, dst);
    default:
      break;  // unsupported types are refused by the caller
  }
}

}  // namespace atlas
