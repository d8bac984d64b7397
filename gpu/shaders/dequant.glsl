// Values of weights held in their file's encoding (ggml's block types, core/formats/ggml_types.h
// has the layouts), read from a storage buffer of uint words declared by the including shader
// as `wq`. Blocks are packed back to back (Q8_0's are 34 bytes), so they are addressed in
// bytes and the bytes are cut out of the little-endian words. The arithmetic keeps
// dequantize_ggml's order of operations, so a value is the CPU backend's to float rounding.
#ifndef ATLAS_DEQUANT_GLSL
#define ATLAS_DEQUANT_GLSL

// ggml type ids (ggml's enum ggml_type)
#define GGML_F16 1u
#define GGML_Q4_0 2u
#define GGML_Q4_1 3u
#define GGML_Q5_0 6u
#define GGML_Q5_1 7u
#define GGML_Q8_0 8u
#define GGML_Q4_K 12u
#define GGML_Q5_K 13u
#define GGML_Q6_K 14u
#define GGML_BF16 30u

uint wq_u8(uint a) { return (wq[a >> 2] >> (8u * (a & 3u))) & 255u; }
// 16-bit fields (scales, F16 values) start at even byte addresses: every block size is even.
uint wq_u16(uint a) { return (wq[a >> 2] >> (8u * (a & 2u))) & 65535u; }
// The fifth-bit words of Q5_0 / Q5_1 are 2-byte aligned only.
uint wq_u32(uint a) { return wq_u16(a) | (wq_u16(a + 2u) << 16); }
int wq_i8(uint a) { return int(wq_u8(a) << 24) >> 24; }
// IEEE half to float by its bits (subnormal scales too, whatever the device does with
// denormals: m 2^-24 is a normal float): exactly half_to_float of core/formats/safetensors.h.
float wq_half(uint a) {
  const uint h = wq_u16(a);
  const uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 0u) return uintBitsToFloat(sign | floatBitsToUint(float(m) * 5.9604644775390625e-8));
  return uintBitsToFloat(sign | ((e == 31u ? 255u : e + 112u) << 23) | (m << 13));
}

// The 6-bit scale (pick 0) or minimum (pick 4) of sub-block s of a Q4_K / Q5_K block whose 12
// scale bytes start at `sc`: sub-blocks 0-3 take the low 6 bits of bytes s (scales) and s + 4
// (mins); 4-7 the nibbles of byte s + 4 and the top two bits of bytes s - 4 and s.
uint k_scale(uint sc, uint s, uint pick) {
  if (s < 4u) return wq_u8(sc + s + pick) & 63u;
  const uint nib = (wq_u8(sc + s + 4u) >> pick) & 15u;
  return nib | ((wq_u8(sc + s - 4u + pick) >> 6) << 4);
}

// Value i of the block starting at byte `b`.
float dequant(uint type, uint b, uint i) {
  precise float v;
  if (type == GGML_F16) {
    v = wq_half(b);
  } else if (type == GGML_BF16) {
    v = uintBitsToFloat(wq_u16(b) << 16);
  } else if (type == GGML_Q8_0) {
    v = float(wq_i8(b + 2u + i)) * wq_half(b);
  } else if (type <= GGML_Q5_1) {  // the 32-value types with nibbles: value j < 16 is the low
    // nibble of byte j, value j + 16 its high nibble; bit i of the high word is its fifth bit
    const bool has_min = type == GGML_Q4_1 || type == GGML_Q5_1;
    const bool five = type == GGML_Q5_0 || type == GGML_Q5_1;
    const uint qs = b + (has_min ? 4u : 2u) + (five ? 4u : 0u);
    uint q = (wq_u8(qs + (i & 15u)) >> (i < 16u ? 0u : 4u)) & 15u;
    if (five) q |= ((wq_u32(b + (has_min ? 4u : 2u)) >> i) & 1u) << 4;
    const float d = wq_half(b);
    if (has_min)
      v = float(q) * d + wq_half(b + 2u);
    else
      v = float(int(q) - (five ? 16 : 8)) * d;
  } else if (type == GGML_Q4_K || type == GGML_Q5_K) {
    // sub-block s = i / 32: d sc[s] q - dmin mn[s]; sub-blocks 2c, 2c + 1 share 32 bytes of
    // nibbles (low, high); Q5_K's fifth bit of value l of sub-block s is bit s of qh[l]
    const uint s = i >> 5, l = i & 31u;
    const float ds = wq_half(b) * float(k_scale(b + 4u, s, 0u));
    const float ms = wq_half(b + 2u) * float(k_scale(b + 4u, s, 4u));
    const bool five = type == GGML_Q5_K;
    const uint qs = b + (five ? 48u : 16u) + 32u * (s >> 1);
    uint q = (wq_u8(qs + l) >> (4u * (s & 1u))) & 15u;
    if (five) q |= ((wq_u8(b + 16u + l) >> s) & 1u) << 4;
    v = ds * float(q) - ms;
  } else {  // GGML_Q6_K: halves h of 128 values, groups g of 32 (see ggml_types.cpp)
    const uint h = i >> 7, g = (i >> 5) & 3u, l = i & 31u;
    const uint lo = (wq_u8(b + 64u * h + 32u * (g & 1u) + l) >> (4u * (g >> 1))) & 15u;
    const uint hi = (wq_u8(b + 128u + 32u * h + l) >> (2u * g)) & 3u;
    const float ds = wq_half(b + 208u) * float(wq_i8(b + 192u + 8u * h + 2u * g + (l >> 4)));
    v = ds * float(int(lo | (hi << 4)) - 32);
  }
  return v;
}

#endif
