#pragma once
// ggml's tensor types as stored in GGUF files: blocks of `block_elems` values packed into
// `block_bytes` bytes (ggml-org/ggml src/ggml-common.h), and their conversion to float32.
// Layouts of the types read here (all little-endian, float16 scales):
//   F32, F16, BF16       one value per "block"
//   Q8_0  32 values: d, int8 q[32]                      x = d q
//   Q4_0  32 values: d, 16 bytes of nibbles              x = d (q - 8)
//   Q4_1  32 values: d, m, 16 bytes of nibbles           x = d q + m
//   Q5_0  32 values: d, 32 high bits, 16 bytes nibbles   x = d (q - 16)
//   Q5_1  32 values: d, m, 32 high bits, 16 bytes        x = d q + m
//     (value j < 16 is the low nibble of byte j, value j + 16 its high nibble; bit j of the
//      high-bit word is value j's fifth bit)
//   Q4_K  256 values: d, dmin, 12 bytes of eight 6-bit (scale, min) pairs, 128 bytes nibbles;
//         sub-block s (32 values) = d sc[s] q - dmin mn[s]
//   Q5_K  like Q4_K plus 32 bytes of fifth bits (bit s of byte l: sub-block s, value l)
//   Q6_K  256 values: 128 bytes low nibbles, 64 bytes of 2-bit highs, int8 sc[16], d;
//         value e = d sc[e / 16] (q - 32)
#include <cstdint>
#include <string>

namespace atlas {

// ggml's type ids of the types the engine reads (ggml's enum ggml_type).
namespace ggml_type {
enum : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q4_K = 12, Q5_K = 13, Q6_K = 14, BF16 = 30
};
// One value per "block": products with them take float32 activations.
inline bool is_float(uint32_t type) { return type == F32 || type == F16 || type == BF16; }
}  // namespace ggml_type

struct GgmlTypeInfo {
  const char* name;     // "Q4_K"; nullptr for an id ggml does not define (or has retired)
  int64_t block_elems;  // values per block
  int64_t block_bytes;  // bytes per block
  bool supported;       // dequantize_ggml reads it
};

GgmlTypeInfo ggml_type_info(uint32_t type);
std::string ggml_supported_types();  // "F32, F16, BF16, Q8_0, ..."

// Converts `n_blocks` whole blocks of a supported type at `src` into `dst` (n_blocks *
// block_elems floats), in parallel over blocks. The caller has checked the type is supported
// and that the bytes exist.
void dequantize_ggml(uint32_t type, const uint8_t* src, int64_t n_blocks, float* dst);

}  // namespace atlas
